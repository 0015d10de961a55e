"""Sending a run's calls: the call cache (each distinct call sent once, answers kept in SQLite),
the calls a planned case needs, and the rewrites of LLM-prompted relations."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.clients import ClientFactory, ModelClient, RetryPolicy, make_client
from app.clients.base import live_load
from app.engine.progress import Progress
from core.identity import call_key
from core.tasks import Task
from core.types import Completion, Endpoint
from storage import Store
from storage.cache_verbs import CachedAnswer

if TYPE_CHECKING:
    from app.engine.plan import PlannedCase

log = logging.getLogger(__name__)

# Answers are handed to the writer thread at most this long after they arrive (cases, which
# cost no call to rebuild, wait for FLUSH_AFTER_S): a run killed with ``kill -9`` sends again
# only the calls in flight and the answers of about the last tenth of a second.
ANSWERS_AFTER_S = 0.05
# Rewrites need some temperature: at 0 small models (the embedded SmolLM2 among them) echo the
# input, which the validity gate then SKIPs as identical. The fixed seed keeps them repeatable,
# and every rewrite is cached, so the same run config gives the same follow-ups.
TRANSFORM_PARAMS = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 320, "seed": 0}
# The embedded SmolLM2-135M rambles on where a larger model stops: a reply past this many tokens
# is never a valid rewrite of our inputs (the gate rejects it), and on 2 shared cores each extra
# token costs time the other candidates need.
SMALL_REWRITER_MAX_TOKENS = 160


def transform_params(endpoint: Endpoint) -> dict[str, Any]:
    """The sampling parameters of rewrites through ``endpoint`` (shorter for the embedded
    model; every other endpoint keeps the parameters, and so the call keys, it always had)."""
    params = dict(TRANSFORM_PARAMS)
    if endpoint.embedded:
        params["max_tokens"] = SMALL_REWRITER_MAX_TOKENS
    return params


def candidate_params(params: dict[str, Any], candidate: int) -> dict[str, Any]:
    """The sampling parameters of the ``candidate``-th rewrite candidate: the rewrite's own for the
    first (so its call key is the one a single rewrite always had), the seed moved on by
    ``candidate`` for the others — a different sample, its own cache key, the same every run."""
    if candidate == 0:
        return params
    return {**params, "seed": int(params.get("seed", 0)) + candidate}


class CallCache:
    """Sends each distinct (endpoint, params, messages, repeat, slot) once; answers from SQLite.

    With ``write_through=False`` new answers are kept in memory until ``take_answers`` hands them
    to the runner's writer thread, so no SQLite commit happens on the event loop per call; with
    a sink (``hand_answers_to``) they are handed over on their own, a moment after they arrive.
    """

    def __init__(
        self,
        store: Store,
        client: ModelClient,
        endpoint: Endpoint,
        progress: Progress,
        *,
        write_through: bool = True,
    ):
        self.store = store
        self.client = client
        self.endpoint = endpoint
        self.progress = progress
        self.params = endpoint.sampling_params()
        self.write_through = write_through
        self._inflight: dict[str, asyncio.Future] = {}
        self._unsaved: list[CachedAnswer] = []
        # Keys waiting for the next batched cache lookup, with what each caller awaits.
        self._lookups: dict[str, asyncio.Future] = {}
        self._sink: Callable[[list[CachedAnswer]], None] | None = None
        self._sink_after_s = ANSWERS_AFTER_S
        self._sink_timer: asyncio.TimerHandle | None = None

    def hand_answers_to(
        self, sink: Callable[[list[CachedAnswer]], None], after_s: float = ANSWERS_AFTER_S
    ) -> None:
        """Give new answers to ``sink`` (e.g. the writer thread's queue) at most ``after_s``
        after each arrives, in one batch per timer: answers are what a killed run must not pay
        for twice, so they do not wait for their cases' next batch."""
        self._sink, self._sink_after_s = sink, after_s

    def take_answers(self) -> list[CachedAnswer]:
        """The answers not yet written to the store (they are no longer held here)."""
        answers, self._unsaved = self._unsaved, []
        return answers

    def stop_handing_over(self) -> None:
        """No more hand-overs (the run is ending; its last answers are taken by the caller)."""
        if self._sink_timer is not None:
            self._sink_timer.cancel()
        self._sink_timer = self._sink = None

    def _hand_over(self) -> None:
        self._sink_timer = None
        answers = self.take_answers()
        if answers and self._sink is not None:
            self._sink(answers)

    async def complete(
        self,
        messages: list[dict[str, str]],
        repeat_index: int,
        params: dict[str, Any] | None = None,
    ) -> Completion:
        """The answer to one call; ``params`` replace the cache's own sampling parameters (a
        rewrite candidate's seed)."""
        params = self.params if params is None else params
        key = call_key(
            self.endpoint.cache_base_url, self.endpoint.model, params, messages, repeat_index
        )
        if key in self._inflight:
            # Shielded: a waiter torn down (Ctrl-C, SIGTERM, a cancelled run) must not cancel
            # the answer the call's own task and the other waiters still expect.
            return await asyncio.shield(self._inflight[key])
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            cached = await self._cached(key)
            if cached is not None:
                self.progress.cache_hits += 1
                result = cached
            else:
                result = await self.client.complete(messages, params)
                self.progress.calls_made += 1
                self.progress.count_usage(getattr(result, "usage", None) or {})
                self.progress.load = live_load(self.client)
                self._remember(key, messages, repeat_index, result, params)
        except Exception as exc:
            result = Completion(text=None, error=f"{type(exc).__name__}: {exc}")
        except BaseException:
            future.cancel()  # its waiters are being torn down with it
            raise
        if not future.done():
            future.set_result(result)
        return result

    async def _cached(self, key: str) -> Completion | None:
        """The stored answer for ``key``, if any. The keys asked for in one turn of the event loop
        are looked up together in one query at its next turn: a run starts all its calls at
        once, so its whole plan costs one lookup instead of one SQLite query per call."""
        loop = asyncio.get_running_loop()
        if not self._lookups:
            loop.call_soon(self._look_up_batch)
        waiter = loop.create_future()
        self._lookups[key] = waiter
        return await waiter

    def _look_up_batch(self) -> None:
        lookups, self._lookups = self._lookups, {}
        try:
            found = self.store.cached_calls(list(lookups))
        except Exception as exc:  # each waiting call turns it into its ERROR completion
            for waiter in lookups.values():
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for key, waiter in lookups.items():
            if not waiter.done():  # a cancelled call no longer waits
                waiter.set_result(found.get(key))

    def _remember(
        self,
        key: str,
        messages: list[dict[str, str]],
        repeat_index: int,
        result: Completion,
        params: dict[str, Any],
    ) -> None:
        """Cache an answer (at once, or later through ``take_answers``)."""
        if not result.ok:
            return
        answer = CachedAnswer(
            key,
            self.endpoint.cache_base_url,
            self.endpoint.model,
            params,
            messages,
            repeat_index,
            result,
        )
        if self.write_through:
            save_answers(self.store, [answer])
            return
        self._unsaved.append(answer)
        if self._sink is not None and self._sink_timer is None:
            loop = asyncio.get_running_loop()
            self._sink_timer = loop.call_later(self._sink_after_s, self._hand_over)


def save_answers(store: Store, answers: list[CachedAnswer]) -> None:
    """Write answers to the call cache. A storage failure here loses only the cache entries,
    never the answers: the store already retried, and the cases still get their verdicts (the
    calls may simply be sent again by a later run)."""
    if not answers:
        return
    try:
        store.cache_calls(answers)
    except Exception:
        log.warning("could not cache %d calls; their answers are kept", len(answers), exc_info=True)


class TransformationError(RuntimeError):
    """The transformation endpoint failed for an LLM-prompted relation (→ ERROR cases)."""


def case_calls(task: Task, case: PlannedCase) -> dict[str, tuple[list[dict[str, str]], int]]:
    """The calls a planned case with a follow-up needs, by output name ("source", "followup",
    companions): each its messages and repeat index. Online runs send them; batch export writes
    them as request lines, so both key the call cache alike."""
    followup = case.followup
    assert followup is not None
    source_messages = task.messages(case.source_fields)
    followup_messages = task.messages(followup.fields, followup.preamble)
    # si.identity sends the same prompt twice: the follow-up must be a separate sample.
    followup_repeat = case.repeat_index
    if followup_messages == source_messages:
        followup_repeat = 10_000 + case.repeat_index
    wanted = {
        "source": (source_messages, case.repeat_index),
        "followup": (followup_messages, followup_repeat),
    }
    for name, fields in followup.companions.items():
        wanted[name] = (task.messages(fields), case.repeat_index)
    return wanted


def make_sync_rewriter(
    store: Store, endpoint: Endpoint, client_factory: ClientFactory = make_client
) -> Callable[[str], str]:
    """A blocking rewrite hook (Relations page, `transform` CLI) sharing the runs' call cache."""
    ask = make_sync_candidate_rewriter(store, endpoint, client_factory)
    return lambda prompt: ask(prompt, 0)


def make_sync_candidate_rewriter(
    store: Store, endpoint: Endpoint, client_factory: ClientFactory = make_client
) -> Callable[[str, int], str]:
    """The blocking hook of the n-th rewrite candidate: the call a run makes for it (the same
    parameters, its seed moved on by n), through the runs' call cache, so trying a text shows
    what a run would rewrite and a run later finds the answers cached."""

    def rewrite(prompt: str, candidate: int) -> str:
        async def once() -> Completion:
            client = client_factory(endpoint, RetryPolicy(max_retries=2))
            calls = CallCache(store, client, endpoint, Progress(0))
            calls.params = transform_params(endpoint)
            params = candidate_params(calls.params, candidate)
            try:
                return await calls.complete([{"role": "user", "content": prompt}], 0, params)
            finally:
                await client.close()

        completion = asyncio.run(once())
        if not completion.ok:
            raise TransformationError(f"transformation endpoint failed: {completion.error}")
        return completion.text or ""

    return rewrite
