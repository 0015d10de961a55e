"""The OpenAI client against a fault-injecting server: every fault becomes a specific result.

Each fault kind of ``tests/fake_openai.py`` is sent to the real client over real HTTP:
transient ones (429 with and without Retry-After, 500, hangs, resets mid-response) are retried
and the call succeeds; permanent ones (401, malformed JSON, empty choices) fail at once with a
reason that says what happened, never an empty "connection failed:" or an exception group.
"""

from __future__ import annotations

import asyncio

import pytest

from app.clients import RetryPolicy
from app.clients.openai_compatible import OpenAIClient, root_cause
from core.types import Endpoint
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

MESSAGES = [{"role": "user", "content": "Review: the food was good."}]
FAST_RETRY = RetryPolicy(max_retries=3, base_delay_s=0.01, total_s=10.0)


def _complete(server: FakeOpenAIServer, retry: RetryPolicy = FAST_RETRY, timeout_s: float = 5.0):
    endpoint = Endpoint(name="f", base_url=server.base_url, model="fake-model", timeout_s=timeout_s)

    async def once():
        client = OpenAIClient(endpoint, retry)
        try:
            return await client.complete(MESSAGES, {"max_tokens": 4})
        finally:
            await client.close()

    return asyncio.run(once())


@pytest.mark.parametrize("fault", ["429", "429-bare", "500", "reset", "hang"])
def test_a_transient_fault_is_retried_and_the_call_succeeds(fault):
    behaviour = FakeBehaviour(scripted_faults=[fault], retry_after_s=0.05, hang_s=1.0)
    with FakeOpenAIServer(behaviour) as server:
        completion = _complete(server, timeout_s=0.3)
    assert completion.ok and completion.text == "positive"
    assert server.stats.chat_calls == 2 and server.stats.faults == 1


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("401", "HTTP 401: invalid api key"),
        ("malformed", "not an OpenAI-compatible response"),
        ("empty", "not an OpenAI-compatible response (no choices)"),
    ],
)
def test_a_permanent_fault_fails_at_once_with_its_reason(fault, reason):
    with FakeOpenAIServer(FakeBehaviour(always_fault=fault)) as server:
        completion = _complete(server)
    assert not completion.ok and completion.error.startswith(reason), completion.error
    assert server.stats.chat_calls == 1  # not retried


def test_a_reset_says_so_after_its_retries():
    with FakeOpenAIServer(FakeBehaviour(always_fault="reset")) as server:
        completion = _complete(server, RetryPolicy(max_retries=1, base_delay_s=0.01))
    assert (
        completion.error.startswith("connection failed: ")
        and "after 2 attempts" in completion.error
    )
    assert completion.error != "connection failed:  (after 2 attempts)"


def test_a_refused_connection_says_refused():
    with FakeOpenAIServer() as server:
        pass  # stopped: the port refuses connections now
    completion = _complete(server, RetryPolicy(max_retries=0))
    assert completion.error == "connection failed: connection refused (after 1 attempt)"


def test_a_hang_says_how_long_it_waited():
    with FakeOpenAIServer(FakeBehaviour(always_fault="hang", hang_s=2.0)) as server:
        completion = _complete(server, RetryPolicy(max_retries=0), timeout_s=0.2)
    assert completion.error == "timed out after 0.2 s (after 1 attempt)"


def test_the_call_budget_bounds_all_attempts_together():
    """A hanging server with many retries left: the call gives up at the budget, not at
    attempts × timeout (here 20 × 0.3 s)."""
    with FakeOpenAIServer(FakeBehaviour(always_fault="hang", hang_s=3.0)) as server:
        completion = _complete(
            server, RetryPolicy(max_retries=20, base_delay_s=0.05, total_s=0.8), timeout_s=0.3
        )
    # The budget, not the attempts, ended it: at most 0.8 s / 0.3 s + 1 attempts were sent.
    assert not completion.ok and "0.8 s time limit per call" in completion.error
    assert server.stats.chat_calls <= 4


def test_the_default_budget_is_two_minutes_at_most():
    assert RetryPolicy().total_s <= 120


def test_root_cause_digs_through_groups_and_empty_messages():
    try:
        try:
            raise ConnectionRefusedError(111, "")
        except OSError as inner:
            raise ExceptionGroup("unhandled errors in a TaskGroup", [RuntimeError("")]) from inner
    except ExceptionGroup as exc:
        assert root_cause(exc) in {"connection refused", "RuntimeError"}
    assert root_cause(RuntimeError("")) == "RuntimeError"
    assert root_cause(ValueError("bad port")) == "bad port"


def test_the_endpoint_says_how_often_to_retry():
    """``Endpoint.retries`` (the endpoint form's and the CLI's --retries) sets the client's
    retries when no policy is given: 1 retry is 2 calls to a server that always answers 500."""
    with FakeOpenAIServer(FakeBehaviour(always_fault="500")) as server:
        endpoint = Endpoint(name="f", base_url=server.base_url, model="fake-model", retries=1)

        async def once():
            client = OpenAIClient(endpoint)
            client.retry.base_delay_s = 0.01
            try:
                return await client.complete(MESSAGES, {})
            finally:
                await client.close()

        completion = asyncio.run(once())
    assert completion.error == "HTTP 500: boom (after 2 attempts)"
    assert server.stats.chat_calls == 2
