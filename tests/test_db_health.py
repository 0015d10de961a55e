"""A damaged database is refused by the commands that report from it, and a database that cannot
be created or written is one clear line (issue 20, items 8 and 15).

Real files throughout: a database whose pages are overwritten on disk, a folder that takes no
files (``/proc``), a process whose file size limit (``ulimit -f``) fills up mid-write.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main
from storage import Store
from storage.health import damage, file_identity
from tests.triage_data import make_case, save_runs

ROOT = Path(__file__).resolve().parents[1]


def damaged_db(tmp_path: Path, btree: str = "sqlite_autoindex_cases_1") -> Path:
    """A database of 2,000 cases with one leaf page of ``btree`` overwritten with zeros, as a
    bad sector or a torn copy leaves it. Damage to the cases' key index goes unnoticed by every
    query a report makes: before the fix, `report` and `export` printed their numbers, exit 0."""
    db = tmp_path / "damaged.db"
    store = Store(db)
    save_runs(
        store,
        [
            make_case(f"case-{i:04d}", index=i, source_text=f"Review {i}: " + "words " * 40)
            for i in range(2000)
        ],
    )
    store.close()
    with sqlite3.connect(db) as conn:
        try:
            pages = [
                row[0]
                for row in conn.execute(
                    "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' "
                    "ORDER BY pageno",
                    [btree],
                )
            ]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find a page with")
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    assert pages, btree
    with db.open("r+b") as handle:
        handle.seek((pages[len(pages) // 2] - 1) * page_size)
        handle.write(bytes(page_size))
    return db


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------- a damaged database


@pytest.mark.parametrize("btree", ["sqlite_autoindex_cases_1", "cases"])
@pytest.mark.parametrize(
    "command",
    [
        ["report"],
        ["report", "--json"],
        ["export", "--format", "html"],
        ["export", "--format", "csv"],
    ],
    ids=["report", "report-json", "export-html", "export-csv"],
)
def test_report_and_export_refuse_a_damaged_database(tmp_path, capsys, command, btree):
    db = damaged_db(tmp_path, btree)
    out_file = tmp_path / "out.file"
    args = [*command, "--db", str(db)]
    if command[0] == "export":
        args += ["--out", str(out_file)]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    line = one_error_line(err)
    assert f"database {db} is damaged (" in line
    assert f"restore a copy or run `sqlite3 {db} .recover`" in line
    assert not out_file.exists()


def test_quick_check_passes_a_sound_database_and_names_the_damage(tmp_path):
    sound = tmp_path / "sound.db"
    for path, damaged in ((sound, False), (damaged_db(tmp_path), True)):
        if not damaged:
            Store(path).close()
        store = Store(path)
        try:
            finding = damage(store)
        finally:
            store.close()
        assert bool(finding) is damaged, finding


def test_file_identity_changes_with_the_file_not_with_a_lookup(tmp_path):
    db = tmp_path / "id.db"
    assert file_identity(db) is None
    Store(db).close()
    first = file_identity(db)
    assert first is not None and file_identity(db) == first


# ---------------------------------------------------------------- cannot create, cannot write


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("command", ["relations", "run"])
def test_a_database_in_a_folder_that_takes_no_files_is_one_clear_line(tmp_path, capsys, command):
    """Before: `error: OperationalError: unable to open database file`."""
    args = ["relations", "--db", "/proc/x.db"]
    if command == "run":
        inputs = tmp_path / "in.jsonl"
        inputs.write_text('{"text": "good"}\n')
        args = [
            "run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "sentiment",
            "--relations", "si.identity", "--inputs", str(inputs), "--db", "/proc/x.db",
        ]  # fmt: skip
    assert main(args) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "cannot create the database /proc/x.db: /proc does not take new files" in line
    assert "OperationalError" not in line


def _limit_file_size(limit_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return apply


def test_a_disk_that_fills_while_a_command_writes_is_one_clear_line(tmp_path):
    """`import` of 2,000 LLMorph items into a database under a 1 MB file size limit (what a full
    disk looks like to SQLite). Before: `error: OperationalError: disk I/O error`."""
    db = tmp_path / "full.db"
    Store(db).close()
    items = [
        {
            "source_input": f"The food was good {i}. " + "x" * 2000,
            "source_output": "positive",
            "followup_inputs": [f"The food was good {i}! " + "y" * 2000],
            "followup_outputs": ["positive"],
            "relations": [True],
        }
        for i in range(2000)
    ]
    log = tmp_path / "log.json"
    log.write_text(
        json.dumps(
            {"llm_name": "m", "task_name": "sentiment", "relation_name": "si.identity",
             "data": items}
        )
    )  # fmt: skip
    env = {**os.environ, "MORPHSCOPE_AUTOSTART": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "app", "import", "--db", str(db), "--format", "llmorph", str(log)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(1_000_000),
    )
    assert result.returncode == 2, result.stderr
    line = one_error_line(result.stderr)
    assert line.startswith("error: the disk is full: ") and "ulimit -f" in line
    assert "OperationalError" not in line
    assert Store(db).runs() == []  # the import is all or nothing


# ---------------------------------------------------------------- a newer version's database


def test_a_newer_versions_database_exits_2_in_report_as_in_run(tmp_path, capsys):
    from tests.test_bad_inputs import newer_schema_db

    db = newer_schema_db(tmp_path)
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"text": "good"}\n')
    commands = {
        "run": ["run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task",
                "sentiment", "--relations", "si.identity", "--inputs", str(inputs)],
        "report": ["report"],
        "export": ["export", "--format", "html", "--out", str(tmp_path / "r.html")],
    }  # fmt: skip
    lines = {}
    for name, args in commands.items():
        assert main([*args, "--db", str(db)]) == 2, name
        lines[name] = one_error_line(capsys.readouterr().err)
    assert len(set(lines.values())) == 1, lines
    assert "written by a newer version of Morphscope" in lines["report"]
