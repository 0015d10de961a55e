"""The runner against a real fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import threading

import pytest

from app.clients import RetryPolicy
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from relations.base import Expectation, NotApplicable, Relation, RelationKind
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

SENTIMENT = BUILTIN_TASKS["sentiment"]
SAMPLES = [Sample({"text": t}) for t in ("I love it.", "It broke twice.", "Bad food.", "Fine.")]


def _add_good(text, ctx):
    return text + " Honestly good."


def _only_long(text, ctx):
    if len(text) < 10:
        raise NotApplicable("text shorter than 10 characters")
    return text.upper()


ADD_GOOD = Relation(
    id="test.add_good", name="add good", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, transform=_add_good,
)  # fmt: skip
ONLY_LONG = Relation(
    id="test.only_long", name="only long", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, transform=_only_long,
)  # fmt: skip
CUSTOM = [ADD_GOOD, ONLY_LONG]


def _runner(store, embeddings, retry=None):
    return Runner(store, embeddings, custom_relations=CUSTOM, retry=retry or RetryPolicy(0, 0.0))


def _config(endpoint, relations=("test.add_good",), **kw):
    return RunConfig(endpoint=endpoint, task_id="sentiment", relation_ids=tuple(relations), **kw)


def test_run_records_every_case_with_a_verdict(store, embeddings, fake_endpoint, fake_server):
    summary = _runner(store, embeddings).run_sync(_config(fake_endpoint), SENTIMENT, SAMPLES)
    cases = store.cases_for([summary.run_id])
    assert len(cases) == 4 == summary.cases
    by_text = {" ".join(c.source_input.values()): c for c in cases}
    # "It broke twice." is negative; with "Honestly good." appended the fake model says positive.
    broke = next(c for k, c in by_text.items() if "broke" in k)
    assert broke.verdict == "FAIL"
    assert broke.source_answer == "negative" and broke.followup_answer == "positive"
    assert broke.oracle == "equal_label" and broke.value == 0.0
    love = next(c for k, c in by_text.items() if "love" in k)
    assert love.verdict == "PASS"
    assert summary.verdicts == {"PASS": 1, "FAIL": 3}
    # 4 source prompts + 4 follow-up prompts, each sent once.
    assert fake_server.stats.chat_calls == 8 == summary.calls_made


def test_second_identical_run_makes_zero_calls(store, embeddings, fake_endpoint, fake_server):
    runner = _runner(store, embeddings)
    first = runner.run_sync(_config(fake_endpoint), SENTIMENT, SAMPLES)
    calls_after_first = fake_server.stats.chat_calls
    second = runner.run_sync(_config(fake_endpoint), SENTIMENT, SAMPLES)
    assert second.run_id == first.run_id
    assert second.calls_made == 0 and fake_server.stats.chat_calls == calls_after_first
    # A new run that shares prompts (another relation) reuses the cached source calls.
    third = runner.run_sync(
        _config(fake_endpoint, ("test.add_good", "test.only_long")), SENTIMENT, SAMPLES
    )
    assert third.cache_hits >= 8
    assert third.calls_made == 2  # only the two upper-cased long texts are new


def test_precondition_gives_skip_with_reason(store, embeddings, fake_endpoint):
    summary = _runner(store, embeddings).run_sync(
        _config(fake_endpoint, ("test.only_long",)), SENTIMENT, SAMPLES
    )
    skips = store.cases_for([summary.run_id], verdicts=["SKIP"])
    assert {c.reason for c in skips} == {"text shorter than 10 characters"}
    assert len(skips) == 2  # "Bad food." and "Fine."


def test_identity_repeats_are_separate_samples(store, embeddings, fake_endpoint, fake_server):
    import relations.si  # noqa: F401 - registers si.identity

    summary = _runner(store, embeddings).run_sync(
        _config(fake_endpoint, ("si.identity",), repeats=3), SENTIMENT, SAMPLES[:2]
    )
    assert summary.cases == 6
    # source and follow-up prompts are identical, but each repeat and side is its own call
    assert fake_server.stats.chat_calls == 2 * 3 * 2


def test_unreachable_endpoint_gives_explicit_errors(store, embeddings):
    dead = Endpoint(name="dead", base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    summary = _runner(store, embeddings).run_sync(_config(dead), SENTIMENT, SAMPLES)
    cases = store.cases_for([summary.run_id])
    assert len(cases) == 4 and all(c.verdict == "ERROR" for c in cases)
    assert all("connection failed" in c.reason for c in cases)
    assert store.count_calls() == 0  # failures are not cached: the next run retries them


def test_wrong_model_and_non_openai_server_are_errors_not_crashes(store, embeddings):
    with FakeOpenAIServer(FakeBehaviour(non_openai=True)) as html_server:
        endpoint = Endpoint(name="html", base_url=html_server.base_url, model="fake-model")
        summary = _runner(store, embeddings).run_sync(_config(endpoint), SENTIMENT, SAMPLES[:1])
        assert summary.verdicts == {"ERROR": 1}
    with FakeOpenAIServer() as server:
        endpoint = Endpoint(name="wrong", base_url=server.base_url, model="no-such-model")
        summary = _runner(store, embeddings).run_sync(_config(endpoint), SENTIMENT, SAMPLES[:1])
        (case,) = store.cases_for([summary.run_id])
        assert case.verdict == "ERROR" and "404" in case.reason


def test_faults_are_retried_and_nothing_is_lost(tmp_path, store, embeddings):
    """30% of calls fail (429, 500 or a hang past the timeout); with enough retries every call
    ends answered, so every case gets a real verdict, and the cases equal, column for column, those
    of the same run against a server without faults (ids, inputs, outputs, verdicts)."""
    from app.engine.embedder import EmbeddingCache
    from storage import Store
    from tests.conftest import BagOfWordsEmbedder

    # A call fails for good only if 11 attempts in a row fail: 0.3^11 ≈ 2e-6 per call.
    retry = RetryPolicy(max_retries=10, base_delay_s=0.01)
    samples = [Sample({"text": f"Review {i} is {'good' if i % 3 else 'bad'}."}) for i in range(20)]
    behaviour = FakeBehaviour(fault_rate=0.3, retry_after_s=0.01, fault_seed=7, hang_s=3)
    clean_store = Store(tmp_path / "clean.db")
    with FakeOpenAIServer(behaviour) as server:
        endpoint = Endpoint(name="f", base_url=server.base_url, model="fake-model", timeout_s=1)
        summary = _runner(store, embeddings, retry).run_sync(_config(endpoint), SENTIMENT, samples)
        assert server.stats.faults > 0
        behaviour.fault_rate = 0.0  # the same server (same base URL, so the same run id), healed
        clean_embeddings = EmbeddingCache(BagOfWordsEmbedder(), clean_store)
        clean = _runner(clean_store, clean_embeddings, retry).run_sync(
            _config(endpoint), SENTIMENT, samples
        )
    assert summary.run_id == clean.run_id and summary.status == "done"
    cases = store.cases_for([summary.run_id])
    assert len(cases) == 20
    assert {c.verdict for c in cases} <= {"PASS", "FAIL"}, [c.reason for c in cases]
    assert {c.verdict for c in cases} == {"PASS", "FAIL"}  # "bad" + " Honestly good." flips

    def by_id(found):
        return {c.id: {**c.to_row(), "created_at": None} for c in found}

    assert by_id(cases) == by_id(clean_store.cases_for([clean.run_id]))
    clean_store.close()


def test_cancel_then_resume_repeats_no_finished_call(store, embeddings):
    samples = [Sample({"text": f"Item {i} was good."}) for i in range(12)]
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.05)) as server:
        endpoint = Endpoint(name="f", base_url=server.base_url, model="fake-model", concurrency=2)
        cancel = threading.Event()

        def stop_after_first_flush(progress):
            if progress.done > 0:
                cancel.set()

        runner = _runner(store, embeddings)
        first = runner.run_sync(
            _config(endpoint), SENTIMENT, samples, progress=stop_after_first_flush, cancel=cancel
        )
        assert first.status == "cancelled"
        assert 0 < first.cases < 12
        cached_after_first = store.count_calls()
        calls_after_first = server.stats.chat_calls
        second = runner.run_sync(_config(endpoint), SENTIMENT, samples)
        assert second.status == "done" and second.cases == 12
        # Finished calls are never sent again: the resumed run sends exactly the prompts that
        # were not yet answered (a call cut off in flight by the cancel is sent once more).
        assert server.stats.chat_calls - calls_after_first == 24 - cached_after_first
        assert second.calls_made == 24 - cached_after_first
        assert store.count_calls() == 24
    assert store.run(first.run_id).status == "done"


def test_same_seed_same_followups(tmp_path, embeddings, fake_endpoint):
    import relations.si  # noqa: F401
    from storage import Store

    followups = []
    for name in ("a", "b"):
        other = Store(tmp_path / f"{name}.db")
        summary = Runner(other, embeddings).run_sync(
            RunConfig(fake_endpoint, "sentiment", ("si.academic",), seed=5), SENTIMENT, SAMPLES
        )
        followups.append([c.followup_input for c in other.cases_for([summary.run_id])])
    assert followups[0] == followups[1]


def test_empty_inputs_are_rejected(store, embeddings, fake_endpoint):
    with pytest.raises(ValueError, match="no inputs"):
        _runner(store, embeddings).run_sync(_config(fake_endpoint), SENTIMENT, [])


def test_llm_followup_that_drops_a_number_is_skipped_not_a_violation(store, embeddings):
    import re

    import relations.si  # noqa: F401

    def responder(messages):
        prompt = messages[-1]["content"]
        if "Preserve every number" in prompt:  # the transformation endpoint's rewrite
            return "Sure! Here it is:\nI paid some dollars for it, and it was good."
        return "positive" if "good" in prompt else "negative"

    with FakeOpenAIServer(FakeBehaviour(responder=responder)) as server:
        endpoint = Endpoint(name="f", base_url=server.base_url, model="fake-model")
        summary = _runner(store, embeddings).run_sync(
            _config(endpoint, ("si.paraphrase",)),
            SENTIMENT,
            [Sample({"text": "I paid 40 dollars for it, and it was good."})],
        )
        rewrites = [p for p in server.stats.prompts if "Preserve every number" in p]
    (case,) = store.cases_for([summary.run_id])
    assert case.verdict == "SKIP"
    assert case.reason.startswith("invalid_followup") and re.search(r"\b40\b", case.reason)
    # Best of 3 (issue 23 item 8): three candidates through the transformation endpoint, each
    # dropping 40, so none passes and the first one's reason is the SKIP's.
    assert len(rewrites) == 3
    assert case.details["rewrite"]["tried"] == 3 and case.details["rewrite"]["valid"] == 0


@pytest.mark.timeout(90)
def test_many_llm_rewrites_at_once_do_not_deadlock(store, embeddings):
    # Regression: transformations ran in the loop's default executor and blocked there waiting
    # for their rewrite; with more jobs than threads, the HTTP client had no thread left for its
    # own DNS lookups and the run hung forever.
    def responder(messages):
        prompt = messages[-1]["content"]
        if "<text>" in prompt:
            original = prompt.split("<text>")[1].split("</text>")[0].strip()
            return original.replace("good", "fine")
        return "positive" if ("good" in prompt or "fine" in prompt) else "negative"

    samples = [Sample({"text": f"Order {i} arrived and the tea was good."}) for i in range(8)]
    with FakeOpenAIServer(FakeBehaviour(responder=responder)) as server:
        endpoint = Endpoint(name="f", base_url=server.base_url, model="fake-model")
        summary = _runner(store, embeddings).run_sync(
            _config(endpoint, ("si.paraphrase", "ad.synonym", "si.expand")), SENTIMENT, samples
        )
    assert summary.status == "done" and summary.cases == 24
