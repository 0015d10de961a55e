"""Bad input never gives a traceback: one line on stderr, exit code 2, and nothing written.

Each case drives ``python -m app`` (``app.cli.main.main`` in-process; one subprocess check at the end)
with one of the inputs a new user really tried, and pins the message's gist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cli.main import main
from storage import Store, StoreOpenError

KEY = "sk-proj-Abc123def456ghi789jkl"


def existing_db(tmp_path: Path) -> Path:
    db = tmp_path / "existing.db"
    Store(db).close()
    return db


def newer_schema_db(tmp_path: Path) -> Path:
    """A database whose migrations table names a migration this version does not know."""
    db = existing_db(tmp_path)
    store = Store(db)
    with store._write():
        store._db.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            "VALUES ('morphscope', 'm999_from_the_future', '2030-01-01')"
        )
    store.close()
    return db


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def corrupt_zip(tmp_path: Path) -> Path:
    path = tmp_path / "logs.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("log__m__sentiment__1.json", json.dumps({"data": ["x" * 999] * 50}))
    data = bytearray(path.read_bytes())
    data[60:200] = bytes(140)  # damage the compressed stream, keep the directory
    path.write_bytes(bytes(data))
    return path


def inputs(tmp_path: Path) -> Path:
    return write(tmp_path / "in.jsonl", '{"text": "The food was good."}\n')


NESTED = "[" * 100_000 + "]" * 100_000


def run_args(tmp_path: Path, *extra: str, endpoint: str = "http://127.0.0.1:9/v1") -> list[str]:
    """A `run` that would be fine but for ``extra`` (the port 9 endpoint is never reached)."""
    args = ["run", "--endpoint", endpoint, "--model", "m", "--task", "sentiment"]
    args += ["--relations", "si.identity", "--db", str(tmp_path / "new.db")]
    if "--inputs" not in extra:
        args += ["--inputs", str(inputs(tmp_path))]
    return args + list(extra)


@dataclass(frozen=True)
class BadInput:
    name: str
    args: Callable[[Path], list[str]]
    message: str  # a fragment of the one-line message


CASES = [
    BadInput(
        "db that is not SQLite",
        lambda t: ["report", "--db", str(write(t / "notes.db", "not a database, just text"))],
        "is not a SQLite database",
    ),
    BadInput(
        "db path is a directory",
        lambda t: ["report", "--db", str(t)],
        "is a directory, not a database file",
    ),
    BadInput(
        "report on a missing db creates nothing",
        lambda t: ["report", "--db", str(t / "missing" / "none.db")],
        "no such database",
    ),
    BadInput(
        "db from a newer schema version",
        lambda t: ["report", "--db", str(newer_schema_db(t))],
        "written by a newer version of Morphscope",
    ),
    BadInput(
        "inputs is a directory",
        lambda t: run_args(t, "--inputs", str(t)),
        "is a directory, not a file",
    ),
    BadInput(
        "5,000-digit integer in JSONL",
        lambda t: run_args(
            t, "--inputs", str(write(t / "big.jsonl", '{"text": %s}' % ("9" * 5000)))
        ),
        "line 1: a value cannot be read",
    ),
    BadInput(
        "deeply nested JSON inputs",
        lambda t: run_args(t, "--inputs", str(write(t / "deep.json", NESTED))),
        "nested too deeply",
    ),
    BadInput(
        "base URL with a broken IPv6 host",
        lambda t: run_args(t, endpoint="http://[::1/v1"),
        "Invalid IPv6 URL",
    ),
    BadInput(
        "base URL with port 99999",
        lambda t: run_args(t, endpoint="http://localhost:99999/v1"),
        "Port out of range",
    ),
    BadInput(
        "base URL with an empty port",
        lambda t: run_args(t, endpoint="http://localhost:/v1"),
        "empty port",
    ),
    BadInput("--temperature nan", lambda t: run_args(t, "--temperature", "nan"), "--temperature"),
    BadInput("--max-tokens -5", lambda t: run_args(t, "--max-tokens", "-5"), "--max-tokens"),
    BadInput(
        "--api-key-env given a key",
        lambda t: run_args(t, "--api-key-env", KEY),
        "NAME of an environment variable",
    ),
    BadInput(
        "export to an unwritable place",
        lambda t: [
            "export",
            "--db",
            str(existing_db(t)),
            "--format",
            "csv",
            "--out",
            str(write(t / "a-file", "") / "out.csv"),
        ],
        "cannot write",
    ),
    BadInput(
        "export to a too-long file name",
        lambda t: [
            "export",
            "--db",
            str(existing_db(t)),
            "--format",
            "jsonl",
            "--out",
            str(t / ("x" * 300 + ".jsonl")),
        ],
        "cannot write",
    ),
    BadInput(
        "corrupt zip",
        lambda t: [
            "import",
            "--db",
            str(existing_db(t)),
            "--format",
            "llmorph",
            str(corrupt_zip(t)),
        ],
        "zip archive is damaged",
    ),
    BadInput(
        "deeply nested LLMorph JSON",
        lambda t: [
            "import",
            "--db",
            str(existing_db(t)),
            "--format",
            "llmorph",
            str(write(t / "deep.json", NESTED)),
        ],
        "nested too deeply",
    ),
    BadInput(
        "deeply nested relations file",
        lambda t: [
            "relations",
            "import",
            str(write(t / "deep.json", NESTED)),
            "--db",
            str(t / "r.db"),
        ],
        "nested too deeply",
    ),
]


def snapshot(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` with its size; a preexisting database's -wal/-shm files come
    and go with connections, so they are left out."""
    return {
        str(p.relative_to(folder)): p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_is_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    args = case.args(tmp_path)
    before = snapshot(tmp_path)
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and case.message in lines[0], lines[0]
    assert "Traceback" not in err
    assert KEY not in err
    assert snapshot(tmp_path) == before


def test_newer_schema_is_refused_before_any_call(tmp_path, capsys, fake_server):
    """A run on a database from a newer version stops before it sends a single call."""
    db = newer_schema_db(tmp_path)
    args = run_args(tmp_path, endpoint=fake_server.base_url)
    args[args.index("--db") + 1] = str(db)
    args[args.index("--model") + 1] = "fake-model"
    assert main(args) == 2
    assert "newer version" in capsys.readouterr().err
    assert fake_server.stats.chat_calls == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write read-only files")
def test_read_only_db_is_refused(tmp_path, capsys):
    db = existing_db(tmp_path)
    db.chmod(0o444)
    try:
        assert main(["report", "--db", str(db)]) == 2
        assert "is read-only" in capsys.readouterr().err
    finally:
        db.chmod(0o644)


def test_store_refuses_bad_paths_with_one_line_errors(tmp_path):
    with pytest.raises(StoreOpenError, match="is a directory"):
        Store(tmp_path)
    with pytest.raises(StoreOpenError, match="not a SQLite database"):
        Store(write(tmp_path / "text.db", "hello"))


def test_db_name_with_hash_and_question_mark_opens_that_file(tmp_path):
    """A ``file:`` URI cuts a name at '#' or '?': the read-only reader of ``a#b?c.db`` used to
    open (and create) ``a`` instead. Escaped, it reads the right file and makes no stray files."""
    db = tmp_path / "runs#1?x.db"
    store = Store(db)
    reader = Store(db, read_only=True)
    try:
        assert reader._query("SELECT count(*) AS n FROM _sqlite_migrations")[0]["n"] >= 1
    finally:
        reader.close()
        store.close()
    names = {p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))}
    assert names == {db.name}


def test_relations_import_then_transform_catastrophic_regex_within_2_s(tmp_path):
    """The issue's must-show, through real processes: `(a+)+$` imported with `relations import`,
    then `transform custom.ID --text 'aaa…ab'` answers within 2 s (a SKIP with its reason)."""
    db = tmp_path / "rel.db"
    spec = {
        "id": "custom.nested_plus",
        "name": "nested plus",
        "kind": "regex",
        "rules": [{"find": "(a+)+$", "replace": "x"}],
        "expectation": "equivalent",
    }
    file = write(tmp_path / "rel.json", json.dumps({"relations": [spec]}))
    cli = [sys.executable, "-m", "app"]
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    imported = subprocess.run(
        [*cli, "relations", "import", str(file), "--db", str(db)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert "custom.nested_plus" in imported.stdout
    started = time.monotonic()
    transformed = subprocess.run(
        [*cli, "transform", "custom.nested_plus", "--text", "a" * 30 + "b", "--db", str(db)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert transformed.returncode == 3 and transformed.stderr.startswith("SKIP: ")
    assert "Traceback" not in transformed.stderr
    # Generous: the process itself takes about a second to import; the regex is bounded to 1 s.
    assert time.monotonic() - started < 30


def test_relations_import_refuses_catastrophic_regex(tmp_path, capsys):
    spec = {
        "id": "custom.slow",
        "name": "slow",
        "kind": "regex",
        "rules": [{"find": "(a|aa)+$", "replace": "x"}],
        "expectation": "equivalent",
    }
    file = write(tmp_path / "rel.json", json.dumps([spec]))
    assert main(["relations", "import", str(file), "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert "backtracks catastrophically" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists()


def test_relations_listing_still_works(tmp_path, capsys):
    assert main(["relations", "--task", "sentiment", "--db", str(tmp_path / "l.db")]) == 0
    assert "si.identity" in capsys.readouterr().out


class RawBodyServer:
    """Answers every GET with ``models_body`` and every POST with ``chat_body`` (HTTP 200)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.models_body, self.chat_body = b"{}", b"{}"
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(owner.models_body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._send(owner.chat_body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"


@pytest.fixture(scope="module")
def raw_server():
    server = RawBodyServer()
    yield server
    server.server.shutdown()


@pytest.mark.parametrize(
    ("models_body", "chat_body", "message"),
    [
        (b'{"data": [', b"{}", "the models list is not valid JSON"),
        (b"[1, 2]", b"{}", "the models list has an unexpected shape"),
        (b'{"data": [{"id": "m"}]}', b'{"choices": ', "the body is not valid JSON"),
        (b'{"data": [{"nope": 1}]}', b"{}", "no choices"),
    ],
)
def test_connection_test_reports_malformed_bodies(raw_server, models_body, chat_body, message):
    """Test connection against bodies that are not OpenAI JSON: a failed report with a readable
    message, never an exception (a truncated chat body and a model without an id used to raise)."""
    from app.clients.connection import test_connection
    from core.types import Endpoint

    raw_server.models_body, raw_server.chat_body = models_body, chat_body
    report = test_connection(Endpoint(name="raw", base_url=raw_server.base_url, model="m"))
    assert not report.ok
    assert message in report.message
    assert "\n" not in report.message


@pytest.mark.parametrize(
    ("models_body", "expected"),
    [
        (b'{"data": [{"id": "b"}, {"id": "a"}, {"nope": 1}, "x", {"id": ""}]}', ("a", "b")),
        (b'{"object": "list", "data": []}', ()),
        (b'{"data": "many"}', TypeError),
        (b"[1, 2]", TypeError),
        (b'{"data": [', ValueError),
    ],
)
def test_list_models_reads_only_well_formed_ids(raw_server, models_body, expected):
    """The lean models list (connection test, pre-flight): sorted ids, entries without one
    left out; a body that is not JSON is a ValueError, JSON of another shape a TypeError."""
    import asyncio

    from app.clients.openai_compatible import list_models
    from core.types import Endpoint

    raw_server.models_body = models_body
    endpoint = Endpoint(name="raw", base_url=raw_server.base_url, model="m")
    if isinstance(expected, tuple):
        assert asyncio.run(list_models(endpoint, 5.0)) == expected
    else:
        with pytest.raises(expected):
            asyncio.run(list_models(endpoint, 5.0))


# ---------------------------------------------------------------- LLMorph import: all or nothing


def llmorph_log(morphscope: dict) -> dict:
    item = {
        "source_input": "The food was good.",
        "source_output": "positive",
        "followup_inputs": ["The food was good!"],
        "followup_outputs": ["positive"],
        "relations": [True],
        "morphscope": morphscope,
    }
    good = {**item, "morphscope": {"value": 0.25}}
    return {"llm_name": "m", "task_name": "sentiment", "relation_name": "si.identity",
            "data": [good, item]}  # fmt: skip


@pytest.mark.parametrize(
    ("morphscope", "message"),
    [
        ({"value": "abc"}, "item 1.morphscope.value: expected a number"),
        ({"value": True}, "expected a number"),
        ({"delta": float("inf")}, "expected a finite number"),
        ({"followup_index": -1}, "expected a whole number"),
        ({"repeat_index": 1.5}, "expected a whole number"),
        ({"oracle": ["list"]}, "expected text"),
        ({"verdict": "MAYBE"}, "expected one of PASS"),
    ],
)
def test_llmorph_import_checks_every_field_and_writes_nothing(store, tmp_path, morphscope, message):
    """Pins: a log whose second item has text in a numeric field (or any other badly typed
    field) is refused as a whole with the item named; the first, valid item is not stored
    either. Before, `value: "abc"` was committed and Triage, Analysis and the HTML export
    crashed on it afterwards."""
    from app.reports.llmorph import import_llmorph

    path = write(tmp_path / "log.json", json.dumps(llmorph_log(morphscope)))
    with pytest.raises(ValueError, match=message):
        import_llmorph(store, path)
    assert store.runs() == []


def test_llmorph_import_keeps_valid_morphscope_fields(store, tmp_path):
    from app.reports.llmorph import import_llmorph

    path = write(tmp_path / "log.json", json.dumps(llmorph_log({"value": 2, "oracle": "exact"})))
    run_id = import_llmorph(store, path)
    values = sorted((c.value is None, c.oracle) for c in store.cases_for([run_id]))
    assert values == [(False, "exact"), (False, "llmorph")]


# ---------------------------------------------------------------- label import


@pytest.fixture
def label_store():
    from tests.triage_data import make_case, save_runs

    store = Store(":memory:")
    save_runs(store, [make_case("fail"), make_case("pass", index=1, verdict="PASS", value=0.9)])
    yield store
    store.close()


def label_line(case_id: str = "fail", created_at: str = "2026-01-01T00:00:00+00:00", **extra):
    row = {"case_id": case_id, "label": "confirmed", "labeler": "ann", "created_at": created_at}
    return json.dumps({**row, **extra}) + "\n"


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        (label_line("pass"), "jsonl", "case pass is PASS, not FAIL"),
        (label_line(created_at="9999-12-31T23:59:59-01:00"), "jsonl", "is out of range"),
        ("[" * 100_000 + "]" * 100_000 + "\n", "jsonl", "nested too deeply"),
        ('{"case_id": %s}\n' % ("1" * 5000), "jsonl", "a value cannot be read"),
        (
            "case_id,label,note\nfail,confirmed," + "x" * 200_000 + "\n",
            "csv",
            "the CSV cannot be read",
        ),
    ],
)
def test_label_import_refuses_with_a_message_and_writes_nothing(label_store, text, fmt, message):
    """Pins: a label on a PASS case, a time past the end of the calendar in UTC, deeply nested
    JSON, a 5,000-digit number and a CSV field over the csv module's limit are each refused
    as a whole with a message (before, most raised an exception out of the page)."""
    from app.analysis.triage.label_exchange import LabelImportError, import_labels

    good = label_line() if fmt == "jsonl" else ""
    with pytest.raises(LabelImportError) as caught:
        import_labels(label_store, good + text, fmt)
    assert message in str(caught.value)
    assert label_store.all_labels() == []


def test_label_on_a_fail_case_still_imports(label_store):
    from app.analysis.triage.label_exchange import import_labels

    assert import_labels(label_store, label_line(), "jsonl")["added"] == 1


def test_read_only_db_is_refused_even_as_root(tmp_path, capsys, monkeypatch):
    """The same check with write access denied by the OS (root ignores chmod, so the access
    check is simulated): a read-only database or folder is one line, not a traceback."""
    import storage.database_file as database_file

    db = existing_db(tmp_path)
    monkeypatch.setattr(database_file.os, "access", lambda path, mode: False)
    assert main(["report", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "is read-only" in err and len(err.strip().splitlines()) == 1
    assert main(["relations", "--db", str(tmp_path / "new" / "x.db")]) == 2
    assert "is read-only" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_a_page_on_a_database_that_cannot_be_opened_shows_a_message(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MORPHSCOPE_DB", str(write(tmp_path / "notes.db", "plain text")))
    app = str(Path(__file__).resolve().parents[1] / "streamlit_app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    assert not at.exception
    assert any("is not a SQLite database" in error.value for error in at.error)


def test_llmorph_header_names_must_be_text(store, tmp_path):
    from app.reports.llmorph import import_llmorph

    log = {**llmorph_log({}), "llm_name": {"nested": "object"}}
    with pytest.raises(ValueError, match=r"model \(llm_name\) must be text, not dict"):
        import_llmorph(store, write(tmp_path / "log.json", json.dumps(log)))
    assert store.runs() == []


# ---------------------------------------------------------------- issue 20, items 9–13: --inputs
# A file that cannot be read as the user meant it is refused before anything is planned or
# sent: one line that names the line (and field), exit 2, and no database left behind.

MIXED_ENCODING = b'{"text": "Caf\xc3\xa9 OK"}\n{"text": "Caf\xe9 in cp1252"}\n{"text": "Fine."}\n'


def sparse_file(path: Path, megabytes: int) -> Path:
    """A file of that size that takes no disk space (nothing is written into it)."""
    with path.open("wb") as file:
        file.truncate(megabytes * 1024 * 1024)
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def batch_export_args(tmp_path: Path, inputs_path: Path) -> list[str]:
    args = ["batch", "export", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"]
    args += ["--task", "sentiment", "--relations", "si.identity", "--inputs", str(inputs_path)]
    return [*args, "--db", str(tmp_path / "new.db"), "--out", str(tmp_path / "requests.jsonl")]


INPUT_FILE_CASES = [
    BadInput(
        "a lone surrogate in a JSONL line",
        lambda t: run_args(
            t, "--inputs", str(write(t / "s.jsonl", '{"text": "ok"}\n{"text": "half \\ud800"}\n'))
        ),
        "line 2: the value of 'text' holds a lone surrogate (U+D800",
    ),
    BadInput(
        "a lone surrogate, batch export",
        lambda t: batch_export_args(t, write(t / "s.jsonl", '{"text": "half \\udfff"}\n')),
        "line 1: the value of 'text' holds a lone surrogate (U+DFFF",
    ),
    BadInput(
        "a JSON-escaped NUL in a value",
        lambda t: run_args(t, "--inputs", str(write(t / "n.jsonl", '{"text": "a\\u0000b"}\n'))),
        "line 1: the value of 'text' holds a control character (U+0000)",
    ),
    BadInput(
        "a file above the default 500 MB limit",
        lambda t: run_args(t, "--inputs", str(sparse_file(t / "huge.jsonl", 501))),
        "huge.jsonl is 501.0 MB; the limit for an inputs file is 500 MB",
    ),
    BadInput(
        "a file above --max-input-mb",
        lambda t: run_args(
            t,
            "--max-input-mb",
            "1",
            "--inputs",
            str(write(t / "big.jsonl", '{"text": "The food was good."}\n' * 40_000)),
        ),
        "big.jsonl is 1.2 MB; the limit for an inputs file is 1 MB",
    ),
    BadInput(
        "--max-input-mb 0",
        lambda t: run_args(t, "--max-input-mb", "0"),
        "--max-input-mb must be a number above 0",
    ),
    BadInput(
        "one cp1252 line among UTF-8 lines",
        lambda t: run_args(t, "--inputs", str(write(t / "mixed.jsonl", MIXED_ENCODING))),
        "the file mixes encodings: line 2 is not UTF-8",
    ),
    BadInput(
        "--encoding that does not fit a line",
        lambda t: run_args(
            t, "--encoding", "ascii", "--inputs", str(write(t / "m.jsonl", MIXED_ENCODING))
        ),
        "line 1 is not valid ascii",
    ),
    BadInput(
        "--encoding that does not exist",
        lambda t: run_args(t, "--encoding", "utf-9"),
        "--encoding 'utf-9': unknown encoding",
    ),
    BadInput(
        "a JSON object as the text",
        lambda t: run_args(t, "--inputs", str(write(t / "o.jsonl", '{"text": {"a": 1}}\n'))),
        "line 1: the field 'text' is a JSON object",
    ),
    BadInput(
        "a JSON array as the text, after a blank line",
        lambda t: run_args(
            t, "--inputs", str(write(t / "a.jsonl", '{"text": "ok"}\n\n{"text": ["a"]}\n'))
        ),
        "line 3: the field 'text' is a JSON array",
    ),
    BadInput(
        "a JSONL line naming 'text' twice",
        lambda t: run_args(
            t, "--inputs", str(write(t / "d.jsonl", '{"text": "kept?", "text": "or this?"}\n'))
        ),
        "line 1: the key 'text' appears twice in one object",
    ),
    BadInput(
        "a CSV with two text columns",
        lambda t: run_args(
            t, "--inputs", str(write(t / "two.csv", "text,label,text\nGood.,positive,Bad.\n"))
        ),
        "line 1: the header names the column 'text' 2 times (columns 1 and 3)",
    ),
    BadInput(
        "an escape character in a UTF-8 CSV",
        lambda t: run_args(
            t, "--inputs", str(write(t / "nul.csv", b"text\nGood.\nBad \x1b[31m.\n"))
        ),
        "line 3 holds a control character (U+001B)",
    ),
]


@pytest.mark.parametrize("case", INPUT_FILE_CASES, ids=[case.name for case in INPUT_FILE_CASES])
def test_bad_inputs_file_is_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    test_bad_input_is_one_line_exit_2_nothing_written(case, tmp_path, capsys)
    assert not (tmp_path / "new.db").exists()


def test_lone_surrogate_is_refused_before_any_call_and_no_database_is_left(
    tmp_path, capsys, fake_server
):
    """Issue 20, item 9: a JSONL line with "\\ud800" ran, then failed writing it with a
    UnicodeEncodeError traceback (exit 1) and left an empty database behind."""
    surrogate = write(tmp_path / "in.jsonl", '{"text": "Good."}\n{"text": "bad \\ud800"}\n')
    args = run_args(tmp_path, "--inputs", str(surrogate), endpoint=fake_server.base_url)
    args[args.index("--model") + 1] = "fake-model"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "in.jsonl: line 2" in err and "lone surrogate" in err
    assert fake_server.stats.chat_calls == 0
    assert not (tmp_path / "new.db").exists()


def _cli_process(args: list[str], tmp_path: Path, **limits) -> subprocess.CompletedProcess:
    """`python -m app ARGS` in a process of its own, with at most 2 GB of address space (so the
    old reader's MemoryError comes in seconds, not after the machine's whole memory)."""
    import resource

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    env = {**os.environ, "PYTHONPATH": str(Path.cwd()), "MORPHSCOPE_DB": str(tmp_path / "x.db")}
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True, text=True, env=env, preexec_fn=limit_memory, **limits,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (
            lambda t: run_args(t, "--inputs", "/dev/zero"),
            "/dev/zero is a character device, not a regular file",
        ),
        (
            lambda t: run_args(t, "--inputs", str(fifo(t / "pipe.jsonl"))),
            "pipe.jsonl is a named pipe (FIFO), not a regular file",
        ),
        (
            lambda t: batch_export_args(t, fifo(t / "pipe.jsonl")),
            "pipe.jsonl is a named pipe (FIFO), not a regular file",
        ),
        (
            lambda t: ["relations", "import", str(fifo(t / "r.json")), "--db", str(t / "new.db")],
            "r.json: not a regular file",
        ),
    ],
    ids=["run /dev/zero", "run a FIFO", "batch export a FIFO", "relations import a FIFO"],
)
def test_inputs_that_never_end_are_refused_at_once(tmp_path, make_args, message):
    """Issue 20, items 10 and 11, as a user meets them: `--inputs /dev/zero` read until a
    MemoryError, and a FIFO blocked `run` forever. Both are refused at once, before a database
    is created."""
    args = make_args(tmp_path)
    try:
        done = _cli_process(args, tmp_path, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("`run` still blocked on the inputs after 60 s")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "new.db").exists()
