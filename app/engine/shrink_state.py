"""Delta debugging as a state machine over data, so a search can stop and resume.

ddmin (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", TSE 2002,
§4): split the failing edit set into n parts, keep a part or a complement that still fails,
otherwise split finer; stop when no single edit can go. Here the search is a :class:`DdminState`
— the current failing subset, the granularity, the calls spent and every sample seen — and
:meth:`DdminState.settle` takes every decision those samples allow. What the search needs next
is :meth:`DdminState.undecided`: the candidates of the current level, in ddmin's order, whose
verdict is not known yet.

Two drivers feed it samples: the online search (``app.engine.shrink.ddmin``) judges the first
undecided candidate, one sample at a time; batch rounds (``app.batch.shrink_rounds``) ask for
every undecided candidate of a level at once and resume from the stored state when the answers
come back. Both take the same decisions from the same samples, so both keep the same edits.

Noise: a candidate counts as failing only when it fails in k of n samples (its samples are
numbered by repeat, and the count is settled as soon as it is certain either way), and the
original case is confirmed the same way first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

DEFAULT_MAX_CALLS = 60
MAX_REPEATS = 99  # samples per candidate (the oracle numbers a case's samples in blocks of 100)

Subset = tuple[int, ...]  # indices into a case's edit list, ascending


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

    def verdict(self, samples: list[bool]) -> bool | None:
        """Failing (k of n), passing, or None while the samples so far leave it open."""
        failed = sum(samples)
        if failed >= self.k:
            return True
        if failed + (self.n - len(samples)) < self.k:
            return False
        return None


SINGLE = Repeats(1, 1)  # a deterministic model: one sample says it
TWO_OF_THREE = Repeats(2, 3)  # a model that samples (the default)


@dataclass
class ShrinkResult:
    status: ShrinkStatus
    kept: Subset
    edits_total: int
    calls: int = 0
    candidates: int = 0  # distinct subsets judged
    confirmed: str = ""  # 'k/n' with which every failing verdict was confirmed
    reason: str = ""
    trace: list[tuple[Subset, bool]] = field(default_factory=list)


def split(items: Subset, parts: int) -> list[Subset]:
    """``items`` in ``parts`` contiguous chunks of near-equal size (the first ones larger)."""
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        chunks.append(items[start:end])
        start = end
    return [c for c in chunks if c]


@dataclass
class DdminState:
    """One ddmin search as data: where it is, what it has seen, what it has spent."""

    edits_total: int
    repeats: Repeats
    max_calls: int
    items: Subset  # the smallest subset known to fail (all edits until confirmed)
    parts: int = 0  # the granularity; 0 while the original follow-up is being confirmed
    calls: int = 0
    samples: dict[Subset, list[bool]] = field(default_factory=dict)  # by repeat index
    trace: list[tuple[Subset, bool]] = field(default_factory=list)  # verdicts, in order
    status: ShrinkStatus | None = None  # None while the search goes on
    reason: str = ""

    @classmethod
    def start(cls, edits_total: int, repeats: Repeats, max_calls: int) -> DdminState:
        return cls(edits_total, repeats, max_calls, tuple(range(edits_total)))

    @property
    def done(self) -> bool:
        return self.status is not None

    def verdict(self, subset: Subset) -> bool | None:
        return self.repeats.verdict(self.samples.get(subset, []))

    def next_repeat(self, subset: Subset) -> int:
        return len(self.samples.get(subset, []))

    def level(self) -> list[Subset]:
        """The candidates of the current level, in the order ddmin tries them: the original
        first; then each chunk, then (with more than two chunks) each complement."""
        if self.parts == 0:
            return [self.items]
        chunks = split(self.items, self.parts)
        if len(chunks) <= 2:  # with two chunks each complement is the other chunk
            return chunks
        complements = [
            tuple(i for j, chunk in enumerate(chunks) if j != index for i in chunk)
            for index in range(len(chunks))
        ]
        return chunks + complements

    def undecided(self) -> list[Subset]:
        """The candidates of this level whose verdict the search still needs, in order (the
        first is the one :meth:`settle` waits on)."""
        if self.done:
            return []
        return [c for c in self.level() if self.verdict(c) is None]

    def record(self, subset: Subset, repeat: int, failed: bool) -> None:
        """One more sample of ``subset``; samples come in repeat order (one seen is ignored)."""
        samples = self.samples.setdefault(subset, [])
        if repeat < len(samples):
            return
        if repeat > len(samples):
            raise ValueError(f"sample {repeat} of {subset} before sample {len(samples)}")
        before = self.verdict(subset)
        samples.append(failed)
        after = self.verdict(subset)
        if before is None and after is not None:
            self.trace.append((subset, after))

    def stop(self, status: ShrinkStatus, reason: str = "") -> None:
        self.status, self.reason = status, reason

    def settle(self) -> None:
        """Take every ddmin decision the samples so far allow."""
        while not self.done:
            if self.parts == 0:
                confirmed = self.verdict(self.items)
                if confirmed is None:
                    return
                if not confirmed:
                    why = f"the original follow-up fails in fewer than {self.repeats} samples"
                    self.stop(ShrinkStatus.NOT_REPRODUCIBLE, f"{why} (noise)")
                    return
                self.parts = 2
                continue
            if len(self.items) < 2:
                self.stop(ShrinkStatus.MINIMAL)
                return
            if not self._take_a_failing_candidate():
                return

    def _take_a_failing_candidate(self) -> bool:
        """Move to the level's first failing candidate, or split finer, or stop as minimal;
        False while a candidate before the first failing one is undecided."""
        chunks = len(split(self.items, self.parts))
        for index, candidate in enumerate(self.level()):
            verdict = self.verdict(candidate)
            if verdict is None:
                return False
            if verdict:
                self.items = candidate
                self.parts = 2 if index < chunks else max(self.parts - 1, 2)
                return True
        if self.parts >= len(self.items):
            self.stop(ShrinkStatus.MINIMAL)
        else:
            self.parts = min(len(self.items), self.parts * 2)
        return True

    def result(self) -> ShrinkResult:
        return ShrinkResult(
            status=self.status or ShrinkStatus.BUDGET_REACHED,
            kept=self.items,
            edits_total=self.edits_total,
            calls=self.calls,
            candidates=sum(self.verdict(s) is not None for s in self.samples),
            confirmed=str(self.repeats),
            reason=self.reason,
            trace=list(self.trace),
        )

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-ready data (subsets as lists)."""
        return {
            "edits_total": self.edits_total,
            "repeats": str(self.repeats),
            "max_calls": self.max_calls,
            "items": list(self.items),
            "parts": self.parts,
            "calls": self.calls,
            "samples": [[list(s), outcomes] for s, outcomes in self.samples.items()],
            "trace": [[list(s), verdict] for s, verdict in self.trace],
            "status": None if self.status is None else str(self.status),
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DdminState:
        return cls(
            edits_total=int(data["edits_total"]),
            repeats=Repeats.parse(data["repeats"]),
            max_calls=int(data["max_calls"]),
            items=tuple(data["items"]),
            parts=int(data["parts"]),
            calls=int(data["calls"]),
            samples={tuple(s): [bool(o) for o in outcomes] for s, outcomes in data["samples"]},
            trace=[(tuple(s), bool(verdict)) for s, verdict in data["trace"]],
            status=None if data["status"] is None else ShrinkStatus(data["status"]),
            reason=str(data["reason"]),
        )
