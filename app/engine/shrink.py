"""Shrinking a violation: the fewest of a follow-up's edits that still flip the model's answer.

The search is delta debugging (``app.engine.shrink_state``: ddmin as a resumable state
machine); this module drives it online, against a ``Trial`` oracle (edit indices + repeat index
→ failed?, model calls spent), one sample at a time. It is tested on hand-made edit sets and run
for real through the engine's stages (``app.engine.shrink_oracle``); batch rounds drive the same
state machine through request files (``app.batch.shrink_rounds``).

A budget of model calls bounds the search exactly: a sample is taken only when the calls it
would make (``Oracle.cost``: the source's and the follow-up's calls the cache cannot answer)
still fit, so a search never spends more than ``max_calls``. When the next sample does not fit,
the smallest failing subset found so far is returned, marked "budget reached".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from app.engine.shrink_state import (
    DEFAULT_MAX_CALLS,
    MAX_REPEATS,
    SINGLE,
    TWO_OF_THREE,
    DdminState,
    Repeats,
    ShrinkResult,
    ShrinkStatus,
    Subset,
)


@dataclass(frozen=True)
class Trial:
    failed: bool
    calls: int  # model calls this trial made (0 when every answer came from the call cache)
    error: str | None = None  # the candidate could not be judged: the search stops


class Oracle(Protocol):
    """Does the candidate with these edits still violate the relation, in this repeat?"""

    def __call__(self, kept: Subset, repeat: int) -> Trial: ...


# An oracle may say what a trial will cost before it is made; without ``cost`` a trial counts
# as one call.
CostOf = Callable[[Subset, int], int]


def _one_call(kept: Subset, repeat: int) -> int:
    return 1


def consume(state: DdminState, kept: Subset, repeat: int, trial: Trial) -> None:
    """Add a judged trial to the search (an unjudgeable one stops it with its reason)."""
    state.calls += trial.calls
    if trial.error is not None:
        state.stop(ShrinkStatus.ERROR, f"a candidate could not be judged: {trial.error}")
        return
    state.record(kept, repeat, trial.failed)


def budget_reason(state: DdminState, cost: int) -> str:
    return (
        f"{state.calls} of {state.max_calls} model calls spent and the next sample needs "
        f"{cost}: the smallest failing subset so far"
    )


def run_online(state: DdminState, oracle: Oracle) -> None:
    """Drive ``state`` to its end: the first undecided candidate, one sample at a time."""
    cost_of: CostOf = getattr(oracle, "cost", _one_call)
    while True:
        state.settle()
        if state.done:
            return
        kept = state.undecided()[0]
        repeat = state.next_repeat(kept)
        cost = cost_of(kept, repeat)
        if state.calls + cost > state.max_calls:
            state.stop(ShrinkStatus.BUDGET_REACHED, budget_reason(state, cost))
            return
        consume(state, kept, repeat, oracle(kept, repeat))


# The call keys a sample needs that no answer covers yet (batch rounds: those to request).
KeysOf = Callable[[Subset, int], set[str]]


def plan_round(state: DdminState, keys_of: KeysOf) -> list[tuple[Subset, int]]:
    """The samples of the next batch round — one ddmin level: every missing repeat of each
    undecided candidate, in ddmin's order — as many as the budget allows. Their calls are
    counted as spent now (a call two samples share, the source's, once). When not even the
    first fits, the search stops as "budget reached"."""
    asked: set[str] = set()
    samples: list[tuple[Subset, int]] = []
    for kept in state.undecided():
        for repeat in range(state.next_repeat(kept), state.repeats.n):
            new = keys_of(kept, repeat) - asked
            if state.calls + len(new) > state.max_calls:
                if not samples:
                    state.stop(ShrinkStatus.BUDGET_REACHED, budget_reason(state, len(new)))
                return samples
            asked |= new
            state.calls += len(new)
            samples.append((kept, repeat))
    return samples


def absorb(state: DdminState, oracle: Oracle, answered: Callable[[Subset, int], bool]) -> None:
    """Judge every sample whose answers are in (a batch round came back), taking each ddmin
    decision they allow; the next level's samples may be in already (asked by an earlier
    search, or shared with another candidate)."""
    while True:
        state.settle()
        progressed = False
        for kept in state.undecided():
            repeat = state.next_repeat(kept)
            while not state.done and state.verdict(kept) is None and answered(kept, repeat):
                consume(state, kept, repeat, oracle(kept, repeat))
                repeat += 1
                progressed = True
        if state.done or not progressed:
            return


def ddmin(
    edits_total: int,
    oracle: Oracle,
    *,
    repeats: Repeats = TWO_OF_THREE,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> ShrinkResult:
    """The smallest subset of ``range(edits_total)`` that still fails (1-minimal: dropping any
    one of its edits makes it pass), after confirming that all of them fail."""
    state = DdminState.start(edits_total, repeats, max_calls)
    run_online(state, oracle)
    return state.result()


def not_shrinkable(edits_total: int, reason: str) -> ShrinkResult:
    return ShrinkResult(
        status=ShrinkStatus.NOT_SHRINKABLE,
        kept=tuple(range(edits_total)),
        edits_total=edits_total,
        reason=reason,
    )


__all__ = [
    "DEFAULT_MAX_CALLS",
    "MAX_REPEATS",
    "SINGLE",
    "DdminState",
    "Repeats",
    "ShrinkResult",
    "ShrinkStatus",
    "Trial",
    "absorb",
    "ddmin",
    "not_shrinkable",
    "plan_round",
    "run_online",
]
