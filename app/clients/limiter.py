"""Adaptive concurrency for one endpoint: AIMD on 429/503 and timeouts, plus rate budgets.

A run starts at the endpoint's configured concurrency and never goes above its ceiling (by
default that same value). When the endpoint says it is overloaded (429, 503) the window shrinks
to the calls it still has in flight, at most to 90 % of the window, once per round of calls; a
timeout halves it. While every slot is busy and answers keep coming, the window grows by one per
round of answers — slowly (a tenth of that pace) near the point where the last overload came, so
probing past a hard concurrency limit costs about one retried call per eighty answers. A Retry-After pauses new calls
to the endpoint until it has passed. Optional requests-per-minute and tokens-per-minute budgets
pace calls the way hosted APIs count them (a call reserves its prompt plus ``max_tokens``; what
it did not use is given back).

The state machine (``AimdWindow``) is plain code with an injected clock, so tests drive it
without timing; ``AdaptiveLimiter`` adds the asyncio waiting.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import Enum

Clock = Callable[[], float]

# The window after an overload: at most this share of what it was (once per round of calls).
OVERLOAD_FACTOR = 0.9
# The window after a timeout: a slow endpoint gets half the load (once per round of calls).
TIMEOUT_FACTOR = 0.5
# Growth near the last overload point is this many times slower than elsewhere...
PROBE_SLOWDOWN = 10
# ...and never faster than one step per this many rounds of a window of 8: a small window would
# otherwise probe (and be refused) after only a few dozen answers.
PROBE_MIN_WINDOW = 8
# The rolling window over which calls/s is measured.
RATE_WINDOW_S = 5.0
# Characters per token, for estimating a prompt's size before it is sent.
CHARS_PER_TOKEN = 4


class Outcome(Enum):
    """What one attempt told the limiter about the endpoint's load."""

    ANSWERED = "answered"
    OVERLOADED = "overloaded"  # 429 or 503: too many calls (or too fast)
    TIMED_OUT = "timed_out"
    OTHER = "other"  # an error that says nothing about load (401, 500, connection refused)


@dataclass(frozen=True)
class LiveLoad:
    """The endpoint's load right now, for progress displays."""

    concurrency: int  # the current window: calls allowed in flight at once
    ceiling: int
    calls_per_s: float  # answered calls per second over the last few seconds

    def describe(self) -> str:
        """E.g. ``concurrency 8/24 · 75.2 calls/s``."""
        return f"concurrency {self.concurrency}/{self.ceiling} · {self.calls_per_s:.1f} calls/s"


class AimdWindow:
    """How many calls may be in flight: additive increase, multiplicative decrease.

    Each started call gets a sequence number; a decrease remembers the next one, so a burst of
    429s from calls that were all sent before the window shrank counts as one signal, not many
    (except that the window never stays above the calls still in flight after an overload).
    """

    def __init__(self, initial: int, ceiling: int | None = None) -> None:
        self.ceiling = max(1, ceiling if ceiling is not None else initial)
        self.limit = float(min(max(1, initial), self.ceiling))
        self.in_flight = 0
        self.overload_mark: float | None = None  # calls in flight at the last overload
        self._next_seq = 0
        self._round_start = 0  # calls started before this one belong to an older round

    @property
    def window(self) -> int:
        """The number of calls allowed in flight now (the integer part of the limit)."""
        return max(1, int(self.limit))

    def has_room(self) -> bool:
        return self.in_flight < self.window

    def start(self) -> int:
        """Count a call as in flight; returns its sequence number for ``finish``."""
        self.in_flight += 1
        seq = self._next_seq
        self._next_seq += 1
        return seq

    def finish(self, seq: int, outcome: Outcome) -> None:
        """A call ended: adapt the window to what it said about the endpoint's load."""
        busy = self.in_flight >= self.window  # every slot was in use: the endpoint kept up
        in_flight_before = self.in_flight
        self.in_flight = max(0, self.in_flight - 1)
        new_round = seq >= self._round_start
        if outcome is Outcome.ANSWERED:
            if busy:
                self._grow()
        elif outcome is Outcome.OVERLOADED:
            self.overload_mark = float(in_flight_before)
            # The calls still in flight are what the endpoint currently accepts.
            limit = min(self.limit, max(1.0, float(self.in_flight)))
            if new_round:
                limit = min(limit, self.limit * OVERLOAD_FACTOR)
            self._shrink_to(limit)
        elif outcome is Outcome.TIMED_OUT and new_round:
            self._shrink_to(self.limit * TIMEOUT_FACTOR)

    def _grow(self) -> None:
        # Past the mark by more than a step or two, the endpoint has grown: fast again.
        mark = self.overload_mark
        if mark is not None and mark - 1 <= self.limit < mark + 2:
            step = 1 / (max(self.limit, PROBE_MIN_WINDOW) * PROBE_SLOWDOWN)
        else:
            step = 1 / self.limit
        self.limit = min(float(self.ceiling), self.limit + step)

    def _shrink_to(self, limit: float) -> None:
        if limit < self.limit:
            self.limit = max(1.0, limit)
            self._round_start = self._next_seq


class TokenBucket:
    """A budget per minute, spent by reservation: a call takes what it needs at once (the level
    may go below zero) and waits until the budget has refilled that far."""

    def __init__(self, per_minute: float, clock: Clock = time.monotonic) -> None:
        self.rate_per_s = per_minute / 60.0
        # At most one second's worth (at least one call) saved up: no minute-sized bursts.
        self.capacity = max(1.0, self.rate_per_s)
        self.level = self.capacity
        self._clock = clock
        self._updated = clock()

    def reserve(self, amount: float) -> float:
        """Spend ``amount``; returns the seconds to wait before using it."""
        self._refill()
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / self.rate_per_s

    def refund(self, amount: float) -> None:
        """Give back what a call reserved and did not use."""
        self._refill()
        self.level = min(self.capacity, self.level + amount)

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate_per_s)
        self._updated = now


class CallRate:
    """Answered calls per second over the last ``RATE_WINDOW_S`` seconds."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._times: collections.deque[float] = collections.deque()
        self._first = clock()

    def tick(self) -> None:
        self._times.append(self._clock())

    def per_second(self) -> float:
        now = self._clock()
        while self._times and self._times[0] < now - RATE_WINDOW_S:
            self._times.popleft()
        span = min(RATE_WINDOW_S, now - self._first)
        return len(self._times) / span if span > 0 else 0.0


@dataclass
class Slot:
    """One attempt's place in the window; the client says how it went."""

    seq: int
    reserved_tokens: int = 0
    outcome: Outcome = Outcome.OTHER
    retry_after_s: float | None = None
    used_tokens: int | None = None

    def answered(self, used_tokens: int | None = None) -> None:
        self.outcome = Outcome.ANSWERED
        self.used_tokens = used_tokens

    def overloaded(self, retry_after_s: float | None = None) -> None:
        self.outcome = Outcome.OVERLOADED
        self.retry_after_s = retry_after_s

    def timed_out(self) -> None:
        self.outcome = Outcome.TIMED_OUT


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """What a hosted API counts against a tokens-per-minute budget before answering."""
    chars = sum(len(message.get("content") or "") for message in messages)
    return chars // CHARS_PER_TOKEN + 1 + max(0, max_tokens)


class AdaptiveLimiter:
    """Admits calls to one endpoint: an ``AimdWindow``, Retry-After pauses and rate budgets.

    Use inside one event loop: ``async with limiter.slot(tokens) as slot: ...`` and tell the
    slot how the attempt went (``slot.answered()``, ``slot.overloaded(retry_after)``,
    ``slot.timed_out()``); anything else counts as saying nothing about load.
    """

    def __init__(
        self,
        initial: int,
        ceiling: int | None = None,
        rpm_limit: int | None = None,
        tpm_limit: int | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.window = AimdWindow(initial, ceiling)
        self.requests = TokenBucket(rpm_limit, clock) if rpm_limit else None
        self.tokens = TokenBucket(tpm_limit, clock) if tpm_limit else None
        self.rate = CallRate(clock)
        self._clock = clock
        self._paused_until = 0.0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._wake_timer: asyncio.TimerHandle | None = None

    def live_load(self) -> LiveLoad:
        return LiveLoad(self.window.window, self.window.ceiling, self.rate.per_second())

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[Slot]:
        """Wait for room in the window (and the budgets), then hold one place while in use."""
        seq = await self._enter()
        slot = Slot(seq, reserved_tokens=tokens if self.tokens else 0)
        try:
            await self._spend_budgets(slot)
            yield slot
        finally:
            self._leave(slot)

    async def _enter(self) -> int:
        if not self._waiters and self._admits():
            return self.window.start()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                # Admitted just as it was cancelled: hand the place on.
                self.window.finish(waiter.result(), Outcome.OTHER)
                self._wake()
            else:
                self._waiters.remove(waiter)
            raise

    def _admits(self) -> bool:
        return self.window.has_room() and self._clock() >= self._paused_until

    def _wake(self) -> None:
        while self._waiters and self._admits():
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(self.window.start())
        if self._waiters and self.window.has_room() and self._wake_timer is None:
            # Paused by a Retry-After: come back when it has passed.
            delay = max(0.0, self._paused_until - self._clock())
            self._wake_timer = asyncio.get_running_loop().call_later(delay, self._timer_wake)

    def _timer_wake(self) -> None:
        self._wake_timer = None
        self._wake()

    async def _spend_budgets(self, slot: Slot) -> None:
        wait = 0.0
        if self.requests:
            wait = max(wait, self.requests.reserve(1))
        if self.tokens and slot.reserved_tokens:
            wait = max(wait, self.tokens.reserve(slot.reserved_tokens))
        if wait > 0:
            await asyncio.sleep(wait)

    def _leave(self, slot: Slot) -> None:
        self.window.finish(slot.seq, slot.outcome)
        if slot.outcome is Outcome.ANSWERED:
            self.rate.tick()
            if self.tokens and slot.used_tokens is not None:
                self.tokens.refund(max(0, slot.reserved_tokens - slot.used_tokens))
        if slot.retry_after_s:
            self._paused_until = max(self._paused_until, self._clock() + slot.retry_after_s)
        self._wake()
