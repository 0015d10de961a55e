"""Adaptive concurrency: the AIMD window's state machine, rate budgets, and the client using it.

The state machine and the budgets are driven by hand (a fake clock, explicit outcomes): no test
here asserts a wall-clock time.
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque

import pytest

from app.cli.main import main
from app.cli.run import StderrProgress
from app.clients import make_client
from app.clients.limiter import (
    PROBE_MIN_WINDOW,
    PROBE_SLOWDOWN,
    AdaptiveLimiter,
    AimdWindow,
    LiveLoad,
    Outcome,
    TokenBucket,
    estimate_tokens,
)
from app.engine.calls import CallCache
from app.engine.progress import Progress
from app.ui.endpoints_view import parse_budget
from core.run_config import RunConfig
from core.types import Endpoint, Sample
from storage import Store
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fill(window: AimdWindow) -> list[int]:
    """Start calls until the window is full; their sequence numbers."""
    seqs = []
    while window.has_room():
        seqs.append(window.start())
    return seqs


def answer_busy(window: AimdWindow, in_flight: deque, answers: int) -> None:
    """The oldest calls are answered one by one, each place refilled at once (a busy run)."""
    for _ in range(answers):
        window.finish(in_flight.popleft(), Outcome.ANSWERED)
        in_flight.extend(fill(window))


# ------------------------------------------------------------ the window


def test_the_window_starts_at_the_configured_concurrency_and_never_passes_the_ceiling():
    window = AimdWindow(initial=4, ceiling=6)
    in_flight = deque(fill(window))
    assert window.window == 4 and len(in_flight) == 4
    answer_busy(window, in_flight, 200)  # an endpoint answering everything: up to the ceiling
    assert window.window == 6 and window.in_flight == 6
    assert AimdWindow(initial=24).ceiling == 24  # by default the configured value is the ceiling
    assert AimdWindow(initial=30, ceiling=8).window == 8


def test_growth_is_about_one_per_round_of_answers_and_only_while_every_slot_is_busy():
    window = AimdWindow(initial=4, ceiling=10)
    in_flight = deque(fill(window))
    answer_busy(window, in_flight, 3)
    assert window.window == 4
    answer_busy(window, in_flight, 2)  # 4 + 1/4 + 1/4.25 + ... passes 5 at the fifth answer
    assert window.window == 5
    idle = AimdWindow(initial=4, ceiling=10)
    for _ in range(50):  # one call at a time: the endpoint is not shown to keep up with more
        idle.finish(idle.start(), Outcome.ANSWERED)
    assert idle.window == 4


def test_a_429_shrinks_the_window_to_the_calls_still_in_flight():
    """24 sent to a server that takes 8: the 16 refusals come back while 8 are answered; the
    window ends at the 8 still in flight, not at 24 × 0.9^16 or at 1."""
    window = AimdWindow(initial=24)
    seqs = fill(window)
    for seq in seqs[8:]:
        window.finish(seq, Outcome.OVERLOADED)
    assert window.window == 8 and window.in_flight == 8
    assert not window.has_room()


def test_one_round_of_429s_applies_the_factor_once():
    window = AimdWindow(initial=20)
    seqs = fill(window)
    window.finish(seqs[0], Outcome.OVERLOADED)  # new round: 20 × 0.9 = 18
    assert window.window == 18
    window.finish(seqs[1], Outcome.OVERLOADED)  # same round, 18 still in flight: stays 18
    assert window.window == 18
    later = window.start()  # a call sent after the decrease starts a new round
    window.finish(later, Outcome.OVERLOADED)
    assert window.window == int(18 * 0.9)


def test_a_timeout_halves_the_window_once_per_round():
    window = AimdWindow(initial=16)
    seqs = fill(window)
    for seq in seqs[:5]:
        window.finish(seq, Outcome.TIMED_OUT)
    assert window.window == 8


def test_other_errors_say_nothing_about_load():
    window = AimdWindow(initial=8)
    for seq in fill(window):
        window.finish(seq, Outcome.OTHER)
    assert window.window == 8 and window.in_flight == 0


def test_probing_past_the_last_overload_is_slow():
    """At a server taking 8, an overload at 9 in flight leaves a window of 8; getting back to 9
    takes about PROBE_SLOWDOWN rounds of answers (so about one retried call per ten rounds),
    where growing from 4 to 5 took one round."""
    window = AimdWindow(initial=9)
    in_flight = deque(fill(window))
    window.finish(in_flight.pop(), Outcome.OVERLOADED)
    assert window.window == 8 and window.overload_mark == 9
    answers = 0
    while window.window == 8:
        answer_busy(window, in_flight, 1)
        answers += 1
    assert answers >= 8 * PROBE_SLOWDOWN * 0.9


def test_a_small_window_probes_no_more_often_than_a_window_of_eight():
    """At a server taking 3, probing at the pace of 3 × 10 answers would refuse one call in 30
    (over the 5 % target); the floor keeps it to one in about 80."""
    window = AimdWindow(initial=4)
    in_flight = deque(fill(window))
    window.finish(in_flight.pop(), Outcome.OVERLOADED)
    assert window.window == 3
    answers = 0
    while window.window == 3:
        answer_busy(window, in_flight, 1)
        answers += 1
    assert answers >= PROBE_MIN_WINDOW * PROBE_SLOWDOWN * 0.9


def test_well_past_the_last_overload_growth_is_fast_again():
    window = AimdWindow(initial=4, ceiling=40)
    window.overload_mark = 2.0  # long ago, at a server that has since grown
    in_flight = deque(fill(window))
    answer_busy(window, in_flight, 5)
    assert window.window == 5


# ------------------------------------------------------------ budgets


def test_a_requests_per_minute_budget_paces_calls():
    clock = FakeClock()
    bucket = TokenBucket(per_minute=60, clock=clock)  # one a second
    assert bucket.reserve(1) == 0.0
    assert bucket.reserve(1) == pytest.approx(1.0)
    assert bucket.reserve(1) == pytest.approx(2.0)
    clock.now += 10  # refills, but saves up at most one second's worth
    assert bucket.reserve(1) == 0.0
    assert bucket.reserve(1) == pytest.approx(1.0)


def test_a_tokens_per_minute_budget_gets_back_what_a_call_did_not_use():
    clock = FakeClock()
    bucket = TokenBucket(per_minute=6000, clock=clock)  # 100 tokens a second
    assert bucket.reserve(300) == pytest.approx(2.0)  # larger than a second's worth: waits
    bucket.refund(250)  # it used 50: the level is back at 50
    assert bucket.reserve(50) == 0.0
    assert bucket.reserve(50) == pytest.approx(0.5)


def test_a_call_reserves_its_prompt_and_max_tokens():
    messages = [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 40}]
    assert estimate_tokens(messages, max_tokens=256) == 80 // 4 + 1 + 256


def test_a_retry_after_pauses_new_calls_until_it_has_passed():
    clock = FakeClock()
    limiter = AdaptiveLimiter(4, clock=clock)

    async def scenario() -> None:
        async with limiter.slot() as slot:
            slot.overloaded(retry_after_s=5.0)
        assert not limiter._admits()
        clock.now += 5.0
        assert limiter._admits()

    asyncio.run(scenario())


def test_the_limiter_never_admits_more_than_the_window():
    limiter = AdaptiveLimiter(2)
    peak = 0
    inside = 0

    async def call() -> None:
        nonlocal peak, inside
        async with limiter.slot() as slot:
            inside += 1
            peak = max(peak, inside)
            await asyncio.sleep(0)
            inside -= 1
            slot.answered()

    async def scenario() -> None:
        await asyncio.gather(*(call() for _ in range(20)))

    asyncio.run(scenario())
    assert peak == 2 and limiter.window.in_flight == 0


def test_a_cancelled_waiter_gives_its_place_back():
    limiter = AdaptiveLimiter(1)

    async def scenario() -> None:
        async with limiter.slot():
            waiter = asyncio.ensure_future(limiter._enter())
            await asyncio.sleep(0)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        assert limiter.window.in_flight == 0 and not limiter._waiters

    asyncio.run(scenario())


# ------------------------------------------------------------ the client against a real server


def test_the_openai_client_adapts_to_a_server_that_takes_two_calls_at_once():
    """Regression: with a fixed semaphore of 6 against a server taking 2, every round sent 4
    calls into 429s. Adaptive, the window settles at the server's capacity and the refusals are
    few; every call is answered."""
    behaviour = FakeBehaviour(latency_s=0.02, max_concurrent=2)
    with FakeOpenAIServer(behaviour) as server:
        endpoint = Endpoint(
            name="n", base_url=server.base_url, model="fake-model", concurrency=6, retries=10
        )

        async def scenario():
            client = make_client(endpoint)
            results = await asyncio.gather(
                *(
                    client.complete([{"role": "user", "content": f"call {i}"}], {})
                    for i in range(40)
                )
            )
            load = client.live_load()
            await client.close()
            return results, load

        results, load = asyncio.run(scenario())
    assert all(result.error is None for result in results)
    assert load.concurrency <= 3 and load.ceiling == 6
    assert server.stats.over_capacity <= 12  # the first burst (4) and a few probes
    assert server.stats.peak_active <= 2


# ------------------------------------------------------------ progress, settings, CLI


def test_progress_shows_the_live_concurrency_and_calls_per_second(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    progress = Progress(total=10, done=5, calls_made=7, load=LiveLoad(8, 24, 75.25))
    StderrProgress()(progress)
    assert "concurrency 8/24 · 75.2 calls/s" in capsys.readouterr().err
    StderrProgress()(Progress(total=10, done=5))  # a client that does not adapt: no load shown
    assert "concurrency" not in capsys.readouterr().err


def test_the_call_cache_copies_the_clients_load_into_the_progress(store: Store):
    class AdaptingClient:
        async def complete(self, messages, params):
            from core.types import Completion

            return Completion(text="ok")

        async def close(self) -> None:
            pass

        def live_load(self) -> LiveLoad:
            return LiveLoad(5, 24, 12.0)

    progress = Progress(total=1)
    endpoint = Endpoint(name="n", base_url="http://x/v1", model="m")
    calls = CallCache(store, AdaptingClient(), endpoint, progress)
    asyncio.run(calls.complete([{"role": "user", "content": "hi"}], 0))
    assert progress.load == LiveLoad(5, 24, 12.0)


def test_budgets_are_saved_and_do_not_change_the_run_id(store: Store):
    endpoint = Endpoint(name="n", base_url="http://x/v1", model="m", rpm_limit=500, tpm_limit=9)
    store.save_endpoint(endpoint)
    assert store.endpoint("n") == endpoint
    plain = Endpoint(name="n", base_url="http://x/v1", model="m")
    assert "rpm_limit" not in plain.to_dict()  # stored configs of old runs read the same
    samples = [Sample({"text": "good"})]
    budgeted, unbudgeted = (RunConfig(e, "sentiment", ("si.identity",)) for e in (endpoint, plain))
    assert budgeted.run_id(samples) == unbudgeted.run_id(samples)
    assert Endpoint.from_dict(endpoint.to_dict()) == endpoint


def test_the_endpoint_form_reads_optional_budgets():
    assert parse_budget("", "requests per minute") == (None, None)
    assert parse_budget(" 10,000 ", "tokens per minute") == (10000, None)
    assert parse_budget("0", "requests per minute")[1].startswith("requests per minute must")
    assert parse_budget("lots", "tokens per minute")[1].startswith("tokens per minute must")


def test_the_run_command_refuses_a_budget_below_one(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--endpoint", "http://x/v1", "--model", "m", "--task", "sentiment",
              "--relations", "si.identity", "--inputs", "x.txt", "--rpm", "0"])  # fmt: skip
    assert "--rpm must be at least 1" in capsys.readouterr().err
