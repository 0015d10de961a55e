"""ad.* — the five AgentDiff perturbation operators, on two sides.

Meaning-bearing operators (paraphrase, synonym) rewrite the tokens that carry meaning; presentation
operators (reorder, format, distractor) change only how the same content is laid out. All five keep
the gold answer, so the expectation is EQUIVALENT and a changed answer counts as an inconsistency;
the gap between the two sides' inconsistency rates is the AgentDiff statistic.
"""

from __future__ import annotations

import hashlib
import random
import re

from relations.base import NotApplicable, RelationKind, TransformContext
from relations.llm_prompts import single_line_rewrite
from relations.registry import transform_relation
from relations.text_utils import (
    join_sentences,
    normalise_whitespace,
    permute_changed,
    question_index,
    split_clauses,
    split_question,
    split_sentences,
)

PAPER = "agentdiff-surface-vs-semantic-noise"
MEANING = "meaning"
PRESENTATION = "presentation"
EXAMPLE = (
    "Lena packs 12 boxes an hour, and her colleague packs 9 boxes an hour. They work together "
    "for 3 hours. How many boxes do they pack?"
)
FILTER_NOTE = (
    "The rewrite is filtered: its first non-empty line is kept, and it is skipped when empty, "
    "shorter than half or longer than twice the source, or identical to it."
)

# Our own explicitly-unrelated, sentiment-neutral, number-free asides.
DISTRACTORS = (
    "Unrelated note: the reading room on the third floor is being repainted this week.",
    "Unrelated note: a neighbour's cat likes to sleep on the warm bonnet of parked cars.",
    "Unrelated note: the office kettle was descaled yesterday afternoon.",
    "Unrelated note: some bus routes in the old town change their timetable in winter.",
    "Unrelated note: the garden centre keeps its seed packets sorted by colour.",
    "Unrelated note: a local choir rehearses in the school hall on weekday evenings.",
)

_PARAPHRASE = (
    "Paraphrase the text below: say exactly the same thing with different words and a different "
    "sentence structure."
)
_SYNONYM = (
    "Replace two or three verbs or adjectives in the text below with synonyms. Change nothing "
    "else: every other word, the word order and the punctuation stay as they are."
)

# Sentence openers that are ordinary words, lower-cased when a clause shuffle moves them inward.
_COMMON_OPENERS = frozenset(
    {
        "if", "when", "while", "after", "before", "since", "because", "although", "though",
        "the", "a", "an", "in", "on", "at", "for", "with", "by", "from", "during", "there",
        "then", "so", "as", "once", "given", "suppose", "assuming",
    }
)  # fmt: skip


_QUESTION_LABEL = re.compile(r"^question:\s*", re.I)  # no "Question: Question: …"


@transform_relation(
    id="ad.paraphrase",
    name="Paraphrase (meaning-bearing)",
    category="meaning-bearing",
    description="Whole-input rewrite with other words by the transformation endpoint. "
    + FILTER_NOTE,
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions="a transformation endpoint; the filtered rewrite must pass",
    ref=f"{PAPER}: paraphrase operator",
    side=MEANING,
    similarity_floor=0.7,
)
def paraphrase(text: str, ctx: TransformContext) -> str:
    return single_line_rewrite(ctx, _PARAPHRASE, text, what="paraphrase")


@transform_relation(
    id="ad.synonym",
    name="Synonym swap (meaning-bearing)",
    category="meaning-bearing",
    description="Swap two or three verbs or adjectives for synonyms via the transformation "
    "endpoint. " + FILTER_NOTE,
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions="a transformation endpoint; the filtered rewrite must pass",
    ref=f"{PAPER}: synonym operator",
    side=MEANING,
    similarity_floor=0.75,
)
def synonym(text: str, ctx: TransformContext) -> str:
    return single_line_rewrite(ctx, _SYNONYM, text, what="synonym rewrite")


def md5_rng(text: str) -> random.Random:
    """A generator seeded from the md5 of ``text``: the same input always moves the same way."""
    digest = hashlib.md5(text.encode("utf-8"), usedforsecurity=False).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _shuffle_clauses(sentence: str, rng: random.Random) -> str | None:
    """The sentence with its comma clauses in a seeded new order (None: fewer than 2 clauses)."""
    clauses, end = split_clauses(sentence)
    if len(clauses) < 2 or all(clause == clauses[0] for clause in clauses):
        return None
    order = permute_changed(range(len(clauses)), rng)
    moved = [clauses[i] for i in order]
    if order[0] != 0:
        # The old first clause now sits inside the sentence: lower-case a plain opener ("If …"),
        # never a name; the new first clause gets a capital.
        opener = clauses[0].split(" ", 1)[0]
        if opener.lower() in _COMMON_OPENERS and opener[:1].isupper():
            moved[order.index(0)] = clauses[0][:1].lower() + clauses[0][1:]
        moved[0] = moved[0][:1].upper() + moved[0][1:]
    return ", ".join(moved) + end


@transform_relation(
    id="ad.reorder",
    name="Reorder (presentation)",
    category="presentation",
    description="Shuffle the context sentences and keep the question last; with only one or two "
    "sentences, shuffle the comma clauses inside them. Seeded from the md5 of the text, so a "
    "given input is always reordered the same way.",
    example=EXAMPLE,
    preconditions="at least 2 context sentences, or a sentence with 2 comma clauses",
    ref=f"{PAPER}: reorder operator",
    side=PRESENTATION,
)
def reorder(text: str, ctx: TransformContext) -> str:
    rng = md5_rng(text)  # deliberately not ctx.rng: AgentDiff ties the order to the text
    sentences = split_sentences(text)
    asked = question_index(sentences)
    context = [i for i in range(len(sentences)) if i != asked]
    tail = [asked] if asked is not None else []
    if len(sentences) >= 3 and len({sentences[i] for i in context}) >= 2:
        return join_sentences([sentences[i] for i in permute_changed(context, rng) + tail])
    # One or two sentences: shuffle the comma clauses of the context, else of the question.
    targets = [i for i in context if len(split_clauses(sentences[i])[0]) > 1] or [
        i for i in tail if len(split_clauses(sentences[i])[0]) > 1
    ]
    rewritten = list(sentences)
    for i in targets:
        rewritten[i] = _shuffle_clauses(sentences[i], rng) or sentences[i]
    result = join_sentences([rewritten[i] for i in context + tail])
    if normalise_whitespace(result) == normalise_whitespace(text):
        raise NotApplicable("nothing to reorder: fewer than 2 context sentences or comma clauses")
    return result


@transform_relation(
    id="ad.format",
    name="Format (presentation)",
    category="presentation",
    description='Lay the input out as "- " bullets, one per statement, with the question last '
    'as "Question: …".',
    example=EXAMPLE,
    ref=f"{PAPER}: format operator",
    side=PRESENTATION,
)
def format_bullets(text: str, ctx: TransformContext) -> str:
    context, question = split_question(split_sentences(text))
    if not context and question is None:
        raise NotApplicable("empty input")
    lines = [f"- {sentence}" for sentence in context]
    if question is not None:
        lines.append("Question: " + _QUESTION_LABEL.sub("", question))
    formatted = "\n".join(lines)
    if normalise_whitespace(formatted) == normalise_whitespace(text):
        raise NotApplicable("the input is already laid out this way")
    return formatted


@transform_relation(
    id="ad.distractor",
    name="Distractor (presentation)",
    category="presentation",
    description="Put an explicitly unrelated, neutral sentence (from a fixed list, chosen by the "
    "case seed) before the input.",
    example=EXAMPLE,
    ref=f"{PAPER}: distractor operator",
    side=PRESENTATION,
)
def distractor(text: str, ctx: TransformContext) -> str:
    return f"{ctx.rng.choice(DISTRACTORS)} {text}"
