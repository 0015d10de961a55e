"""Sentiment relations (LLMorph 150/151/154): rule-based intensifiers.

The follow-up score must be at least as extreme as the source score. A source score of exactly
0.5 has no side to be more extreme on: LLMorph's catalogue verifies the source score is not 0.5,
and such a case is SKIP (``SCORE_OFF_MIDPOINT``), not an automatic PASS.
"""

from __future__ import annotations

import re

from relations.base import Expectation, NotApplicable, Relation, RelationKind, TransformContext
from relations.oracles import SCORE_OFF_MIDPOINT
from relations.registry import register

CATEGORY = "task-specific"
SENTIMENT_TASKS = frozenset({"sentiment_score", "sentiment"})


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Sentiment-bearing adjectives (our own list). Non-gradable ("extreme") ones take "absolutely"-type
# intensifiers; gradable ones take "really"-type intensifiers, so the follow-up stays idiomatic.
GRADABLE_ADJECTIVES = _wordset(
    """good nice funny clever smart impressive engaging entertaining fresh
    strong solid pleasant happy glad enjoyable charming lovely beautiful sweet warm witty
    satisfying helpful friendly tasty comfortable reliable fast smooth elegant memorable
    compelling thoughtful gripping interesting exciting powerful bad poor boring dull bland weak
    disappointing annoying awkward clumsy messy slow tedious predictable silly sad unpleasant rude
    cheap mediocre forgettable painful tiresome shallow confusing frustrating ugly stupid lazy
    noisy dirty uncomfortable unreliable overpriced"""
)
EXTREME_ADJECTIVES = _wordset(
    """amazing brilliant fantastic superb wonderful perfect outstanding stunning gorgeous
    delightful excellent great incredible magnificent flawless terrible awful horrible dreadful
    unbearable pathetic useless pointless atrocious abysmal disastrous lousy"""
)
ADJECTIVES = GRADABLE_ADJECTIVES | EXTREME_ADJECTIVES
GRADABLE_EMPHASIS = ("really", "very", "extremely", "incredibly", "genuinely")
EXTREME_EMPHASIS = ("absolutely", "truly", "utterly", "simply")
# Other words that carry the sentiment of a text (verbs and nouns), for capitalisation.
SENTIMENT_WORDS = ADJECTIVES | _wordset(
    """love loved loves loving adore adored adores enjoy enjoyed enjoys hate hated hates loathe
    loathed dislike disliked dislikes recommend recommended masterpiece gem triumph delight
    disaster mess waste failure flop nightmare"""
)
# A word right before the adjective that already intensifies or negates it: emphasis would
# either be redundant or soften a negation ("not good" → "not really good").
_BLOCKERS = frozenset(
    set(GRADABLE_EMPHASIS)
    | set(EXTREME_EMPHASIS)
    | {"not", "never", "no", "hardly", "barely", "so", "too", "quite", "pretty", "rather", "most"}
    | {"more", "less", "least", "fairly", "somewhat", "slightly", "nor", "neither", "without"}
)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "mr", "mrs", "ms", "dr", "vs", "st", "no", "prof"})
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def exclamation(text: str, ctx: TransformContext) -> str:
    """150: every sentence-ending '.' becomes '!' (decimals, ellipses, abbreviations kept); a
    text with none gets a '!' at its end, as LLMorph's relation does."""
    out: list[str] = []
    last = 0
    changed = False
    for match in re.finditer(r"(?<!\.)\.(?!\.)(?=[\"'”’)\]]*(?:\s|$))", text):
        before = text[: match.start()]
        word = re.search(r"([A-Za-z.]+)$", before)
        token = word.group(1).lower() if word else ""
        if token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
            continue
        out.append(text[last : match.start()] + "!")
        last = match.end()
        changed = True
    if not changed:
        if not text.strip():
            raise NotApplicable("empty text: nothing to end with '!'")
        return text.rstrip() + "!"
    out.append(text[last:])
    return "".join(out)


def _sentence_start(text: str, index: int) -> bool:
    i = index
    while i > 0 and text[i - 1] in " \t\r\n\"'“‘(":
        i -= 1
    return i == 0 or text[i - 1] in ".!?"


def _previous_word(text: str, index: int) -> str:
    words = re.findall(r"[A-Za-z'’]+", text[max(0, index - 40) : index])
    return words[-1].lower() if words else ""


def emphasis(text: str, ctx: TransformContext) -> str:
    """151: put an intensifier before each sentiment adjective not already intensified/negated."""
    out: list[str] = []
    last = 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        lower = word.lower()
        if lower not in ADJECTIVES:
            continue
        previous = _previous_word(text, match.start())
        if previous in _BLOCKERS or previous.endswith(("n't", "n’t")):
            continue
        choices = EXTREME_EMPHASIS if lower in EXTREME_ADJECTIVES else GRADABLE_EMPHASIS
        emphatic = choices[ctx.rng.randrange(len(choices))]
        if word.isupper() and len(word) > 1:
            emphatic, replacement = emphatic.upper(), word
        elif word[0].isupper() and _sentence_start(text, match.start()):
            emphatic, replacement = emphatic.capitalize(), word[0].lower() + word[1:]
        else:
            replacement = word
        out.append(text[last : match.start()] + f"{emphatic} {replacement}")
        last = match.end()
    if not out:
        raise NotApplicable("no sentiment adjective to emphasise")
    out.append(text[last:])
    return "".join(out)


def capitalise_keywords(text: str, ctx: TransformContext) -> str:
    """154: write the sentiment-bearing words in capitals."""

    def upper(match: re.Match[str]) -> str:
        word = match.group(0)
        return word.upper() if word.lower() in SENTIMENT_WORDS else word

    result = _WORD.sub(upper, text)
    if result == text:
        raise NotApplicable("no sentiment keyword to capitalise (or all already in capitals)")
    return result


_SENTIMENT_NOTE = (
    "Sentiment score: the follow-up must be at least as far from neutral (0.5) as the source, on "
    "the same side (a source score of exactly 0.5 is SKIP); sentiment label: the label must not "
    "change."
)

for _id, _ref, _name, _fn, _description, _pre, _example in (
    (
        "sentiment.exclamation",
        150,
        "Replace '.' with '!'",
        exclamation,
        "End sentences with '!' instead of '.' (a text without a sentence-ending '.' gets a '!' "
        "at its end): the text reads more emphatic, so the sentiment should be at least as "
        "strong.",
        "A non-empty text (decimals, '...' and abbreviations keep their '.').",
        "The soundtrack is wonderful. The acting felt a bit stiff at times.",
    ),
    (
        "sentiment.emphasis",
        151,
        "Add emphasis words",
        emphasis,
        "Insert an intensifier from our list ('really', 'extremely' for gradable adjectives; "
        "'absolutely', 'truly' for extreme ones) before each sentiment adjective.",
        "The text must contain a sentiment adjective from our list that is not already "
        "intensified or negated.",
        "The service was slow and the soup was bland, but the dessert was amazing.",
    ),
    (
        "sentiment.capitalise_keywords",
        154,
        "Capitalise key words",
        capitalise_keywords,
        "Write the sentiment-bearing words (adjectives, 'love', 'hate', 'disaster' …) in capitals, "
        "like shouting them.",
        "The text must contain a sentiment word from our list that is not already in capitals.",
        "I loved the first half, but the ending was a boring mess.",
    ),
):
    register(
        Relation(
            id=_id,
            name=_name,
            family="sentiment",
            category=CATEGORY,
            description=_description,
            example=_example,
            kind=RelationKind.RULE,
            expectation=Expectation.AT_LEAST_AS_EXTREME,
            source_precondition=SCORE_OFF_MIDPOINT,
            transform=_fn,
            tasks=SENTIMENT_TASKS,
            fields=("text",),
            preconditions=f"{_pre} {_SENTIMENT_NOTE}",
            ref=f"LLMorph {_ref}",
        )
    )
