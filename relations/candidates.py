"""Best of k: an LLM-prompted relation asks for several rewrites and keeps the best valid one.

A small rewriter (the embedded SmolLM2-135M) gets a rewrite right perhaps one time in three; the
others answer, comment or change a number. So a relation asks for up to k candidates, each
sampled with its own seed (and cached under its own key), checks every one with the validity
gate, and keeps, of those that pass, the one most similar to the source: the most conservative
valid rewrite, which leaves the gate's blind spots the least room. All k are asked even when the
first passes, because the choice is by similarity, not by order; the cache makes a rerun free.

With no candidate passing, the first candidate is kept: the gate then SKIPs the case with that
candidate's reason, so a weak rewriter shows up as SKIPs with reasons, never as evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relations.base import NotApplicable, Rewriter, TransformContext

# One candidate, made through the rewriter it is given (its text cleaned, or NotApplicable).
MakeCandidate = Callable[[Rewriter], str]
DETAILS_KEY = "rewrite"


@dataclass(frozen=True)
class Candidate:
    """One rewrite candidate and what the gate said of it."""

    index: int  # which of the k (its seed's offset)
    text: str
    reason: str | None  # the gate's SKIP reason; None: it passed
    similarity: float | None  # input similarity to the source, when known

    def to_dict(self) -> dict:
        shown = None if self.similarity is None else round(self.similarity, 4)
        return {"n": self.index, "text": self.text, "gate": self.reason, "similarity": shown}


def choose(candidates: list[Candidate]) -> Candidate:
    """The passing candidate most similar to the source (the earliest on a tie); with none
    passing, the first candidate."""
    passing = [c for c in candidates if c.reason is None]
    if not passing:
        return candidates[0]
    return max(passing, key=lambda c: (c.similarity or 0.0, -c.index))


def judge(ctx: TransformContext, source: str, index: int, text: str) -> Candidate:
    check, similarity = ctx.check_candidate, ctx.similarity
    reason = check(source, text) if check is not None else None
    value = float(similarity(source, text)) if similarity is not None else None
    return Candidate(index, text, reason, value)


def best_of_k(ctx: TransformContext, source: str, make: MakeCandidate) -> str:
    """Ask for ``ctx.candidate_count()`` candidates and return the chosen one's text.

    A candidate the relation itself rejects (empty, too long …) is counted but not kept; when
    none is left, the first rejection is the SKIP reason. A failing call makes the case an ERROR
    after every candidate was asked (so batch export sees all k requests at once).
    """
    count = ctx.candidate_count()
    made: list[tuple[int, str]] = []
    rejected: list[str] = []
    failure: Exception | None = None
    for index in range(count):
        try:
            made.append((index, make(ctx.rewriter_for(index))))
        except NotApplicable as exc:
            rejected.append(str(exc))
        except Exception as exc:
            failure = failure or exc
    if failure is not None:
        raise failure
    if not made:
        ctx.details[DETAILS_KEY] = {"tried": count, "valid": 0, "chosen": None, "candidates": []}
        suffix = f" (all {count} candidates)" if count > 1 else ""
        raise NotApplicable(rejected[0] + suffix)
    judged = [judge(ctx, source, index, text) for index, text in made]
    chosen = choose(judged)
    ctx.details[DETAILS_KEY] = {
        "tried": count,
        "valid": sum(1 for c in judged if c.reason is None),
        "chosen": chosen.index,
        "candidates": [c.to_dict() for c in judged],
    }
    return chosen.text
