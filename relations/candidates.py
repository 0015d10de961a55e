"""Best of k: an LLM-prompted relation asks for several rewrites and keeps the best valid one.

A small rewriter (the embedded SmolLM2-135M) gets a rewrite right perhaps one time in three; the
others answer, comment or change a number. So a relation asks for up to k candidates, each
sampled with its own seed (and cached under its own key), checks every one with the validity
gate, and keeps, of those that pass, the one most similar to the source: the most conservative
valid rewrite, which leaves the gate's blind spots the least room. All k are asked even when the
first passes, because the choice is by similarity, not by order; the cache makes a rerun free.

With no candidate passing, the first candidate is kept: the gate then SKIPs the case with that
candidate's reason, so a weak rewriter shows up as SKIPs with reasons, never as evidence.

A small rewriter (``TransformContext.by_sentence``) is asked for a text with a question sentence
by sentence (``best_by_sentence``): given a whole word problem, SmolLM2-135M answers it instead
of rewriting it (1 valid rewrite in 150 attempts on our held-out word problems), but it rewrites
a single statement passably. The question stays as written, as the preservation constraint asks
of every rewriter; a sentence with no valid candidate stays as written too; the text put back
together is gated whole like any other rewrite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relations.base import NotApplicable, Rewriter, TransformContext
from relations.text_utils import is_question, split_sentences

# One candidate, made through the rewriter it is given (its text cleaned, or NotApplicable).
MakeCandidate = Callable[[Rewriter], str]
# How to make a candidate for one piece of the source (a sentence of it).
MakeCandidateOf = Callable[[str], MakeCandidate]
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


def _ask(
    ctx: TransformContext, make: MakeCandidate, count: int
) -> tuple[list[tuple[int, str]], list[str], Exception | None]:
    """Every one of ``count`` candidates asked: those made (index, text), the relation's own
    rejections, and the first failed call (kept, so the others are still asked)."""
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
    return made, rejected, failure


def best_of_k(ctx: TransformContext, source: str, make: MakeCandidate) -> str:
    """Ask for ``ctx.candidate_count()`` candidates and return the chosen one's text.

    A candidate the relation itself rejects (empty, too long …) is counted but not kept; when
    none is left, the first rejection is the SKIP reason. A failing call makes the case an ERROR
    after every candidate was asked (so batch export sees all k requests at once).
    """
    count = ctx.candidate_count()
    made, rejected, failure = _ask(ctx, make, count)
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


@dataclass(frozen=True)
class _Sentence:
    """One sentence of the source: where it is, and whether a small rewriter is asked for it."""

    start: int
    end: int
    text: str

    @property
    def asked(self) -> bool:
        # The question (or "Find …") stays as written: alone, a small model answers it.
        return not is_question(self.text)


def _sentences_in(source: str) -> list[_Sentence] | None:
    """The source's sentences with their places in it (None: they cannot all be found)."""
    found: list[_Sentence] = []
    position = 0
    for sentence in split_sentences(source):
        start = source.find(sentence, position)
        if start < 0:
            return None
        position = start + len(sentence)
        found.append(_Sentence(start, position, sentence))
    return found


def best_by_sentence(ctx: TransformContext, source: str, make_of: MakeCandidateOf) -> str:
    """Best of k for each sentence of ``source`` but its questions, put back in place.

    Each asked sentence gets ``ctx.candidate_count()`` candidates, gated against that sentence;
    the passing one most similar to it replaces it, and a sentence with none passing stays as
    written. With no sentence reworded, each asked sentence's first candidate is put in (so
    the gate SKIPs the case with a reason). A source without a question, or of questions only,
    is asked whole (``best_of_k``).
    """
    sentences = _sentences_in(source)
    asked = [s for s in sentences or () if s.asked]
    # Only a text with a question and something else is split: a review of two statements is
    # asked whole, as before (held-out set 8: whole, its three rewrites were valid; statement by
    # statement, none passed).
    if sentences is None or not asked or len(asked) == len(sentences):
        return best_of_k(ctx, source, make_of(source))
    count = ctx.candidate_count()
    chosen: dict[int, str] = {}
    fallback: dict[int, str] = {}
    shown: list[dict] = []
    judged_all: list[dict] = []
    rejected: list[str] = []
    failure: Exception | None = None
    for number, sentence in enumerate(sentences):
        if not sentence.asked:
            shown.append({"text": sentence.text, "kept": "question"})
            continue
        made, refused, failed = _ask(ctx, make_of(sentence.text), count)
        rejected += refused
        failure = failure or failed
        if failure is not None:  # the case is an ERROR: ask the rest, judge nothing
            continue
        judged = [judge(ctx, sentence.text, index, text) for index, text in made]
        passing = [c for c in judged if c.reason is None]
        if passing:
            chosen[number] = choose(judged).text
        elif judged:
            fallback[number] = judged[0].text
        kept = "reworded" if passing else "as written"
        shown.append({"text": sentence.text, "kept": kept, "valid": len(passing)})
        judged_all += [{**c.to_dict(), "sentence": number} for c in judged]
    if failure is not None:
        raise failure
    replacements = chosen or fallback
    if not replacements:
        raise NotApplicable(f"{rejected[0]} (all {count} candidates of each sentence)")
    text = _put_back(source, sentences, replacements)
    check = ctx.check_candidate
    ctx.details[DETAILS_KEY] = {
        "tried": count * len(asked),
        "valid": sum(1 for c in judged_all if c["gate"] is None),
        "chosen": None,
        "by_sentence": shown,
        "candidates": judged_all,
        # The gate's word on the text put back together (what a run's gate will say of it).
        "gate": check(source, text) if check is not None else None,
    }
    return text


def _put_back(source: str, sentences: list[_Sentence], replacements: dict[int, str]) -> str:
    pieces: list[str] = []
    position = 0
    for number, sentence in enumerate(sentences):
        pieces.append(source[position : sentence.start])
        pieces.append(_ended_as(sentence.text, replacements.get(number, sentence.text)))
        position = sentence.end
    pieces.append(source[position:])
    return "".join(pieces)


def _ended_as(sentence: str, rewrite: str) -> str:
    """The rewrite with the sentence's full stop (or "!") when the rewriter left it off."""
    end = sentence.rstrip()[-1:]
    if end in (".", "!") and rewrite.rstrip()[-1:] not in (".", "!", "?", "…"):
        return rewrite.rstrip() + end
    return rewrite
