"""Tests written to kill the mutants that survived `make mutation` (tests/mutation/run.py).

Each test names the mutation it pins (mutmut's name, or the change in words). The mutants that
no test can kill, because they do not change behaviour, are listed with the reason in
tests/mutation/EQUIVALENT.md.
"""

from __future__ import annotations

import pytest

from app.analysis.proportions import wilson_interval
from core.identity import call_key
from core.thresholds import NUMERIC_WITHIN, SEMANTIC_DIFFERENT, SEMANTIC_SIMILAR

# ------------------------------------------------------------------ proportions, thresholds


def test_wilson_interval_of_a_single_trial_is_an_interval() -> None:
    # `n <= 0` → `n <= 1`: one case is a proportion, not "no data".
    assert wilson_interval(1, 1) == pytest.approx((0.20654931437723745, 1.0))
    assert wilson_interval(0, 1) == pytest.approx((0.0, 0.7934506856227626))


def test_wilson_upper_bound_is_clamped_to_one() -> None:
    # `min(1.0, …)` → `min(2.0, …)`: at 16/16 the unclamped formula gives 1 + 2e-16.
    for n in (16, 40, 46):
        assert wilson_interval(n, n)[1] == 1.0
    assert all(wilson_interval(s, n)[1] <= 1.0 for n in range(1, 80) for s in range(n + 1))


def test_fail_sql_defaults_to_the_case_value_column() -> None:
    # The default column ("c.value") is what storage's threshold queries rely on.
    assert SEMANTIC_SIMILAR.fail_sql() == "c.value < ?"
    assert SEMANTIC_DIFFERENT.fail_sql() == "c.value >= ?"
    assert NUMERIC_WITHIN.fail_sql() == "c.value > ? + 1e-12"


def test_reasons_without_a_source_have_no_suffix_and_ties_read_at_or_above() -> None:
    assert SEMANTIC_SIMILAR.reason(0.5, 0.8) == "cosine 0.500 < θ 0.800"
    # A tie fails "semantic_different" (value ≥ θ): the reason must say ≥, not <.
    assert SEMANTIC_DIFFERENT.reason(0.8, 0.8) == "cosine 0.800 ≥ θ 0.800"
    assert NUMERIC_WITHIN.reason(0.25, 0.1) == "|Δ| 0.25 > ε 0.1"
    assert SEMANTIC_SIMILAR.reason(0.9, 0.8, source="triage") == "cosine 0.900 ≥ θ 0.800 (triage)"


# ------------------------------------------------------------------ runner: planning and pairing


def _relation(relation_id: str):
    from relations.registry import get_relation

    return get_relation(relation_id)


def _llm_and_rule_relations():
    from relations.base import RelationKind
    from relations.registry import list_relations

    relations = list_relations()
    llm = next(r for r in relations if r.kind == RelationKind.LLM)
    rule = next(r for r in relations if r.kind != RelationKind.LLM)
    return llm, rule


def test_job_batches_fill_plan_batch_exactly_and_put_llm_jobs_alone() -> None:
    from app.engine.plan import PLAN_BATCH, job_batches
    from core.types import Sample

    llm, rule = _llm_and_rule_relations()
    sample = Sample({"text": "x"})
    jobs = [(i, sample, rule) for i in range(2 * PLAN_BATCH + 3)]
    jobs.insert(5, (5, sample, llm))
    batches = job_batches(jobs)
    assert [len(b) for b in batches] == [1, PLAN_BATCH, PLAN_BATCH, 3]
    assert batches[0] == [5]
    assert sorted(p for b in batches for p in b) == list(range(len(jobs)))
    assert batches[1] == [*range(5), *range(6, PLAN_BATCH + 1)]
    assert job_batches([]) == []
    assert job_batches([(0, sample, rule)]) == [[0]]
    assert job_batches([(0, sample, llm), (1, sample, llm)]) == [[0], [1]]


def test_partners_are_the_samples_after_the_own_one_wrapping() -> None:
    from app.engine.plan import Partners
    from core.types import Sample

    samples = [Sample({"text": str(i)}) for i in range(4)]
    texts = lambda view: [s.fields["text"] for s in view]  # noqa: E731
    assert texts(Partners(samples, 0)) == ["1", "2", "3"]
    assert texts(Partners(samples, 2)) == ["3", "0", "1"]
    assert texts(Partners(samples, 3)) == ["0", "1", "2"]
    view = Partners(samples, 1)
    assert len(view) == 3
    assert view[0].fields["text"] == "2" and view[2].fields["text"] == "0"
    assert view[-1].fields["text"] == "0" and view[-3].fields["text"] == "2"
    assert texts(view[1:]) == ["3", "0"] and texts(view[::2]) == ["2", "0"]
    for bad in (3, 4, -4):
        with pytest.raises(IndexError, match=r"^partner index out of range$"):
            view[bad]
    assert len(Partners(samples[:1], 0)) == 0 and len(Partners([], 0)) == 0
    with pytest.raises(IndexError):
        Partners(samples[:1], 0)[0]


def _planned(followup, repeat_index: int, source_fields: dict[str, str]):
    from app.engine.plan import PlannedCase
    from core.types import Sample

    return PlannedCase(
        case_id="c",
        sample=Sample(dict(source_fields)),
        relation=_relation("si.identity"),
        followup_index=0,
        repeat_index=repeat_index,
        followup=followup,
        source_fields=dict(source_fields),
    )


def test_case_calls_key_each_call_by_its_own_prompt_and_repeat() -> None:
    from app.engine.calls import case_calls
    from core.tasks import BUILTIN_TASKS
    from relations.base import FollowUp

    task = BUILTIN_TASKS["sentiment"]
    source = {"text": "I like it."}
    followup = FollowUp(
        {"text": "I LIKE IT."},
        "text",
        companions={"partner": {"text": "Other."}, "partner_followup": {"text": "OTHER."}},
    )
    for repeat in (0, 2):
        calls = case_calls(task, _planned(followup, repeat, source))
        assert calls == {
            "source": (task.messages(source), repeat),
            "followup": (task.messages({"text": "I LIKE IT."}), repeat),
            "partner": (task.messages({"text": "Other."}), repeat),
            "partner_followup": (task.messages({"text": "OTHER."}), repeat),
        }
    # The preamble goes into the follow-up's prompt.
    with_preamble = FollowUp({"text": "I like it."}, "text", preamble="Rules: none.")
    calls = case_calls(task, _planned(with_preamble, 1, source))
    assert calls["followup"] == (task.messages(source, "Rules: none."), 1)
    assert calls["source"] == (task.messages(source), 1)
    # si.identity: the same prompt twice is a separate sample of the model.
    identity = FollowUp(dict(source), "text")
    for repeat in (0, 3):
        calls = case_calls(task, _planned(identity, repeat, source))
        assert calls["source"] == (task.messages(source), repeat)
        assert calls["followup"] == (task.messages(source), 10_000 + repeat)
        assert set(calls) == {"source", "followup"}


def test_call_cache_hands_new_answers_to_its_sink_once_per_timer(tmp_path) -> None:
    """``CallCache.hand_answers_to``: new answers reach the sink a moment after they arrive, all
    of one timer's answers in one batch, each exactly once, and failed calls never."""
    import asyncio

    from app.clients.mock import MockClient
    from app.engine.calls import CallCache
    from app.engine.progress import Progress
    from core.types import Completion, Endpoint
    from storage import Store

    endpoint = Endpoint(name="mock", base_url="mock://m", model="m", kind="mock")
    client = MockClient(lambda messages: "answer to " + messages[-1]["content"])
    store = Store(tmp_path / "sink.db")
    batches: list[list] = []

    async def scenario() -> None:
        calls = CallCache(store, client, endpoint, Progress(0), write_through=False)
        calls.hand_answers_to(batches.append, after_s=0.05)
        first = await asyncio.gather(
            calls.complete([{"role": "user", "content": "a"}], 0),
            calls.complete([{"role": "user", "content": "b"}], 0),
        )
        assert [c.text for c in first] == ["answer to a", "answer to b"]
        await asyncio.sleep(0.2)
        await calls.complete([{"role": "user", "content": "c"}], 1)
        await asyncio.sleep(0.2)
        # A failed call is not an answer to keep.
        client.script = lambda messages: Completion(text=None, error="down")
        await calls.complete([{"role": "user", "content": "d"}], 0)
        await asyncio.sleep(0.2)
        calls.stop_handing_over()
        assert calls.take_answers() == []

    try:
        asyncio.run(scenario())
    finally:
        store.close()
    assert [[(a.messages[-1]["content"], a.repeat_index) for a in b] for b in batches] == [
        [("a", 0), ("b", 0)],
        [("c", 1)],
    ]
    assert all(
        a.completion.text == "answer to " + a.messages[-1]["content"] for b in batches for a in b
    )


# ------------------------------------------------------------------ store: busy retries


def test_a_busy_write_is_retried_with_growing_pauses_then_gives_up(monkeypatch) -> None:
    import sqlite3

    from storage import busy

    pauses: list[float] = []
    monkeypatch.setattr(busy.time, "sleep", pauses.append)

    attempts: list[int] = []

    def busy_twice() -> None:
        attempts.append(1)
        if len(attempts) <= 2:
            raise sqlite3.OperationalError("database is locked")

    busy.retry_when_busy(busy_twice)
    assert len(attempts) == 3
    assert pauses == [busy.BUSY_PAUSE_S * 1, busy.BUSY_PAUSE_S * 2]

    pauses.clear()
    attempts.clear()

    def always_busy() -> None:
        attempts.append(1)
        raise sqlite3.OperationalError("database is busy")

    with pytest.raises(sqlite3.OperationalError, match="busy"):
        busy.retry_when_busy(always_busy)
    assert len(attempts) == busy.BUSY_RETRIES == 5
    assert pauses == [busy.BUSY_PAUSE_S * n for n in range(1, 5)]

    attempts.clear()

    def broken() -> None:
        attempts.append(1)
        raise sqlite3.OperationalError("no such table: cases")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        busy.retry_when_busy(broken)
    assert len(attempts) == 1

    done: list[int] = []
    busy.retry_when_busy(lambda: done.append(1))
    assert done == [1]


def test_record_cases_keeps_a_given_created_at_and_names_a_deleted_run(tmp_path) -> None:
    from dataclasses import replace

    from storage import Store
    from storage.errors import RunDeletedError
    from tests.triage_data import make_case, save_runs

    store = Store(tmp_path / "cases.db")
    try:
        stamped = replace(make_case("a1"), created_at="2026-01-02T03:04:05+00:00")
        save_runs(store, [stamped, make_case("a2", index=2)])
        assert store.case("a1").created_at == "2026-01-02T03:04:05+00:00"
        assert store.case("a2").created_at not in (None, "2026-01-02T03:04:05+00:00")
        store.record_cases([])  # nothing to write is no write at all
        orphan = replace(make_case("b1", run_id="run-gone"), created_at=None)
        with pytest.raises(RunDeletedError, match="run-gone"):
            store.record_cases([orphan])
        assert store.case("b1") is None
    finally:
        store.close()


# ------------------------------------------------------------------ runner: plans and the call cache


def _test_relation(relation_id: str, build):
    from relations.base import Expectation, Relation, RelationKind

    return Relation(
        id=relation_id, name=relation_id, family="test", category="test", description="d",
        example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, build=build,
    )  # fmt: skip


def _boom(sample, task_id, fields, ctx):
    raise ValueError("boom")


def _nothing(sample, task_id, fields, ctx):
    return []


def test_planned_cases_have_their_ids_sources_and_reasons(tmp_path) -> None:
    """Case ids are the first 20 hex digits of their content hash; a relation that derives the
    source (nli_transitivity) stores that source; a relation that raises is an ERROR named by the
    exception; one that makes nothing is a SKIP with its reason and target ``*``."""
    from app.clients.mock import MockClient
    from app.engine.embedder import EmbeddingCache
    from app.engine.runner import Runner
    from core.run_config import RunConfig
    from core.tasks import BUILTIN_TASKS
    from core.types import Endpoint, Sample, content_hash
    from storage import Store
    from tests.conftest import BagOfWordsEmbedder

    endpoint = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
    task = BUILTIN_TASKS["nli"]
    premises = ("A dog runs.", "An animal runs.", "Something moves.")
    samples = [Sample({"premise": p, "hypothesis": "It is night."}) for p in premises]
    relations = (_test_relation("test.boom", _boom), _test_relation("test.nothing", _nothing))
    store = Store(tmp_path / "plan.db")
    try:
        runner = Runner(
            store,
            EmbeddingCache(BagOfWordsEmbedder(), store),
            custom_relations=list(relations),
            client_factory=MockClient(lambda m: "entailment").factory,
        )
        config = RunConfig(endpoint, "nli", ("multi.nli_transitivity", "test.boom", "test.nothing"))
        summary = runner.run_sync(config, task, samples)
        cases = store.cases_for([summary.run_id])
    finally:
        store.close()
    assert len(cases) == 9
    for case in cases:
        assert (
            case.id
            == content_hash(
                [summary.run_id, case.sample_id, case.relation_id, case.followup_index, 0]
            )[:20]
        )
    by = {(c.relation_id, c.source_input["premise"]): c for c in cases}
    first = by[("multi.nli_transitivity", premises[0])]
    assert first.source_input == {"premise": premises[0], "hypothesis": premises[1]}
    assert first.followup_input == {"premise": premises[0], "hypothesis": premises[2]}
    boom = by[("test.boom", premises[0])]
    assert boom.verdict.value == "ERROR" and boom.reason == "ValueError: boom"
    nothing = by[("test.nothing", premises[0])]
    assert nothing.verdict.value == "SKIP" and nothing.target == "*"
    assert nothing.reason == "the relation made no follow-up"


def _call_cache(tmp_path, client, **kw):
    from app.engine.calls import CallCache
    from app.engine.progress import Progress
    from core.types import Endpoint
    from storage import Store

    endpoint = Endpoint(name="mock", base_url="mock://m", model="m", kind="mock", temperature=0.3)
    store = Store(tmp_path / "calls.db")
    return store, CallCache(store, client, endpoint, Progress(0), **kw)


def test_call_cache_counts_hits_stores_params_and_turns_exceptions_into_errors(tmp_path) -> None:
    import asyncio

    from app.clients.mock import MockClient
    from app.engine.calls import CallCache
    from app.engine.progress import Progress

    class Adaptive(MockClient):
        def live_load(self):
            return "load report"

    class Raising(MockClient):
        async def complete(self, messages, params):
            raise RuntimeError("socket closed")

    client = Adaptive(lambda m: "ok")
    store, calls = _call_cache(tmp_path, client)
    messages = [{"role": "user", "content": "hi"}]
    try:
        first = asyncio.run(calls.complete(messages, 0))
        assert first.text == "ok" and calls.progress.calls_made == 1
        assert calls.progress.cache_hits == 0 and calls.progress.load == "load report"
        (row,) = store._query("SELECT params, model, repeat_index FROM calls")
        assert row["model"] == "m" and row["repeat_index"] == 0
        assert row["params"] is not None and '"temperature": 0.3' in row["params"]
        again = CallCache(store, MockClient(), calls.endpoint, Progress(0))
        assert asyncio.run(again.complete(messages, 0)).text == "ok"
        assert again.progress.cache_hits == 1 and again.progress.calls_made == 0
        failing = CallCache(store, Raising(), calls.endpoint, Progress(0))
        result = asyncio.run(failing.complete(messages, 1))
        assert result.text is None and not result.ok
        assert result.error == "RuntimeError: socket closed"
    finally:
        store.close()


def test_call_cache_without_a_sink_keeps_its_answers_for_take_answers(tmp_path) -> None:
    import asyncio

    from app.clients.mock import MockClient

    store, calls = _call_cache(tmp_path, MockClient(lambda m: "ok"), write_through=False)

    async def scenario():
        await calls.complete([{"role": "user", "content": "hi"}], 0)
        await asyncio.sleep(0.2)  # past ANSWERS_AFTER_S: no timer may hand them to nobody
        return calls.take_answers()

    try:
        answers = asyncio.run(scenario())
    finally:
        store.close()
    assert [a.messages[-1]["content"] for a in answers] == ["hi"]


def test_call_cache_hands_nothing_when_the_answers_were_taken_first(tmp_path) -> None:
    import asyncio

    from app.clients.mock import MockClient

    store, calls = _call_cache(tmp_path, MockClient(lambda m: "ok"), write_through=False)
    batches: list = []

    async def scenario():
        calls.hand_answers_to(batches.append, after_s=0.05)
        await calls.complete([{"role": "user", "content": "hi"}], 0)
        taken = calls.take_answers()
        await asyncio.sleep(0.2)
        return taken

    try:
        taken = asyncio.run(scenario())
    finally:
        store.close()
    assert len(taken) == 1 and batches == []


def test_an_empty_rewrite_is_skipped_as_empty(tmp_path) -> None:
    """``rewrite`` returns the rewriter's text, or "" for none: an empty paraphrase is a SKIP
    that says so (mutant: ``completion.text or "XXXX"`` made it a follow-up)."""
    from core.run_config import RunConfig
    from core.tasks import BUILTIN_TASKS
    from core.types import Endpoint, Sample
    from storage import Store
    from tests.conftest import mock_runner

    model = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
    rewriter = Endpoint(name="rw", base_url="mock://rw", model="rw", kind="mock")

    def respond(messages):
        return "positive" if "Text:" in messages[-1]["content"] else ""

    store = Store(tmp_path / "empty.db")
    try:
        runner = mock_runner(store, respond)
        config = RunConfig(model, "sentiment", ("si.paraphrase",), transformation_endpoint=rewriter)
        summary = runner.run_sync(
            config, BUILTIN_TASKS["sentiment"], [Sample({"text": "I love this phone."})]
        )
        (case,) = store.cases_for([summary.run_id])
    finally:
        store.close()
    assert case.verdict.value == "SKIP" and case.followup_input is None
    # best of 3 by default: every candidate came back empty, and the reason says so
    assert (
        case.reason == "the transformation endpoint returned an empty paraphrase (all 3 candidates)"
    )


# ------------------------------------------------------------------ store: call keys


def test_call_key_is_the_sha256_of_the_documented_json() -> None:
    """The key is persisted (every database's call cache, every batch file's ``custom_id``): it is
    recomputed here from its definition, not from the code, and pinned. Renaming one of its JSON
    fields would silently turn every stored answer into a cache miss."""
    import hashlib
    import json

    params = {"temperature": 0.0, "max_tokens": 64}
    messages = [{"role": "user", "content": "hi"}]
    document = {
        "base_url": "http://host/v1",
        "messages": messages,
        "model": "model-a",
        "params": params,
        "repeat": 2,
    }
    payload = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    expected = hashlib.sha256(payload.encode()).hexdigest()
    assert expected == "e08cca55de71bce9c53bd0c9e8fd0b0b3b6d8b5bce52664b8be3f3b211c6aab1"
    assert call_key("http://host/v1/", "model-a", params, messages, 2) == expected
    assert call_key("http://host/v1", "model-a", params, messages, 2) == expected


def test_call_key_drops_trailing_slashes_only() -> None:

    def key(base_url: str) -> str:
        return call_key(base_url, "m", {}, [], 0)

    assert key("http://a/v1//") == key("http://a/v1/") == key("http://a/v1")
    assert key("http://a/v1 ") != key("http://a/v1")  # not whitespace (rstrip())
    assert key("http://a/X") != key("http://a/")  # nothing but "/" (rstrip("XX/XX"))
    assert key("/a") != key("a")  # leading slashes stay (lstrip)


# ------------------------------------------------------------------ batch: what the CLI prints


def _summary(run_id: str = "r1", status: str = "done"):
    from app.engine.progress import RunSummary

    return RunSummary(
        run_id, status, cases=3, new_cases=3, calls_made=0, cache_hits=6,
        verdicts={"PASS": 2, "FAIL": 1}, elapsed_s=0.5,
    )  # fmt: skip


def test_batch_export_describes_and_serialises_what_it_did(tmp_path) -> None:
    from pathlib import Path

    from app.batch.export import CALLS, REWRITES, BatchExport

    parts = [Path("out.part1.jsonl"), Path("out.part2.jsonl")]
    written = BatchExport("r1", CALLS, parts, 7, 2, 5, lines_per_file=[4, 3])
    assert written.describe() == [
        "run r1: 5 cases planned",
        "wrote 4 requests to out.part1.jsonl",
        "wrote 3 requests to out.part2.jsonl",
        "2 calls were answered already and are not written",
    ]
    assert written.to_dict() == {
        "run_id": "r1",
        "stage": "calls",
        "files": ["out.part1.jsonl", "out.part2.jsonl"],
        "lines_per_file": [4, 3],
        "requests": 7,
        "cached": 2,
        "cases": 5,
        "status": "awaiting_batch",
    }
    assert BatchExport("r1", CALLS, [], 3, 0, 5, lines_per_file=[]).describe() == [
        "run r1: 5 cases planned"
    ]
    rewrites = BatchExport("r2", REWRITES, [Path("rw.jsonl")], 1, 0, 2, lines_per_file=[1])
    assert rewrites.describe() == [
        "run r2: 2 cases planned",
        "stage 1 of 2: these are the rewrites LLM-prompted relations need; import the "
        "results, then export again",
        "wrote 1 requests to rw.jsonl",
    ]
    assert rewrites.to_dict()["stage"] == "rewrites"
    judged = BatchExport("r1", CALLS, [], 0, 6, 3, summary=_summary())
    assert judged.describe() == [
        "run r1: 3 cases planned",
        "0 requests: all 6 calls are answered already",
        "run r1 judged from the call cache: done",
    ]
    assert judged.to_dict()["status"] == "done" and judged.to_dict()["files"] == []
    assert BatchExport("r1", CALLS, [], 0, 6, 3).describe()[1:] == [
        "0 requests: all 6 calls are answered already"
    ]


def test_batch_import_describes_and_serialises_what_it_did() -> None:
    from app.batch.importer import BatchImport, _numbers

    done = BatchImport(
        run_ids=["r1", "r2", "r3"],
        answered=9,
        line_errors={"k1": "rate limited", "k2": "bad request"},
        invalid_lines=[2, 4, 6, 8, 10, 12],
        missing={"r2": ["k1", "k2"]},
        status={"r1": "done", "r2": "awaiting_batch"},
        summaries={"r1": _summary()},
        rewrites_answered=["r3"],
    )
    assert done.describe() == [
        "answered 9 calls; 2 result lines were errors",
        "  first error: rate limited",
        "6 lines are not result lines and were skipped (line 2, 4, 6, 8, 10, …)",
        "run r1: done, 3 cases (FAIL 1, PASS 2)",
        "run r2: awaiting_batch; 2 calls still missing (import their results to finish)",
        "run r3: stage 1 (rewrites) answered; run `batch export` again for stage 2",
    ]
    assert done.to_dict() == {
        "run_ids": ["r1", "r2", "r3"],
        "answered": 9,
        "line_errors": {"k1": "rate limited", "k2": "bad request"},
        "invalid_lines": [2, 4, 6, 8, 10, 12],
        "missing": {"r2": ["k1", "k2"]},
        "status": {"r1": "done", "r2": "awaiting_batch"},
        "summaries": {"r1": _summary().to_dict()},
        "rewrites_answered": ["r3"],
    }
    assert BatchImport(answered=1).describe() == ["answered 1 calls; 0 result lines were errors"]
    assert _numbers([1, 2, 3, 4, 5]) == "1, 2, 3, 4, 5"
    assert _numbers([7]) == "7" and _numbers([]) == ""


# ------------------------------------------------------------------ batch: the stored export


def test_a_batch_export_stores_its_run_stamped_with_dataset_and_plan(tmp_path) -> None:
    """The exported run is stored with the engine stamp (a new run), its dataset, the number of
    planned cases, and ``awaiting_batch``; skipped cases (the gate's SKIP) ask for nothing."""
    from dataclasses import replace

    from app.batch.export import export_batch
    from core.engine_version import ENGINE_VERSION
    from core.run_config import RunConfig
    from storage import Store
    from tests.test_batch import ENDPOINT, SAMPLES, SENTIMENT, runner_factory

    store = Store(tmp_path / "export.db")
    try:
        config = replace(
            RunConfig(ENDPOINT, "sentiment", ("test.add_good", "test.same")), dataset="demo-set"
        )
        export = export_batch(
            store, config, SENTIMENT, SAMPLES, tmp_path / "r.jsonl", runner_factory=runner_factory
        )
        run = store.run(export.run_id)
        assert run.engine_version == ENGINE_VERSION
        assert run.dataset == "demo-set"
        assert run.n_planned == export.cases == 8
        assert run.status == "awaiting_batch"
        # 4 sources + 4 follow-ups of test.add_good; test.same's cases are SKIPped, never asked.
        assert export.requests == 8
    finally:
        store.close()


def test_an_import_of_two_files_keeps_both_files_unreadable_lines_and_whole_calls(tmp_path):
    """Each file's unreadable lines are reported (by number, in file order), and each answer is
    cached with its request's params, messages and the result's usage."""
    import json

    from app.batch.importer import import_results
    from tests.test_batch import _exported_add_good, answer_file, runner_factory

    store, export = _exported_add_good(tmp_path)
    try:
        lines = answer_file(export.files, tmp_path / "all.jsonl").read_text().splitlines()
        with_usage = [json.loads(line) for line in lines]
        for line in with_usage:
            line["response"]["body"]["usage"] = {"prompt_tokens": 3, "completion_tokens": 1}
        first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
        first.write_text("\n".join([json.dumps(x) for x in with_usage[:4]] + ["not json"]) + "\n")
        second.write_text("\n".join(["{broken", *(json.dumps(x) for x in with_usage[4:])]) + "\n")
        outcome = import_results(store, [first, second], runner_factory=runner_factory)
        assert outcome.invalid_lines == [5, 1] and outcome.answered == 8
        rows = store._query("SELECT params, messages, usage FROM calls")
        assert len(rows) == 8
        for row in rows:
            assert json.loads(row["params"]) == export_params(store)
            assert json.loads(row["messages"])[-1]["role"] == "user"
            assert json.loads(row["usage"]) == {"prompt_tokens": 3, "completion_tokens": 1}
    finally:
        store.close()


def export_params(store) -> dict:
    import json

    (row,) = store._query("SELECT DISTINCT params FROM batch_requests")
    return json.loads(row["params"])


def test_conflicting_result_lines_are_refused_with_their_count() -> None:
    """``_refuse_conflicts`` names the first conflict exactly and counts the others; an error
    line beside an answer is no conflict."""
    from app.batch.formats import ParsedResults, ResultLine
    from app.batch.importer import BatchImportError, _refuse_conflicts

    def line(key, text, number, error=None):
        return ResultLine(key=key, text=text, error=error, line_number=number)

    key = "k" * 20
    one = ParsedResults(results=[line(key, "a", 1), line(key, None, 2, error="boom")])
    assert _refuse_conflicts([("one.jsonl", one)]) is None
    twice = ParsedResults(results=[line(key, "a", 1), line(key, "b", 3), line("j" * 20, "x", 4)])
    with pytest.raises(BatchImportError) as refused:
        _refuse_conflicts([("one.jsonl", twice)])
    assert str(refused.value) == (
        f"one.jsonl: lines 1 and 3 answer the same request (custom_id {key[:16]}…) with "
        "different text; keep one of them and import again (nothing was imported)"
    )
    other = ParsedResults(results=[line(key, "c", 2), line("j" * 20, "y", 5)])
    with pytest.raises(BatchImportError) as refused:
        _refuse_conflicts([("one.jsonl", twice), ("two.jsonl", other)])
    assert str(refused.value).startswith("one.jsonl: lines 1 and 3 answer")
    assert "different text (2 more such lines); keep one" in str(refused.value)


def test_a_failed_cache_lookup_makes_each_waiting_call_an_error(tmp_path) -> None:
    """``_look_up_batch``: when the store cannot be read, every call waiting on that lookup
    ends as an ERROR completion naming the failure (none hangs, none is sent)."""
    import asyncio
    import sqlite3

    from app.clients.mock import MockClient

    client = MockClient(lambda m: "ok")
    store, calls = _call_cache(tmp_path, client)

    def unreadable(keys):
        raise sqlite3.OperationalError("disk I/O error")

    store.cached_calls = unreadable

    async def scenario():
        return await asyncio.wait_for(
            asyncio.gather(
                calls.complete([{"role": "user", "content": "a"}], 0),
                calls.complete([{"role": "user", "content": "b"}], 0),
            ),
            timeout=10,
        )

    try:
        results = asyncio.run(scenario())
    finally:
        store.close()
    assert [r.error for r in results] == ["OperationalError: disk I/O error"] * 2
    assert client.calls == []
