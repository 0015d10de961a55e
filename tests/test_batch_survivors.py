"""Batch export and import: what the user reads and what the store keeps, pinned by content.

Written for the mutants of ``make mutation``'s ``batch`` group that the end-to-end tests of
tests/test_batch.py let through (issue 21): each message is checked whole, with the file, the
line numbers and "nothing was imported"/"nothing was stored" in it, and each import's per-run
status both in its outcome and in the database.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.batch.export import (
    CALLS,
    REWRITES,
    BatchExportError,
    _store_export,
    _write_requests,
    as_batch,
    export_batch,
    judge_from_cache,
)
from app.batch.formats import ParsedResults, ResultLine
from app.batch.importer import BatchImport, BatchImportError, _refuse_conflicts, import_results
from core.engine_version import ENGINE_VERSION
from core.identity import call_key
from core.run_config import DEFAULT_REWRITE_CANDIDATES, RunConfig
from core.types import BATCH_KIND, CallRequest, Endpoint
from storage import Store
from storage.batch_verbs import BATCH_RUN_STATES
from tests.fake_openai import batch_error_line, batch_output_line, chat_body
from tests.test_batch import (
    ENDPOINT,
    SAMPLES,
    SENTIMENT,
    _case_rows,
    _exported_add_good,
    answer_file,
    runner_factory,
)

ADD_GOOD = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
REWRITER = Endpoint(name="rw", base_url="http://127.0.0.1:9/v1", model="rewriter")


def _keys(path: Path) -> list[str]:
    """The ``custom_id`` of each line of a request or result file, in order."""
    return [json.loads(line)["custom_id"] for line in path.read_text().splitlines()]


def _import(store: Store, *sources):
    return import_results(store, list(sources), runner_factory=runner_factory)


def _errors(store: Store, run_id: str) -> int:
    return sum(row["verdict"] == "ERROR" for row in _case_rows(store, run_id))


def _refused(store: Store, sources, **kwargs) -> str:
    """The one-line message of a refused import (and nothing of it was stored)."""
    calls = store.count_calls()
    with pytest.raises(BatchImportError) as refused:
        import_results(store, sources, runner_factory=runner_factory, **kwargs)
    assert store.count_calls() == calls
    return str(refused.value)


def _paraphrase(messages):
    prompt = messages[-1]["content"]
    original = next(s.fields["text"] for s in SAMPLES if s.fields["text"] in prompt)
    return original.replace(".", ", really.")


# ------------------------------------------------------------------ export: the stored run


def test_a_run_exported_again_keeps_its_engine_stamp(tmp_path):
    """A new run is stamped with the engine version; one stored already keeps its own (the
    import's judging decides whether to repair it), however often it is exported."""
    store, export = _exported_add_good(tmp_path)
    assert store.run(export.run_id).engine_version == ENGINE_VERSION
    with store._write():
        store._db.execute("UPDATE runs SET engine_version = 1 WHERE id = ?", [export.run_id])
    again = export_batch(
        store, ADD_GOOD, SENTIMENT, SAMPLES, tmp_path / "again.jsonl", runner_factory=runner_factory
    )
    assert again.run_id == export.run_id
    run = store.run(export.run_id)
    assert run.engine_version == 1
    assert run.status == "awaiting_batch"


def test_a_stored_export_awaits_a_batch_only_when_it_wrote_requests(tmp_path):
    """``_store_export`` with nothing to ask (the calls stage, everything cached) stores the run
    but neither requests nor ``awaiting_batch``: the export judges it from the cache at once."""
    store = Store(tmp_path / "s.db")
    request = CallRequest("k1", "http://127.0.0.1:9/v1", "m-1", {}, [{"role": "user"}], 0)
    plan = SimpleNamespace(run_id="r-none", cases=[])
    _store_export(store, ADD_GOOD, SENTIMENT, SAMPLES, plan, CALLS, [])
    assert store.run("r-none").status == "running"
    assert store.batch_request_keys("r-none") == []
    plan = SimpleNamespace(run_id="r-some", cases=[])
    _store_export(store, ADD_GOOD, SENTIMENT, SAMPLES, plan, CALLS, [request])
    assert store.run("r-some").status == "awaiting_batch"
    assert store.batch_request_keys("r-some", CALLS) == ["k1"]


def test_rewrites_are_exported_for_the_batch_transformation_endpoint_as_repeat_0(tmp_path):
    """Stage 1: each recorded rewrite request is the very call its key names (the rewriter's
    model, the rewrite parameters, repeat 0), and the stored config sends the rewrites to a
    batch endpoint too, never online."""
    store = Store(tmp_path / "rw.db")
    config = RunConfig(
        ENDPOINT, "sentiment", ("sentence.paraphrase",), transformation_endpoint=REWRITER
    )
    stage1 = export_batch(
        store, config, SENTIMENT, SAMPLES, tmp_path / "rw.jsonl", runner_factory=runner_factory
    )
    assert stage1.stage == REWRITES
    stored = store.run(stage1.run_id).config
    assert stored["transformation_endpoint"]["kind"] == BATCH_KIND
    assert stored["transformation_endpoint"]["model"] == "rewriter"
    assert stored["endpoint"]["kind"] == BATCH_KIND
    requests = store.batch_requests_for_keys(_keys(stage1.files[0]))
    # best of k: each sample's paraphrase is asked for k times (k seeds), all in stage 1
    assert len(requests) == len(SAMPLES) * DEFAULT_REWRITE_CANDIDATES
    assert (
        len({row["params"].get("seed") for row in requests.values()}) == DEFAULT_REWRITE_CANDIDATES
    )
    for key, row in requests.items():
        assert row["repeat_index"] == 0 and row["model"] == "rewriter"
        assert key == call_key(
            row["base_url"], row["model"], row["params"], row["messages"], row["repeat_index"]
        )

    # Importing the rewrites leaves the run awaiting stage 2, and says so.
    answers = answer_file(stage1.files, tmp_path / "rw-res.jsonl", _paraphrase)
    imported = _import(store, answers)
    assert imported.rewrites_answered == [stage1.run_id]
    assert imported.status == {stage1.run_id: "awaiting_batch"}
    assert imported.describe()[1:] == [
        f"run {stage1.run_id}: stage 1 (rewrites) answered; run `batch export` again for stage 2"
    ]


def test_as_batch_turns_both_endpoints_into_batch_ones_but_not_an_embedded_one():
    embedded = Endpoint(name="e", base_url="http://127.0.0.1:5/v1", model="s", kind="embedded")
    config = as_batch(
        RunConfig(ENDPOINT, "sentiment", ("char.delete",), transformation_endpoint=REWRITER)
    )
    assert config.endpoint.kind == BATCH_KIND
    assert config.transformation_endpoint.kind == BATCH_KIND
    assert config.transformation_endpoint.model == "rewriter"
    kept = as_batch(
        RunConfig(ENDPOINT, "sentiment", ("char.delete",), transformation_endpoint=embedded)
    )
    assert kept.transformation_endpoint == embedded
    assert as_batch(ADD_GOOD).transformation_endpoint is None


# ------------------------------------------------------------------ export: the files


def test_an_export_splits_parts_at_the_byte_limit(tmp_path):
    """``max_bytes`` reaches the writer: past it each request starts a new numbered part."""
    store = Store(tmp_path / "b.db")
    export = export_batch(
        store,
        ADD_GOOD,
        SENTIMENT,
        SAMPLES,
        tmp_path / "r.jsonl",
        runner_factory=runner_factory,
        max_bytes=1,
    )
    assert export.requests == 8
    assert export.lines_per_file == [1] * 8
    assert [path.name for path in export.files] == [f"r-{n:03d}.jsonl" for n in range(1, 9)]
    assert export.describe()[1:3] == [
        f"wrote 1 requests to {tmp_path / 'r-001.jsonl'}",
        f"wrote 1 requests to {tmp_path / 'r-002.jsonl'}",
    ]


def _todo() -> list[CallRequest]:
    return [CallRequest("k1", "http://127.0.0.1:9/v1", "m-1", {}, [{"role": "user"}], 0)]


def test_an_export_into_a_missing_folder_names_the_folder(tmp_path):
    out = tmp_path / "nowhere" / "r.jsonl"
    with pytest.raises(BatchExportError) as refused:
        _write_requests(out, _todo(), max_lines=10, max_bytes=10_000)
    assert str(refused.value) == (
        f"cannot write {out}: no folder {tmp_path / 'nowhere'}; nothing was stored"
    )


def test_an_export_that_the_os_refuses_gives_its_reason_in_lower_case(tmp_path):
    """Any other OS error: its reason (the ``strerror``, lower-cased), not the errno dump."""
    out = tmp_path / ("x" * 300 + ".jsonl")  # longer than a file name may be
    with pytest.raises(BatchExportError) as refused:
        _write_requests(out, _todo(), max_lines=10, max_bytes=10_000)
    assert str(refused.value) == f"cannot write {out}: file name too long; nothing was stored"
    assert list(tmp_path.iterdir()) == []


def test_an_os_error_without_a_reason_is_said_by_its_message(tmp_path, monkeypatch):
    """An ``OSError`` with no ``strerror`` (raised by a library, not the OS): its text."""

    def fails(*args, **kwargs):
        raise OSError("Stale Handle on /srv")

    monkeypatch.setattr("app.batch.export.request_line", fails)
    out = tmp_path / "r.jsonl"
    with pytest.raises(BatchExportError) as refused:
        _write_requests(out, _todo(), max_lines=10, max_bytes=10_000)
    assert str(refused.value) == f"cannot write {out}: stale handle on /srv; nothing was stored"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_store_removes_the_parts_and_keeps_its_own_error(tmp_path, monkeypatch):
    """The database refuses the export after the parts were written: the parts go, and a part
    that is gone already (removed by hand meanwhile) does not hide the database's error."""
    store = Store(tmp_path / "b.db")
    written = []

    def locked(run_id, **kwargs):
        parts = sorted(tmp_path.glob("r-*.jsonl"))
        written.extend(parts)
        parts[0].unlink()
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(store, "save_run", locked)
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        export_batch(
            store,
            ADD_GOOD,
            SENTIMENT,
            SAMPLES,
            tmp_path / "r.jsonl",
            runner_factory=runner_factory,
            max_lines=4,
        )
    assert [path.name for path in written] == ["r-001.jsonl", "r-002.jsonl"]
    assert list(tmp_path.glob("*.jsonl")) == []
    assert store.runs() == []


def test_judging_an_unknown_run_names_it(tmp_path):
    with pytest.raises(ValueError) as refused:
        judge_from_cache(Store(tmp_path / "e.db"), "abc123", runner_factory)
    assert str(refused.value) == "no run 'abc123' in this database"


# ------------------------------------------------------------------ import: the run's status


def test_a_partial_import_marks_the_run_partial_in_the_database(tmp_path):
    store, export = _exported_add_good(tmp_path)
    first = _keys(export.files[0])[0]
    imported = _import(store, answer_file(export.files, tmp_path / "a.jsonl", skip={first}))
    assert imported.status == {export.run_id: "partial"}
    assert store.run(export.run_id).status == "partial"
    assert [r.id for r in store.runs() if r.status in BATCH_RUN_STATES] == [export.run_id]
    assert imported.describe()[-1].startswith(f"run {export.run_id}: partial, 4 cases (")
    assert imported.describe()[-1].endswith(
        "; 1 calls still missing (import their results to finish)"
    )


def test_a_new_answer_to_a_partial_run_judges_it_again(tmp_path):
    """A partial run still missing calls after an import is judged again when the import
    answered any of its calls: fewer ERROR cases, one call still missing."""
    store, export = _exported_add_good(tmp_path)
    keys = _keys(export.files[0])
    first, last = keys[0], keys[-1]  # calls of two different cases
    _import(store, answer_file(export.files, tmp_path / "a.jsonl", skip={first, last}))
    assert _errors(store, export.run_id) == 2
    one_more = answer_file(export.files, tmp_path / "b.jsonl", skip=set(keys[1:]))
    imported = _import(store, one_more)
    assert list(imported.summaries) == [export.run_id]
    assert imported.status == {export.run_id: "partial"}
    assert imported.missing == {export.run_id: [last]}
    assert _errors(store, export.run_id) == 1
    assert store.run(export.run_id).status == "partial"


def test_a_done_run_is_not_judged_again_by_the_same_file(tmp_path):
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    assert _import(store, results).status == {export.run_id: "done"}
    cases = _case_rows(store, export.run_id)
    again = _import(store, results)
    assert again.summaries == {}
    assert again.status == {export.run_id: "done"}
    assert again.describe() == [
        "answered 8 calls; 0 result lines were errors",
        f"run {export.run_id}: done",
    ]
    assert _case_rows(store, export.run_id) == cases


def test_an_interrupted_run_with_calls_missing_is_judged_again(tmp_path):
    """Only a run that finished judging (``partial``) counts as settled with calls missing; an
    interrupted one is judged again by the same file, and is partial after."""
    store, export = _exported_add_good(tmp_path)
    first = _keys(export.files[0])[0]
    results = answer_file(export.files, tmp_path / "a.jsonl", skip={first})
    _import(store, results)
    store.set_run_status(export.run_id, "interrupted")
    again = _import(store, results)
    assert list(again.summaries) == [export.run_id]
    assert again.status == {export.run_id: "partial"}
    assert store.run(export.run_id).status == "partial"


def test_the_same_error_line_again_changes_nothing(tmp_path):
    """A per-line error already recorded for its request is no news: the run is not judged
    again (a different error would be)."""
    store, export = _exported_add_good(tmp_path)
    first = _keys(export.files[0])[0]
    results = answer_file(export.files, tmp_path / "res.jsonl", fail={first})
    assert list(_import(store, results).summaries) == [export.run_id]
    cases = _case_rows(store, export.run_id)
    again = _import(store, results)
    assert again.line_errors == {first: "batch error: server_error: the model crashed"}
    assert again.summaries == {}
    assert again.status == {export.run_id: "partial"}
    assert _case_rows(store, export.run_id) == cases


def test_an_error_line_beside_an_answer_is_no_error(tmp_path):
    """The answer is kept and the error line is not counted, in the same file or after the
    answer was cached by an earlier import."""
    store, export = _exported_add_good(tmp_path)
    first = _keys(export.files[0])[0]
    results = answer_file(export.files, tmp_path / "res.jsonl")
    error = json.dumps(batch_error_line(first, "server_error", "the model crashed"))
    results.write_text(results.read_text() + error + "\n")
    imported = _import(store, results)
    assert imported.line_errors == {}
    assert imported.status == {export.run_id: "done"}
    assert imported.describe()[0] == "answered 8 calls; 0 result lines were errors"

    late = tmp_path / "late.jsonl"
    late.write_text(error + "\n")
    again = _import(store, late)
    assert again.line_errors == {} and again.answered == 0
    assert again.summaries == {}
    assert again.status == {export.run_id: "done"}


def test_describe_goes_on_after_a_run_waiting_for_stage_2():
    outcome = BatchImport(
        run_ids=["r0", "r1"],
        answered=2,
        status={"r0": "awaiting_batch", "r1": "done"},
        rewrites_answered=["r0"],
    )
    assert outcome.describe() == [
        "answered 2 calls; 0 result lines were errors",
        "run r0: stage 1 (rewrites) answered; run `batch export` again for stage 2",
        "run r1: done",
    ]


# ------------------------------------------------------------------ import: lines, not paths


def test_indented_result_lines_are_lines_not_paths(tmp_path):
    store, export = _exported_add_good(tmp_path)
    lines = answer_file(export.files, tmp_path / "res.jsonl").read_text().splitlines()
    imported = import_results(store, ["  " + line for line in lines], runner_factory=runner_factory)
    assert imported.answered == 8
    assert imported.status == {export.run_id: "done"}


def test_lines_are_numbered_from_1_and_named_the_results(tmp_path):
    store, export = _exported_add_good(tmp_path)
    lines = answer_file(export.files, tmp_path / "res.jsonl").read_text().splitlines()
    imported = import_results(
        store, [lines[0], "", "not json", *lines[1:]], runner_factory=runner_factory
    )
    assert imported.invalid_lines == [3]

    requests = export.files[0].read_text().splitlines()
    message = _refused(store, [*lines, requests[0]])
    assert message == (
        "the results: line 9 is a request, not results (a request file mixed in?); import the "
        "results file alone; nothing was imported"
    )
    message = _refused(store, [lines[0], requests[0], lines[1], requests[1]], name="upload.jsonl")
    assert message == (
        "upload.jsonl: 2 lines (2, 4) are requests, not results (a request file mixed in?); "
        "import the results file alone; nothing was imported"
    )


# ------------------------------------------------------------------ import: refused whole


def test_a_file_with_no_result_line_is_refused_by_name(tmp_path):
    store, export = _exported_add_good(tmp_path)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n\n{broken\n")
    assert _refused(store, [garbage]) == (
        f"{garbage}: no result lines in it (2 unreadable lines); nothing was imported"
    )
    assert _refused(store, ["{broken", "not json either"]) == (
        "the results: no result lines in it (2 unreadable lines); nothing was imported"
    )
    assert store.run(export.run_id).status == "awaiting_batch"


def test_a_request_file_given_as_results_is_refused_in_full(tmp_path):
    store, export = _exported_add_good(tmp_path)
    assert _refused(store, export.files) == (
        f"{export.files[0]}: this is a request file; import the results file (the batch "
        "engine's output for it); nothing was imported"
    )


def test_an_unreadable_file_is_refused_with_the_reason(tmp_path, monkeypatch):
    """Root reads any file whatever its mode, so for root the OS's refusal is simulated."""
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    results.chmod(0)
    if os.geteuid() == 0:
        real_open = Path.open

        def open_(self, mode="r", *args, **kwargs):
            if self == results:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
            return real_open(self, mode, *args, **kwargs)

        monkeypatch.setattr(Path, "open", open_)
    try:
        message = _refused(store, [results])
    finally:
        results.chmod(0o644)
    assert message == f"{results}: cannot be read (Permission denied)"


def test_a_file_answering_nothing_here_is_refused_in_full(tmp_path):
    other = Store(tmp_path / "other.db")
    theirs = export_batch(
        other, ADD_GOOD, SENTIMENT, SAMPLES, tmp_path / "r.jsonl", runner_factory=runner_factory
    )
    results = answer_file(theirs.files, tmp_path / "res.jsonl")
    assert _refused(Store(tmp_path / "mine.db"), [results]) == (
        f"{results}: none of its 8 results answers a request exported to this database; it "
        "belongs to another run or database (nothing was imported)"
    )


def test_a_file_answering_partly_another_database_names_those_lines(tmp_path):
    other = Store(tmp_path / "other.db")
    theirs = export_batch(
        other, ADD_GOOD, SENTIMENT, SAMPLES, tmp_path / "t.jsonl", runner_factory=runner_factory
    )
    store = Store(tmp_path / "mine.db")
    mine = export_batch(
        store, ADD_GOOD, SENTIMENT, SAMPLES[:2], tmp_path / "m.jsonl", runner_factory=runner_factory
    )
    results = answer_file(theirs.files, tmp_path / "res.jsonl")
    ours = set(_keys(mine.files[0]))
    foreign = [n for n, key in enumerate(_keys(results), start=1) if key not in ours]
    assert len(foreign) == 4
    assert _refused(store, [results]) == (
        f"{results}: 4 of its 8 results (line {', '.join(map(str, foreign))}) answer no "
        "request exported to this database; it belongs to another run or database (nothing "
        "was imported)"
    )


def _line(key: str, text: str | None, number: int, error: str | None = None) -> ResultLine:
    return ResultLine(key=key, text=text, error=error, line_number=number)


def test_two_conflicts_are_the_first_and_one_more():
    key, other = "k" * 20, "j" * 20
    parsed = ParsedResults(
        results=[_line(key, "a", 1), _line(key, "b", 2), _line(other, "x", 3), _line(other, "y", 4)]
    )
    with pytest.raises(BatchImportError) as refused:
        _refuse_conflicts([("r.jsonl", parsed)])
    assert str(refused.value) == (
        f"r.jsonl: lines 1 and 2 answer the same request (custom_id {key[:16]}…) with "
        "different text (1 more such lines); keep one of them and import again (nothing was "
        "imported)"
    )


def test_a_conflict_after_an_error_line_is_still_found():
    key = "k" * 20
    parsed = ParsedResults(
        results=[_line("e" * 20, None, 1, error="boom"), _line(key, "a", 2), _line(key, "b", 3)]
    )
    with pytest.raises(BatchImportError, match=r"^r\.jsonl: lines 2 and 3 answer the same"):
        _refuse_conflicts([("r.jsonl", parsed)])


def test_a_conflict_between_an_answer_and_a_result_line_of_the_file(tmp_path):
    """End to end: a second, different answer to a request is refused (the first conflict named
    by its two line numbers), and nothing is imported."""
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    first = _keys(results)[0]
    other = json.dumps(batch_output_line(first, chat_body("negative, surely")))
    results.write_text(results.read_text() + other + "\n")
    assert _refused(store, [results]) == (
        f"{results}: lines 1 and 9 answer the same request (custom_id {first[:16]}…) with "
        "different text; keep one of them and import again (nothing was imported)"
    )


def test_a_lone_part_that_cannot_take_the_output_name_is_removed(tmp_path):
    """``--out`` names a folder: finishing fails, and the numbered part is not left behind."""
    from app.batch.formats import PartWriter

    out = tmp_path / "requests.jsonl"
    out.mkdir()
    with pytest.raises(OSError), PartWriter(out) as writer:
        writer.write({"custom_id": "a"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["requests.jsonl"]
    assert writer.parts == []
