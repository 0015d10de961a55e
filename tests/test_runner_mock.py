"""Unit tests of the runner against the in-process mock client (no server, no network).

The HTTP fake server (tests/fake_openai.py) stays for the integration tests in test_runner.py;
these pin the runner's own logic: the call cache, errors as data, de-duplication, cancel.
"""

from __future__ import annotations

import threading

from app.clients.mock import MockClient
from app.engine.calls import make_sync_rewriter
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from relations.base import Expectation, Relation, RelationKind

SENTIMENT = BUILTIN_TASKS["sentiment"]
ENDPOINT = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
SAMPLES = [Sample({"text": t}) for t in ("I love it.", "It broke twice.", "Bad food.", "Fine.")]


def _add_good(text, ctx):
    return text + " Honestly good."


def _shout(text, ctx):
    return text.upper()


ADD_GOOD = Relation(
    id="test.add_good", name="add good", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, transform=_add_good,
)  # fmt: skip
SHOUT = Relation(
    id="test.shout", name="shout", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT, transform=_shout,
)  # fmt: skip


def sentiment_model(messages):
    """A deterministic 'model': positive when the text mentions good things."""
    text = messages[-1]["content"].split("Text:", 1)[-1].lower()
    return "positive" if ("good" in text or "love" in text) else "negative"


def _prompt(text: str) -> str:
    return SENTIMENT.render({"text": text})


def _run(store, embeddings, mock, relations=("test.add_good",), samples=SAMPLES, **kw):
    runner = Runner(
        store, embeddings, custom_relations=[ADD_GOOD, SHOUT], client_factory=mock.factory
    )
    config = RunConfig(ENDPOINT, "sentiment", tuple(relations))
    return runner.run_sync(config, SENTIMENT, samples, **kw)


def test_every_distinct_prompt_is_sent_once_and_judged(store, embeddings):
    mock = MockClient(sentiment_model)
    summary = _run(store, embeddings, mock)
    assert summary.status == "done" and summary.verdicts == {"PASS": 1, "FAIL": 3}
    assert summary.calls_made == 8 == len(mock.calls) == len(set(mock.prompts))
    assert mock.calls[0].params == ENDPOINT.sampling_params()
    assert mock.endpoints == [ENDPOINT] and mock.closed == 1


def test_a_rerun_is_answered_from_the_cache_with_zero_calls(store, embeddings):
    first = _run(store, embeddings, MockClient(sentiment_model))
    again = MockClient(sentiment_model)
    second = _run(store, embeddings, again)
    assert second.run_id == first.run_id and second.status == "done"
    assert again.calls == [] and second.calls_made == 0
    # A new run that shares the source prompts only sends its new follow-ups.
    third_mock = MockClient(sentiment_model)
    third = _run(store, embeddings, third_mock, relations=("test.add_good", "test.shout"))
    assert third.calls_made == len(third_mock.calls) == 4
    assert set(third_mock.prompts) == {_prompt(s.fields["text"].upper()) for s in SAMPLES}
    assert third.cache_hits >= 8


def test_a_failed_call_is_an_error_case_and_is_sent_again_by_the_next_run(store, embeddings):
    bad_food = Sample({"text": "Bad food."})
    broken = _prompt("Bad food.")

    def flaky(messages):
        if messages[-1]["content"] == broken:
            raise ConnectionError("connection reset")
        return sentiment_model(messages)

    first = _run(store, embeddings, MockClient(flaky))
    errors = store.cases_for([first.run_id], verdicts=["ERROR"])
    assert first.status == "done" and first.verdicts["ERROR"] == 1
    assert [c.sample_id for c in errors] == [bad_food.id]
    assert "source: ConnectionError: connection reset" in errors[0].reason
    assert store.count_calls() == 7  # the failure is not cached
    healthy = MockClient(sentiment_model)
    second = _run(store, embeddings, healthy, relations=("test.add_good", "test.shout"))
    assert broken in healthy.prompts and healthy.prompts.count(broken) == 1
    retried = [c for c in store.cases_for([second.run_id]) if c.sample_id == bad_food.id]
    assert {c.verdict for c in retried} <= {"PASS", "FAIL"} and len(retried) == 2


def test_identical_prompts_in_flight_are_sent_once(store, embeddings):
    # Two relations over one sample need the same source prompt at the same moment.
    mock = MockClient(sentiment_model, latency_s=0.05)
    summary = _run(store, embeddings, mock, ("test.add_good", "test.shout"), SAMPLES[:1])
    assert summary.cases == 2 and summary.calls_made == 3
    assert mock.prompts.count(_prompt("I love it.")) == 1


def test_calls_run_concurrently_up_to_the_clients_limit(store, embeddings):
    samples = [Sample({"text": f"Item {i} was good."}) for i in range(10)]
    unlimited = MockClient(sentiment_model, latency_s=0.02)
    _run(store, embeddings, unlimited, samples=samples)
    assert unlimited.max_in_flight > 2
    limited = MockClient(sentiment_model, latency_s=0.02, concurrency=2)
    _run(store, embeddings, limited, relations=("test.shout",), samples=samples)
    assert limited.max_in_flight == 2 and len(limited.calls) == 10  # sources were cached


def test_cancel_keeps_finished_cases_and_a_resume_sends_only_what_is_missing(store, embeddings):
    samples = [Sample({"text": f"Item {i} was good."}) for i in range(12)]
    cancel = threading.Event()

    def stop_after_first_case(progress):
        if progress.done > 0:
            cancel.set()

    slow = MockClient(sentiment_model, latency_s=0.03, concurrency=2)
    first = _run(
        store, embeddings, slow, samples=samples, progress=stop_after_first_case, cancel=cancel
    )
    assert first.status == "cancelled" and 0 < first.cases < 12
    assert store.run(first.run_id).status == "cancelled"
    answered = store.count_calls()
    resumed = MockClient(sentiment_model)
    second = _run(store, embeddings, resumed, samples=samples)
    assert second.run_id == first.run_id and second.status == "done" and second.cases == 12
    assert len(resumed.calls) == second.calls_made == 24 - answered
    assert store.count_calls() == 24
    assert store.run(first.run_id).status == "done"


def test_the_transformation_endpoint_gets_its_own_client(store, embeddings):
    other = Endpoint(name="rewriter", base_url="mock://rewriter", model="rewriter", kind="mock")
    mock = MockClient(sentiment_model)
    runner = Runner(store, embeddings, custom_relations=[ADD_GOOD], client_factory=mock.factory)
    config = RunConfig(ENDPOINT, "sentiment", ("test.add_good",), transformation_endpoint=other)
    runner.run_sync(config, SENTIMENT, SAMPLES[:1])
    assert mock.endpoints == [ENDPOINT, other]


def test_the_sync_rewriter_uses_the_factory_and_the_call_cache(store):
    mock = MockClient({"Rewrite: hi": "hello"})
    rewrite = make_sync_rewriter(store, ENDPOINT, client_factory=mock.factory)
    assert rewrite("Rewrite: hi") == "hello"
    assert rewrite("Rewrite: hi") == "hello"
    assert len(mock.calls) == 1 and mock.calls[0].params["temperature"] == 0.7


def test_a_failed_cache_write_keeps_the_answer(store, embeddings, monkeypatch):
    """A storage hiccup while caching an answer (another writer held the database past every
    retry) loses only the cache entry: the case keeps its verdict instead of becoming ERROR
    "database is locked", as it did when the cache write failure was treated as a failed call."""
    import sqlite3

    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(store, "cache_calls", locked)
    summary = _run(store, embeddings, MockClient(sentiment_model))
    assert "ERROR" not in summary.verdicts and summary.cases == 4 and summary.calls_made == 8


def test_a_rerun_resends_only_the_calls_behind_error_cases(store, embeddings):
    """Two answers fail (their cases are ERROR); the rerun sends exactly those two prompts and
    replaces the ERROR cases, leaving PASS cases and cached answers alone."""
    failing = {_prompt("Bad food."), _prompt("Fine. Honestly good.")}

    def flaky(messages):
        if messages[-1]["content"] in failing:
            return RuntimeError("HTTP 503: overloaded")
        return sentiment_model(messages)

    first = _run(store, embeddings, MockClient(flaky))
    assert first.verdicts["ERROR"] == 2 and first.cases == 4
    assert first.error_kinds == {"RuntimeError: HTTP 503: overloaded": 2}
    assert first.error_line() == (
        "2 of 4 cases ended ERROR — 2× RuntimeError: HTTP 503: overloaded"
    )
    settled = {c.id: c.created_at for c in store.cases_for(verdicts=["PASS", "FAIL"])}
    again = MockClient(sentiment_model)
    second = _run(store, embeddings, again)
    assert sorted(call.prompt for call in again.calls) == sorted(failing)
    assert second.retried_errors == 2 and "ERROR" not in second.verdicts and second.cases == 4
    kept = {c.id: c.created_at for c in store.cases_for() if c.id in settled}
    assert kept == settled
    assert _run(store, embeddings, MockClient(sentiment_model)).calls_made == 0


def test_a_run_with_no_progress_stops_as_interrupted(store, embeddings):
    """Calls that never come back: after ``stall_after_s`` with no finished case the run stops,
    is marked interrupted (resumable), and says why."""
    runner = Runner(
        store,
        embeddings,
        custom_relations=[ADD_GOOD],
        client_factory=MockClient(sentiment_model, latency_s=30).factory,
        stall_after_s=0.3,
    )
    summary = runner.run_sync(
        RunConfig(ENDPOINT, "sentiment", ("test.add_good",)), SENTIMENT, SAMPLES
    )
    assert summary.status == "interrupted" and "no case finished for" in summary.stop_reason
    assert store.run(summary.run_id).status == "interrupted"


def test_time_limits_do_not_change_the_run_id():
    """A rerun with other --timeout/--retries is the same run (it resumes, it is not a new one)."""
    import dataclasses

    patient = dataclasses.replace(ENDPOINT, timeout_s=300.0, retries=0)
    assert RunConfig(patient, "sentiment", ("test.add_good",)).run_id(SAMPLES) == RunConfig(
        ENDPOINT, "sentiment", ("test.add_good",)
    ).run_id(SAMPLES)


def test_a_cancelled_waiter_leaves_a_shared_call_to_its_own_task(store, embeddings, caplog):
    """Two relations ask for each sample's source at once: one task sends it, the other waits
    on the same answer. Cancelling the run while they wait tore the shared answer from under
    the sender ('InvalidStateError' at shutdown, a traceback under the one-line message)."""
    import asyncio
    import logging

    from app.engine.calls import CallCache
    from app.engine.progress import Progress

    async def scenario() -> list[str]:
        mock = MockClient(sentiment_model, latency_s=0.2)
        calls = CallCache(store, mock, ENDPOINT, Progress(0))
        messages = [{"role": "user", "content": _prompt("I love it.")}]
        sender = asyncio.ensure_future(calls.complete(messages, 0))
        await asyncio.sleep(0.01)
        waiter = asyncio.ensure_future(calls.complete(messages, 0))
        await asyncio.sleep(0.01)
        waiter.cancel()
        answer = await sender
        return [answer.text, str(waiter.cancelled())]

    with caplog.at_level(logging.ERROR):
        assert asyncio.run(scenario()) == ["positive", "True"]
    assert "InvalidStateError" not in caplog.text
