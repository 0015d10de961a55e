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
from relations.llm_prompts import PARAPHRASE_EXAMPLES, single_line_rewrite
from relations.registry import transform_relation
from relations.text_utils import (
    join_sentences,
    leans_on_previous,
    normalise_whitespace,
    permute_changed,
    question_index,
    sentence_groups,
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
    return single_line_rewrite(
        ctx, _PARAPHRASE, text, what="paraphrase", examples=PARAPHRASE_EXAMPLES, by_sentence=True
    )


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


# A two-clause sentence opening with one of these subordinate clauses can put it last:
# "If it rains, the picnic moves." → "The picnic moves if it rains." Other comma clauses
# ("Lena packs 12, and her colleague packs 9") cannot move without breaking the sentence.
_SUBORDINATORS = frozenset(
    {"if", "when", "while", "after", "before", "since", "because", "although", "though", "once"}
)


def _move_subordinate_clause(sentence: str) -> str | None:
    """The sentence with its opening subordinate clause moved to the end (None: no such clause)."""
    clauses, end = split_clauses(sentence)
    if len(clauses) != 2:
        return None
    subordinate, main = clauses
    opener = subordinate.split(" ", 1)[0]
    if opener.lower() not in _SUBORDINATORS or not main[:1].isalpha():
        return None
    main_opener = main.split(" ", 1)[0]
    if main_opener.lower() in _SUBORDINATORS | {"then", "and", "but", "so", "or"}:
        return None
    if leans_on_previous(main):  # "what is its speed" would come before the train it means
        return None
    lowered = subordinate[:1].lower() + subordinate[1:]
    return main[:1].upper() + main[1:] + " " + lowered + end


@transform_relation(
    id="ad.reorder",
    name="Reorder (presentation)",
    category="presentation",
    description="Shuffle the middle context sentences, anchoring the first sentence (it "
    "introduces who and what) and the question (last); a sentence that leans on the one before "
    "it ('She …', 'Then …') moves with it. Without two movable sentences, an opening 'If …, …' "
    "clause moves to the end of its sentence. Seeded from the md5 of the text, so a given input "
    "is always reordered the same way.",
    example=EXAMPLE,
    preconditions="2 movable sentences between the first and the question, or an opening "
    "subordinate clause",
    ref=f"{PAPER}: reorder operator",
    side=PRESENTATION,
)
def reorder(text: str, ctx: TransformContext) -> str:
    rng = md5_rng(text)  # deliberately not ctx.rng: AgentDiff ties the order to the text
    sentences = split_sentences(text)
    asked = question_index(sentences)
    context = [sentences[i] for i in range(len(sentences)) if i != asked]
    tail = [sentences[asked]] if asked is not None else []
    if not tail and len(context) > 1:
        tail = [context.pop()]  # no question: the last sentence is the other anchor
    head, *groups = sentence_groups(context) or [[]]
    if len(groups) >= 2 and any(group != groups[0] for group in groups):
        moved = [sentence for group in permute_changed(groups, rng) for sentence in group]
        return join_sentences(head + moved + tail)
    rewritten = [_move_subordinate_clause(sentence) or sentence for sentence in sentences]
    result = join_sentences(rewritten)
    if normalise_whitespace(result) == normalise_whitespace(text):
        raise NotApplicable(
            "nothing to reorder: fewer than 2 movable sentences between the first and the "
            "question, and no opening subordinate clause"
        )
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
