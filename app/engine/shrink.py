"""Shrinking a violation: the fewest of a follow-up's edits that still flip the model's answer.

Delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
TSE 2002, the ddmin algorithm): split the failing edit set into n parts, keep a part or a
complement that still fails, otherwise split finer; stop when no single edit can go. The search
only sees a ``Trial`` oracle (edit indices + repeat index → failed?, model calls spent), so it is
tested on hand-made edit sets and run for real through the engine's stages
(``app.engine.shrink_oracle``).

Noise: a candidate counts as failing only when it fails in k of n repeats, and the original case
is confirmed the same way first — a FAIL that does not reproduce is "not reproducible", never
shrunk. A budget of model calls bounds the search; when it runs out the smallest failing subset
found so far is returned, marked "budget reached".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

DEFAULT_MAX_CALLS = 60
MAX_REPEATS = 99  # samples per candidate (the oracle numbers a case's samples in blocks of 100)


class ShrinkStatus(StrEnum):
    MINIMAL = "minimal"  # no single kept edit can be dropped
    BUDGET_REACHED = "budget reached"
    NOT_REPRODUCIBLE = "not reproducible"
    NOT_SHRINKABLE = "not shrinkable"
    ERROR = "error"  # a candidate could not be judged (endpoint down, unparseable answer …)


@dataclass(frozen=True)
class Repeats:
    """Fail in ``k`` of ``n`` samples to count as failing."""

    k: int = 2
    n: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.k <= self.n <= MAX_REPEATS:
            raise ValueError(f"repeats {self.k}/{self.n}: need 1 ≤ k ≤ n ≤ {MAX_REPEATS}")

    @classmethod
    def parse(cls, text: str) -> Repeats:
        """'2/3' → Repeats(2, 3)."""
        k, sep, n = text.partition("/")
        if not sep or not k.strip().isdigit() or not n.strip().isdigit():
            raise ValueError(f"repeats {text!r}: write them as K/N, e.g. 2/3")
        return cls(int(k), int(n))

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"


SINGLE = Repeats(1, 1)  # a deterministic model: one sample says it


@dataclass(frozen=True)
class Trial:
    failed: bool
    calls: int  # model calls this trial made (0 when every answer came from the call cache)
    error: str | None = None  # the candidate could not be judged: the search stops


# (edit indices kept, repeat index) → did the candidate still violate the relation?
Oracle = Callable[[tuple[int, ...], int], Trial]


@dataclass
class ShrinkResult:
    status: ShrinkStatus
    kept: tuple[int, ...]  # indices into the edit list, ascending
    edits_total: int
    calls: int = 0
    candidates: int = 0  # distinct subsets judged
    confirmed: str = ""  # 'k/n' with which every failing verdict was confirmed
    reason: str = ""
    trace: list[tuple[tuple[int, ...], bool]] = field(default_factory=list)


class _BudgetReached(Exception):  # noqa: N818 - a signal inside the search
    pass


class _CandidateError(Exception):
    """A candidate was neither a pass nor a fail (its reason is the message)."""


class _Search:
    """One ddmin search's memory: what each subset gave and what it cost."""

    def __init__(self, oracle: Oracle, repeats: Repeats, max_calls: int) -> None:
        self.oracle, self.repeats, self.max_calls = oracle, repeats, max_calls
        self.calls = 0
        self.known: dict[tuple[int, ...], bool] = {}
        self.trace: list[tuple[tuple[int, ...], bool]] = []

    def fails(self, subset: Sequence[int]) -> bool:
        key = tuple(sorted(subset))
        if key not in self.known:
            self.known[key] = self._confirmed(key)
            self.trace.append((key, self.known[key]))
        return self.known[key]

    def _confirmed(self, key: tuple[int, ...]) -> bool:
        """k of n, stopping as soon as the count is settled either way."""
        k, n = self.repeats.k, self.repeats.n
        failed = 0
        for repeat in range(n):
            if self.calls >= self.max_calls:
                raise _BudgetReached
            trial = self.oracle(key, repeat)
            self.calls += trial.calls
            if trial.error is not None:
                raise _CandidateError(trial.error)
            failed += trial.failed
            if failed >= k or failed + (n - repeat - 1) < k:
                break
        return failed >= k


def _split(items: list[int], parts: int) -> list[list[int]]:
    """``items`` in ``parts`` contiguous chunks of near-equal size (the first ones larger)."""
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        chunks.append(items[start:end])
        start = end
    return [c for c in chunks if c]


def _ddmin_step(search: _Search, items: list[int], parts: int) -> tuple[list[int], int] | None:
    """One ddmin round: the smaller failing set and the next granularity, or None."""
    chunks = _split(items, parts)
    for chunk in chunks:
        if search.fails(chunk):
            return chunk, 2
    if len(chunks) > 2:  # with two chunks each complement is the other chunk, already tried
        for index in range(len(chunks)):
            complement = [i for j, c in enumerate(chunks) if j != index for i in c]
            if search.fails(complement):
                return complement, max(parts - 1, 2)
    return None


def ddmin(
    edits_total: int,
    oracle: Oracle,
    *,
    repeats: Repeats = Repeats(),
    max_calls: int = DEFAULT_MAX_CALLS,
) -> ShrinkResult:
    """The smallest subset of ``range(edits_total)`` that still fails (1-minimal: dropping any
    one of its edits makes it pass), after confirming that all of them fail."""
    search = _Search(oracle, repeats, max_calls)
    items = list(range(edits_total))

    def result(status: ShrinkStatus, kept: Sequence[int], reason: str = "") -> ShrinkResult:
        return ShrinkResult(
            status=status,
            kept=tuple(sorted(kept)),
            edits_total=edits_total,
            calls=search.calls,
            candidates=len(search.known),
            confirmed=str(repeats),
            reason=reason,
            trace=search.trace,
        )

    try:
        if not search.fails(items):
            why = f"the original follow-up fails in fewer than {repeats} samples (noise)"
            return result(ShrinkStatus.NOT_REPRODUCIBLE, items, why)
        parts = 2
        while len(items) >= 2:
            step = _ddmin_step(search, items, parts)
            if step is not None:
                items, parts = step
            elif parts >= len(items):
                break
            else:
                parts = min(len(items), parts * 2)
    except _CandidateError as exc:
        return result(ShrinkStatus.ERROR, items, f"a candidate could not be judged: {exc}")
    except _BudgetReached:
        reason = f"{max_calls} model calls spent; the smallest failing subset so far"
        return result(ShrinkStatus.BUDGET_REACHED, items, reason)
    return result(ShrinkStatus.MINIMAL, items)


def not_shrinkable(edits_total: int, reason: str) -> ShrinkResult:
    return ShrinkResult(
        status=ShrinkStatus.NOT_SHRINKABLE,
        kept=tuple(range(edits_total)),
        edits_total=edits_total,
        reason=reason,
    )
