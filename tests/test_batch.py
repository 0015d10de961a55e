"""Batch mode end to end: ``batch export`` → answer every request line → ``batch import``.

The contract (issue 13): an exported and imported run is the very run an online ``run`` of the
same config makes — same run id, case ids, verdicts, outputs and similarity values — and a
second export of the same config writes no line.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

import pytest

from app.batch.export import CALLS, REWRITES, BatchExport, export_batch
from app.batch.importer import BatchImportError, import_results
from app.clients.batch import NOT_ANSWERED, BatchClient
from app.clients.mock import MockClient
from app.engine.embedder import EmbeddingCache
from app.engine.run_setup import endpoint_problem
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import BATCH_KIND, Endpoint, Sample
from relations.base import Expectation, Relation, RelationKind
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import batch_error_line, batch_output_line, chat_body

SENTIMENT = BUILTIN_TASKS["sentiment"]
SCORE = BUILTIN_TASKS["sentiment_score"]
ENDPOINT = Endpoint(name="server", base_url="http://127.0.0.1:9/v1", model="m-1")
SAMPLES = [
    Sample({"text": t})
    for t in ("I love it.", "It broke twice.", "Bad food, good staff.", "Fine enough.")
]


def _add_good(text, ctx):
    return text + " Honestly good."


def _same(text, ctx):
    return text


ADD_GOOD = Relation(
    id="test.add_good", name="add good", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, transform=_add_good,
)  # fmt: skip
# Makes a follow-up identical to its source: the validity gate SKIPs it before anything is sent.
SAME = Relation(
    id="test.same", name="same", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, transform=_same,
)  # fmt: skip
CUSTOM = [ADD_GOOD, SAME]


def model(messages):
    """A deterministic model for both tasks: words decide the label and the score."""
    prompt = messages[-1]["content"]
    text = prompt.split("Text:", 1)[-1].lower()
    score = 0.2 + 0.3 * text.count("good") + 0.4 * text.count("love") - 0.1 * text.count("bad")
    if "Score:" in prompt:
        return f"{max(0.0, min(1.0, score)):.2f}"
    return "positive" if ("good" in text or "love" in text) else "negative"


def runner_factory(store: Store) -> Runner:
    return Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store), custom_relations=CUSTOM)


def _online(tmp_path, name, config, task, samples=SAMPLES):
    store = Store(tmp_path / f"{name}.db")
    mock = MockClient(model)
    runner = runner_factory(store)
    runner.client_factory = mock.factory
    summary = runner.run_sync(config, task, samples)
    return store, summary


def answer_file(paths, path: Path, responder=model, *, skip=(), fail=()) -> Path:
    """Answer every request line with ``responder`` in the OpenAI Batch output format (the
    keys in ``skip`` left out, those in ``fail`` as error lines)."""
    with path.open("w") as out:
        for part in paths:
            for line in Path(part).read_text().splitlines():
                request = json.loads(line)
                key = request["custom_id"]
                if key in skip:
                    continue
                if key in fail:
                    result = batch_error_line(key, "server_error", "the model crashed")
                else:
                    text = responder(request["body"]["messages"])
                    result = batch_output_line(key, chat_body(text, request["body"]["model"]))
                out.write(json.dumps(result) + "\n")
    return path


def _case_rows(store: Store, run_id: str) -> list[dict]:
    columns = (
        "id, run_id, sample_id, relation_id, followup_index, repeat_index, verdict, reason, "
        "source_output, followup_output, source_answer, followup_answer, value, "
        "output_similarity, oracle, details, source_prompt, followup_prompt"
    )
    conn = sqlite3.connect(store.path)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            f"SELECT {columns} FROM cases WHERE run_id = ? ORDER BY id", [run_id]
        ).fetchall()
    finally:
        conn.close()
    return [dict(row) for row in rows]


def _all_case_rows(store: Store) -> list[tuple]:
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute("SELECT * FROM cases ORDER BY id").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("task", "relation_ids", "repeats"),
    [
        (SENTIMENT, ("test.add_good", "si.identity", "test.same", "char.delete"), 2),
        (SCORE, ("multi.pairwise_order",), 1),  # companions: the partner's two calls
    ],
)
def test_export_answer_import_equals_an_online_run(tmp_path, task, relation_ids, repeats):
    """Export → answer each line with the model's answers → import gives exactly the cases of an
    online run (ids, verdicts, outputs, similarity values) — issue 13's first "Must show" — and
    a second export of the same config writes 0 lines."""
    import relations.si  # noqa: F401 - registers si.identity

    config = RunConfig(ENDPOINT, task.id, relation_ids, repeats=repeats, seed=3)
    online_store, online = _online(tmp_path, "online", config, task)

    store = Store(tmp_path / "batch.db")
    export = export_batch(
        store, config, task, SAMPLES, tmp_path / "requests.jsonl", runner_factory=runner_factory
    )
    assert export.run_id == online.run_id
    assert export.stage == CALLS
    assert export.requests > 0 and export.files == [tmp_path / "requests.jsonl"]
    assert store.run(export.run_id).status == "awaiting_batch"
    assert store.run(export.run_id).config["endpoint"]["kind"] == BATCH_KIND
    # One line per distinct call: the online run sent exactly these calls.
    assert export.requests == online.calls_made

    results = answer_file(export.files, tmp_path / "results.jsonl")
    imported = import_results(store, [results], runner_factory=runner_factory)
    assert imported.run_ids == [online.run_id]
    assert imported.status == {online.run_id: "done"}
    assert imported.missing == {}
    assert imported.answered == export.requests

    batch_rows = _case_rows(store, online.run_id)
    online_rows = _case_rows(online_store, online.run_id)
    assert batch_rows == online_rows
    verdicts = {row["verdict"] for row in batch_rows}
    if task is SENTIMENT:
        assert "SKIP" in verdicts  # test.same, gated
        assert any(row["relation_id"] == "si.identity" for row in batch_rows)
        assert {row["repeat_index"] for row in batch_rows} == {0, 1}
    assert store.run(online.run_id).status == "done"

    again = export_batch(
        store, config, task, SAMPLES, tmp_path / "again.jsonl", runner_factory=runner_factory
    )
    assert again.requests == 0 and again.files == []
    assert again.cached == export.requests
    assert not (tmp_path / "again.jsonl").exists()
    assert store.run(online.run_id).status == "done"


def _exported_add_good(tmp_path) -> tuple[Store, BatchExport]:
    """A fresh database with SAMPLES × test.add_good exported (its requests in r.jsonl)."""
    store = Store(tmp_path / "batch.db")
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
    export = export_batch(
        store, config, SENTIMENT, SAMPLES, tmp_path / "r.jsonl", runner_factory=runner_factory
    )
    return store, export


def test_reimport_changes_nothing(tmp_path):
    store, export = _exported_add_good(tmp_path)
    first_key = json.loads(export.files[0].read_text().splitlines()[0])["custom_id"]
    results = answer_file(export.files, tmp_path / "res.jsonl", skip={first_key})
    first = import_results(store, [results], runner_factory=runner_factory)
    assert first.status == {export.run_id: "partial"}
    assert first.missing == {export.run_id: [first_key]}
    before = _all_case_rows(store)
    second = import_results(store, [results], runner_factory=runner_factory)
    assert _all_case_rows(store) == before
    assert second.summaries == {}  # nothing new: the run was not judged again
    assert second.status == {export.run_id: "partial"}
    errors = [row for row in _case_rows(store, export.run_id) if row["verdict"] == "ERROR"]
    assert errors and all(NOT_ANSWERED in row["reason"] for row in errors)


def test_the_missing_answers_finish_a_partial_run(tmp_path):
    store, export = _exported_add_good(tmp_path)
    keys = [json.loads(line)["custom_id"] for line in export.files[0].read_text().splitlines()]
    import_results(
        store,
        [answer_file(export.files, tmp_path / "a.jsonl", skip=set(keys[:2]))],
        runner_factory=runner_factory,
    )
    rest = answer_file(export.files, tmp_path / "b.jsonl", skip=set(keys[2:]))
    done = import_results(store, [rest], runner_factory=runner_factory)
    assert done.status == {export.run_id: "done"} and done.missing == {}
    assert "ERROR" not in {row["verdict"] for row in _case_rows(store, export.run_id)}


def test_a_per_line_error_becomes_the_case_reason(tmp_path):
    store, export = _exported_add_good(tmp_path)
    key = json.loads(export.files[0].read_text().splitlines()[0])["custom_id"]
    results = answer_file(export.files, tmp_path / "res.jsonl", fail={key})
    imported = import_results(store, [results], runner_factory=runner_factory)
    assert imported.line_errors == {key: "batch error: server_error: the model crashed"}
    assert imported.status == {export.run_id: "partial"}
    reasons = [
        row["reason"] for row in _case_rows(store, export.run_id) if row["verdict"] == "ERROR"
    ]
    assert reasons and all("the model crashed" in reason for reason in reasons)
    # The failed call is exported again, alone.
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
    again = export_batch(
        store, config, SENTIMENT, SAMPLES, tmp_path / "again.jsonl", runner_factory=runner_factory
    )
    assert again.requests == 1


def test_a_file_from_another_database_is_refused(tmp_path):
    other = Store(tmp_path / "other.db")
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
    export = export_batch(
        other, config, SENTIMENT, SAMPLES, tmp_path / "r.jsonl", runner_factory=runner_factory
    )
    results = answer_file(export.files, tmp_path / "res.jsonl")
    store = Store(tmp_path / "mine.db")
    with pytest.raises(BatchImportError, match="belongs to another run or database") as caught:
        import_results(store, [results], runner_factory=runner_factory)
    assert str(results) in str(caught.value)
    assert store.count_calls() == 0 and store.runs() == []


def test_a_half_written_file_imports_its_valid_lines(tmp_path):
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    lines = results.read_text().splitlines()
    garbage = [*lines[:2], "not json at all", '{"no_custom_id": 1}', *lines[2:]]
    results.write_text("\n".join(garbage)[:-25])  # the last line cut in the middle
    imported = import_results(store, [results], runner_factory=runner_factory)
    assert imported.invalid_lines == [3, 4, len(garbage)]
    assert imported.answered == len(lines) - 1
    assert imported.status == {export.run_id: "partial"}
    assert len(imported.missing[export.run_id]) == 1
    assert "3 lines are not result lines" in "\n".join(imported.describe())


def test_llm_prompted_relations_export_their_rewrites_first(tmp_path):
    """Stage 1 writes the rewrites (transformation endpoint, rewrite parameters); once they are
    imported, stage 2 writes the calls of the follow-ups made from them."""
    store = Store(tmp_path / "batch.db")
    rewriter = Endpoint(name="rw", base_url="http://127.0.0.1:9/v1", model="rewriter")
    config = RunConfig(
        ENDPOINT, "sentiment", ("sentence.paraphrase",), transformation_endpoint=rewriter
    )
    stage1 = export_batch(
        store, config, SENTIMENT, SAMPLES, tmp_path / "rw.jsonl", runner_factory=runner_factory
    )
    assert stage1.stage == REWRITES
    # Best of 3: every candidate of every sample in one stage, seeds 0, 1 and 2.
    assert stage1.requests == 3 * len(SAMPLES)
    lines = [json.loads(line) for line in stage1.files[0].read_text().splitlines()]
    request = lines[0]
    assert request["body"]["model"] == "rewriter" and request["body"]["temperature"] == 0.7
    assert sorted(line["body"]["seed"] for line in lines) == sorted([0, 1, 2] * len(SAMPLES))
    assert "stage 1 of 2" in "\n".join(stage1.describe())

    def paraphrase(messages):
        prompt = messages[-1]["content"]
        original = next(s.fields["text"] for s in SAMPLES if s.fields["text"] in prompt)
        return original.replace(".", ", really.")

    imported = import_results(
        store,
        [answer_file(stage1.files, tmp_path / "rw-res.jsonl", paraphrase)],
        runner_factory=runner_factory,
    )
    assert imported.rewrites_answered == [stage1.run_id]
    assert store.run(stage1.run_id).status == "awaiting_batch"
    stage2 = export_batch(
        store, config, SENTIMENT, SAMPLES, tmp_path / "calls.jsonl", runner_factory=runner_factory
    )
    assert stage2.stage == CALLS and stage2.run_id == stage1.run_id
    assert stage2.requests == 2 * len(SAMPLES)
    final = import_results(
        store,
        [answer_file(stage2.files, tmp_path / "calls-res.jsonl")],
        runner_factory=runner_factory,
    )
    assert final.status == {stage1.run_id: "done"}
    followups = [row["followup_prompt"] for row in _case_rows(store, stage1.run_id)]
    assert all("really" in prompt for prompt in followups)


def test_run_ids_do_not_depend_on_how_answers_come():
    """A batch endpoint's run is the run of the OpenAI-compatible endpoint it stands for, and the
    run ids of openai and embedded endpoints are what they were before the batch kind."""
    from dataclasses import replace

    openai_config = RunConfig(ENDPOINT, "sentiment", ("char.delete",))
    batch_config = replace(openai_config, endpoint=replace(ENDPOINT, kind=BATCH_KIND))
    assert batch_config.run_id(SAMPLES) == openai_config.run_id(SAMPLES)
    # Pinned before the batch kind existed (same config, same samples).
    assert openai_config.run_id(SAMPLES) == PINNED_OPENAI_RUN_ID
    embedded = Endpoint(name="e", base_url="http://127.0.0.1:5/v1", model="s", kind="embedded")
    assert RunConfig(embedded, "sentiment", ("char.delete",)).run_id(SAMPLES) == (
        PINNED_EMBEDDED_RUN_ID
    )


PINNED_OPENAI_RUN_ID = "e2e367e8fe13"
PINNED_EMBEDDED_RUN_ID = "2e95dc6d1fe7"


def test_the_batch_client_never_sends():
    import asyncio

    client = BatchClient(ENDPOINT)
    completion = asyncio.run(client.complete([{"role": "user", "content": "hi"}], {}))
    assert completion.text is None and completion.error == NOT_ANSWERED
    assert client.unanswered == [[{"role": "user", "content": "hi"}]]


def test_a_run_against_a_batch_endpoint_says_use_batch_export():
    config = RunConfig(
        Endpoint("b", "http://127.0.0.1:9/v1", "m", kind=BATCH_KIND), "sentiment", ("char.delete",)
    )
    problem = endpoint_problem(config)
    assert problem is not None and "batch export" in problem


# ------------------------------------------------------------------ the CLI, over real HTTP


def answer_with_server(paths, out: Path, base_url: str) -> Path:
    """Answer every request line by POSTing its body to the server, as a batch engine would,
    and write the responses in the OpenAI Batch output format."""
    import urllib.request

    with out.open("w") as handle:
        for part in paths:
            for line in Path(part).read_text().splitlines():
                request = json.loads(line)
                http = urllib.request.Request(
                    base_url.rstrip("/") + "/chat/completions",
                    data=json.dumps(request["body"]).encode(),
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(http, timeout=10) as response:
                    body = json.loads(response.read())
                result = batch_output_line(request["custom_id"], body)
                handle.write(json.dumps(result) + "\n")
    return out


@pytest.fixture
def bow(monkeypatch):
    import functools

    from app.engine import workspace

    fast = functools.partial(workspace.make_runner, embedder_factory=BagOfWordsEmbedder)
    monkeypatch.setattr(workspace, "make_runner", fast)


def test_cli_export_answer_import_equals_cli_run(capsys, tmp_path, fake_server, bow):
    """`batch export` → the fake server answers every line → `batch import` stores the same
    cases as `run` of the same options against the same server; a second export writes 0."""
    from app.cli.main import main

    inputs = tmp_path / "inputs.csv"
    inputs.write_text(
        "text\n" + "".join(f"Review {i}: {'good' if i % 2 else 'cold'}.\n" for i in range(6))
    )
    common = [
        "--endpoint", fake_server.base_url, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity,sentence.uppercase,char.leet", "--inputs", str(inputs),
        "--repeats", "2",
    ]  # fmt: skip
    assert main(["run", *common, "--db", str(tmp_path / "online.db"), "--quiet", "--json"]) == 0
    online = json.loads(capsys.readouterr().out)

    db = str(tmp_path / "batch.db")
    out = tmp_path / "requests.jsonl"
    assert main(["batch", "export", *common, "--db", db, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"run {online['run_id']}: 36 cases planned" in printed
    assert f"wrote {online['calls_made']} requests to {out}" in printed
    calls_before = fake_server.stats.chat_calls
    results = answer_with_server([out], tmp_path / "results.jsonl", fake_server.base_url)
    assert fake_server.stats.chat_calls - calls_before == online["calls_made"]

    assert main(["batch", "import", str(results), "--db", db, "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert imported["status"] == {online["run_id"]: "done"}
    assert imported["summaries"][online["run_id"]]["verdicts"] == online["verdicts"]
    assert _case_rows(Store(db), online["run_id"]) == _case_rows(
        Store(tmp_path / "online.db"), online["run_id"]
    )

    again = tmp_path / "again.jsonl"
    assert main(["batch", "export", *common, "--db", db, "--out", str(again), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests"] == 0 and not again.exists()

    # A results file imported into another database is refused in one line, exit 2.
    assert main(["batch", "import", str(results), "--db", str(tmp_path / "other.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "another run or database" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_export_splits_parts_and_import_reads_them_all(capsys, tmp_path, bow):
    from app.cli.main import main

    inputs = tmp_path / "inputs.txt"
    inputs.write_text("".join(f"Line {i} is fine.\n" for i in range(5)))
    db = str(tmp_path / "b.db")
    args = [
        "batch", "export", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
        "--task", "sentiment", "--relations", "sentence.uppercase", "--inputs", str(inputs),
        "--db", db, "--out", str(tmp_path / "req.jsonl"), "--max-lines", "4", "--json",
    ]  # fmt: skip
    assert main(args) == 0
    export = json.loads(capsys.readouterr().out)
    assert export["lines_per_file"] == [4, 4, 2]
    assert [Path(f).name for f in export["files"]] == [
        "req-001.jsonl",
        "req-002.jsonl",
        "req-003.jsonl",
    ]
    results = [answer_file([f], tmp_path / f"res-{i}.jsonl") for i, f in enumerate(export["files"])]
    assert main(["batch", "import", *map(str, results[:2]), "--db", db]) == 3  # calls missing
    assert "still missing" in capsys.readouterr().out
    assert main(["batch", "import", str(results[2]), "--db", db]) == 0
    assert f"run {export['run_id']}: done" in capsys.readouterr().out


def test_batch_states_show_where_runs_are_listed(tmp_path, capsys):
    """An exported run reads "awaiting_batch" (never "interrupted", though no process owns it),
    its label in Analysis says so, and `report --run` notes it on stderr."""
    from app.cli.main import main
    from app.ui.analysis_view import run_label

    store = Store(tmp_path / "b.db")
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
    export = export_batch(
        store, config, SENTIMENT, SAMPLES, tmp_path / "r.jsonl", runner_factory=runner_factory
    )
    with store._write():  # its owner process is long gone and its heartbeat is old
        store._db.execute("UPDATE runs SET owner = 'nohost:1', heartbeat_at = '2020-01-01'")
    [row] = store.runs()
    assert row.status == "awaiting_batch"
    assert row.id == export.run_id
    assert run_label(asdict(row)).endswith("awaiting batch results")
    assert main(["report", "--db", str(tmp_path / "b.db"), "--run", export.run_id]) == 0
    assert "awaiting_batch" in capsys.readouterr().err


# ------------------------------------------------------------------ planning at scale


def test_partners_are_the_next_samples_wrapping_without_a_copy():
    """Each (sample, relation) job of a plan gets the samples after its own, wrapping round.
    They were a copied list per job, all pending at once: 5,000 inputs × 10 relations held
    2 GB at plan time (bench/bench_batch_export.py). Now a view over the one list."""
    from app.engine.plan import Partners

    samples = [Sample({"text": str(i)}) for i in range(5)]
    for index in range(5):
        view = Partners(samples, index)
        assert list(view) == samples[index + 1 :] + samples[:index]
        assert len(view) == 4 and view[-1] == samples[index - 1] and view[1:3] == list(view)[1:3]
    with pytest.raises(IndexError):
        Partners(samples, 0)[4]
    assert list(Partners(samples[:1], 0)) == []


def test_a_planned_run_prints_without_its_cases(tmp_path):
    """asyncio.run formats its main task's result when it ends (Python 3.11); a plan of 100,000
    cases printed in full cost seconds and 500 MB, so its repr leaves the cases out."""
    store = Store(tmp_path / "p.db")
    runner = runner_factory(store)
    runner.client_factory = BatchClient
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
    plan = runner.plan_sync(config, SENTIMENT, SAMPLES)
    assert len(plan.cases) == len(SAMPLES)
    assert repr(plan) == f"PlannedRun(run_id='{plan.run_id}')"


def test_vllm_results_given_as_lines_are_imported(tmp_path):
    """vLLM's run_batch output (older versions: no status_code; errors as plain strings), passed
    as the lines of an uploaded file rather than a path."""
    store, export = _exported_add_good(tmp_path)
    requests = [json.loads(line) for line in export.files[0].read_text().splitlines()]
    lines = []
    for number, request in enumerate(requests):
        if number == 0:
            lines.append(json.dumps({"id": "vllm-0", "custom_id": request["custom_id"],
                "response": {"status_code": 400, "request_id": "vllm-batch-0", "body": None},
                "error": "prompt too long"}))  # fmt: skip
            continue
        body = {"object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant",
                                     "content": model(request["body"]["messages"])}}]}  # fmt: skip
        lines.append(json.dumps({"id": f"vllm-{number}", "custom_id": request["custom_id"],
            "response": {"request_id": f"vllm-batch-{number}", "body": body}, "error": None}))  # fmt: skip
    imported = import_results(store, iter(lines), runner_factory=runner_factory)
    assert imported.answered == len(requests) - 1
    assert imported.line_errors == {requests[0]["custom_id"]: "batch error: prompt too long"}
    assert imported.status == {export.run_id: "partial"}


def test_the_export_benchmark_runs_quick():
    """bench/bench_batch_export.py --quick: the plumbing and the figures' keys (no timing)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "bench/bench_batch_export.py", "--quick", "--json"],
        capture_output=True, text=True, timeout=300, cwd=root,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    figures = json.loads(done.stdout)
    # 1,000 inputs × char.delete: a source and a follow-up each.
    assert figures["cases"] == 1_000 and figures["requests"] == 2_000 and figures["files"] == 1
    for key in ("seconds", "peak_rss_mb", "lines_per_s", "seconds_vs_target", "memory_vs_target"):
        assert isinstance(figures[key], (int, float))


def test_an_interrupted_import_is_judged_again_by_the_same_file(tmp_path):
    """Its answers are cached already, so nothing is new in the file; the run is still judged
    again because it did not finish (Ctrl-C while judging)."""
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    import_results(store, [results], runner_factory=runner_factory)
    store.set_run_status(export.run_id, "interrupted")
    again = import_results(store, [results], runner_factory=runner_factory)
    assert list(again.summaries) == [export.run_id]
    assert again.status == {export.run_id: "done"}


# ------------------------------------------------------------------ storage


def test_batch_job_verbs(tmp_path):
    """What ``--submit`` records per part file: created, updated (counts as a dict), listed."""
    store = Store(tmp_path / "jobs.db")
    store.record_batch_job("run1", 2, stage=CALLS, remote_batch_id="b2", input_file_id="f2",
                           status="validating")  # fmt: skip
    store.record_batch_job("run1", 1, stage=CALLS, remote_batch_id="b1", input_file_id="f1",
                           status="validating")  # fmt: skip
    store.update_batch_job("run1", 1, status="completed", output_file_id="o1",
                           counts={"total": 3, "completed": 3, "failed": 0})  # fmt: skip
    jobs = store.batch_jobs("run1")
    assert [job["part"] for job in jobs] == [1, 2]
    assert jobs[0]["status"] == "completed" and jobs[0]["output_file_id"] == "o1"
    assert jobs[0]["counts"] == {"total": 3, "completed": 3, "failed": 0}
    assert jobs[1]["counts"] == {} and jobs[1]["remote_batch_id"] == "b2"
    with pytest.raises(ValueError, match="unknown batch job field"):
        store.update_batch_job("run1", 1, owner="x")
    assert store.batch_jobs("other") == []


def test_a_database_from_before_batch_mode_gets_the_tables(tmp_path):
    store = Store(tmp_path / "old.db")
    with store._write():
        store._db.execute("DROP TABLE batch_requests")
        store._db.execute("DROP TABLE batch_jobs")
        store._db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm007_batch'")
    store.close()
    reopened = Store(tmp_path / "old.db")
    assert reopened.batch_jobs("r") == [] and reopened.cached_call_keys(["k"]) == set()
    assert reopened.batch_requests_for_keys(["k"]) == {}


def test_cached_call_keys_are_found_in_chunks(tmp_path):
    """More keys than one IN query takes: every cached one is found, no other."""
    from core.types import Completion
    from storage.batch_verbs import IN_CHUNK
    from storage.cache_verbs import CachedAnswer

    store = Store(tmp_path / "keys.db")
    keys = [f"k{i}" for i in range(2 * IN_CHUNK + 7)]
    store.cache_calls(
        CachedAnswer(key, "u", "m", {}, [], 0, Completion(text="x")) for key in keys[::2]
    )
    assert store.cached_call_keys([*keys, "absent"]) == set(keys[::2])


def test_batch_export_takes_more_inputs_than_a_run(tmp_path, capsys, bow):
    """A run takes at most 5,000 inputs; a batch export (sweeps too large to run
    interactively) up to 50,000."""
    from app.cli.batch import BATCH_MAX_ROWS
    from app.cli.main import main
    from app.inputs.limits import MAX_ROWS

    inputs = tmp_path / "inputs.txt"
    inputs.write_text("".join(f"Line {i} is fine.\n" for i in range(MAX_ROWS + 1)))
    common = [
        "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "sentiment",
        "--relations", "char.delete", "--inputs", str(inputs), "--db", str(tmp_path / "b.db"),
    ]  # fmt: skip
    assert main(["run", *common]) == 2
    assert "at most 5,000 rows" in capsys.readouterr().err
    assert main(["batch", "export", *common, "--out", str(tmp_path / "r.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cases"] == MAX_ROWS + 1
    assert BATCH_MAX_ROWS == 50_000


def test_import_takes_paths_as_strings_or_paths_and_lines_as_strings(tmp_path):
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    lines = results.read_text().splitlines()
    assert import_results(store, [str(results)], runner_factory=runner_factory).answered == len(
        lines
    )
    assert import_results(store, lines, runner_factory=runner_factory).answered == len(lines)
    with pytest.raises(BatchImportError, match="no such file"):
        import_results(store, [str(tmp_path / "nope.jsonl")], runner_factory=runner_factory)


def test_results_of_a_deleted_run_are_cached_and_said_so(tmp_path):
    store, export = _exported_add_good(tmp_path)
    store.delete_run(export.run_id)
    imported = import_results(
        store, [answer_file(export.files, tmp_path / "res.jsonl")], runner_factory=runner_factory
    )
    assert imported.status == {export.run_id: "deleted"} and imported.answered == export.requests
    assert f"run {export.run_id}: deleted" in imported.describe()


def test_cli_export_submit_waits_imports_and_status_reports(capsys, tmp_path, fake_server, bow):
    """`batch export --submit` against a server with the Files + Batches API: the parts are
    uploaded, polled to completion, downloaded and imported — the same cases as `run`; `batch
    status` then shows the stored batch and no next step (the run is judged)."""
    from app.cli.main import main

    inputs = tmp_path / "inputs.txt"
    inputs.write_text("The soup was great.\nThe service was slow.\nI loved the dessert.\n")
    common = [
        "--endpoint", fake_server.base_url, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity,char.leet", "--inputs", str(inputs),
    ]  # fmt: skip
    assert main(["run", *common, "--db", str(tmp_path / "online.db"), "--quiet", "--json"]) == 0
    online = json.loads(capsys.readouterr().out)

    db = str(tmp_path / "batch.db")
    argv = ["batch", "export", *common, "--db", db, "--out", str(tmp_path / "requests.jsonl")]
    assert main([*argv, "--submit", "--poll-interval", "0"]) == 0
    printed = capsys.readouterr().out
    assert "submitted as batch" in printed and "completed" in printed
    assert f"run {online['run_id']}: done" in printed
    assert _case_rows(Store(db), online["run_id"]) == _case_rows(
        Store(tmp_path / "online.db"), online["run_id"]
    )

    assert main(["batch", "status", online["run_id"], "--db", db]) == 0
    status = capsys.readouterr().out
    assert "1 batch: 1 completed" in status
    assert "--wait" not in status  # nothing left to download: the run is judged already


# ------------------------------------------------------------------ refused whole (issue 20)


def _nothing_imported(store: Store, export: BatchExport) -> None:
    assert store.count_calls() == 0
    assert store.run(export.run_id).status == "awaiting_batch"
    assert store.cases_for([export.run_id]) == []


def test_two_lines_answering_one_request_differently_are_refused(tmp_path):
    """Issue 20 item 16: the last of two lines with one custom_id silently won. A conflict is
    refused, naming both lines; the same answer twice is no conflict."""
    store, export = _exported_add_good(tmp_path)
    results = answer_file(export.files, tmp_path / "res.jsonl")
    lines = results.read_text().splitlines()
    first = json.loads(lines[0])
    other = batch_output_line(first["custom_id"], chat_body("negative, on second thought"))
    results.write_text("\n".join([*lines, json.dumps(other)]) + "\n")
    with pytest.raises(BatchImportError, match=f"lines 1 and {len(lines) + 1} answer the same"):
        import_results(store, [results], runner_factory=runner_factory)
    _nothing_imported(store, export)

    # Across two files, each is named.
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(other) + "\n")
    with pytest.raises(BatchImportError) as caught:
        import_results(
            store, [tmp_path / "a.jsonl", tmp_path / "b.jsonl"], runner_factory=runner_factory
        )
    assert str(caught.value).startswith(f"{tmp_path / 'a.jsonl'}: line 1 and ")
    assert f"{tmp_path / 'b.jsonl'} line 1 answer the same request" in str(caught.value)
    _nothing_imported(store, export)

    # The same answer twice (a file imported together with a copy of itself) is fine.
    results.write_text("\n".join([*lines, lines[0]]) + "\n")
    imported = import_results(store, [results], runner_factory=runner_factory)
    assert imported.status == {export.run_id: "done"} and imported.answered == len(lines)


def test_a_file_from_another_database_is_refused_where_it_overlaps(tmp_path):
    """Issue 20 item 17: another database exported more inputs of the same config, so some of
    its custom_ids are this database's too. Those were imported (the rest skipped) and the run
    finished with another database's answers; the file is refused whole."""
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))
    other = Store(tmp_path / "other.db")
    theirs = export_batch(
        other, config, SENTIMENT, SAMPLES, tmp_path / "theirs.jsonl", runner_factory=runner_factory
    )
    store = Store(tmp_path / "mine.db")
    mine = export_batch(
        store,
        config,
        SENTIMENT,
        SAMPLES[:2],
        tmp_path / "mine.jsonl",
        runner_factory=runner_factory,
    )
    results = answer_file(theirs.files, tmp_path / "res.jsonl")
    shared = {json.loads(line)["custom_id"] for line in mine.files[0].read_text().splitlines()}
    assert shared < {json.loads(line)["custom_id"] for line in results.read_text().splitlines()}
    with pytest.raises(BatchImportError) as caught:
        import_results(store, [results], runner_factory=runner_factory)
    message = str(caught.value)
    assert message.startswith(f"{results}: 4 of its 8 results (line ")
    assert "belongs to another run or database (nothing was imported)" in message
    _nothing_imported(store, mine)


def test_a_request_file_imported_as_results_is_refused(tmp_path, capsys):
    """Issue 20 item 18: the request file given to `batch import` made one per-line error per
    request and an ERROR case for each call. It is refused in one line."""
    from app.cli.main import main

    store, export = _exported_add_good(tmp_path)
    with pytest.raises(BatchImportError, match="this is a request file; import the results file"):
        import_results(store, export.files, runner_factory=runner_factory)
    _nothing_imported(store, export)

    assert main(["batch", "import", str(export.files[0]), "--db", str(store.path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {export.files[0]}: this is a request file;")
    assert len(err.strip().splitlines()) == 1
    _nothing_imported(store, export)

    # A request line among result lines is named.
    results = answer_file(export.files, tmp_path / "res.jsonl")
    request = export.files[0].read_text().splitlines()[0]
    results.write_text(results.read_text() + request + "\n")
    with pytest.raises(BatchImportError, match=f"line {len(SAMPLES) * 2 + 1} is a request"):
        import_results(store, [results], runner_factory=runner_factory)
    _nothing_imported(store, export)


@pytest.fixture
def read_only_folder(tmp_path, monkeypatch):
    """A folder nothing may be written into. Root ignores the mode bits, so for root the
    refusal the OS would give (EACCES on open) is simulated for files in that folder."""
    import errno
    import os
    import pathlib

    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real_open = pathlib.Path.open

        def open_(self, mode="r", *args, **kwargs):
            if self.parent == folder and any(flag in mode for flag in "wax+"):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
            return real_open(self, mode, *args, **kwargs)

        monkeypatch.setattr(pathlib.Path, "open", open_)
    yield folder
    folder.chmod(0o755)


def test_an_export_into_a_read_only_folder_says_permission_denied(
    tmp_path, capsys, read_only_folder
):
    """Issue 20 item 19: the failed part's clean-up reported "No such file or directory", and
    the run was left awaiting a file that was never written. Now: "permission denied", exit 2,
    nothing stored, no part left."""
    from app.cli.main import main

    db = tmp_path / "b.db"
    Store(db).close()  # an existing database: nothing of this export may stay in it
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("One fine line.\nAnother fine line.\n")
    out = read_only_folder / "requests.jsonl"
    argv = [
        "batch", "export", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
        "--task", "sentiment", "--relations", "sentence.uppercase", "--inputs", str(inputs),
        "--db", str(db), "--out", str(out),
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {out}: permission denied")
    assert "No such file" not in err and len(err.strip().splitlines()) == 1
    assert Store(db).runs() == []
    assert list(read_only_folder.iterdir()) == []
