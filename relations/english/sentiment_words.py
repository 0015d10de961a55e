"""Our small lexicon of sentiment-bearing words, for the validity gate.

A rewrite that drops every positive word of a review ("a calm, ordinary Tuesday" → "a normal
Tuesday"), or brings in a polarity the source did not have, has changed what a sentiment model
should answer. Our own lists of clearly evaluative words (and a few phrasal verbs); words that
are often plain description in word problems ("fast", "late", "cheap", "problem") are left out,
so a paraphrase of a math problem is not rejected for them. Not a sentiment classifier: the gate
only asks whether each polarity present survives.
"""

from __future__ import annotations

import re
from collections import Counter

from relations.english.tokens import word_list

POSITIVE = frozenset(
    word_list(
        """
        good great excellent wonderful fantastic amazing brilliant superb lovely nice pleasant
        delightful perfect outstanding impressive beautiful charming friendly helpful calm
        peaceful relaxing comfortable cozy cosy tasty delicious enjoyable enjoyed enjoy love
        loved loves liked happy glad pleased satisfied grateful thankful recommend recommended
        favourite favorite fun funny exciting thrilling reliable smooth generous polite attentive
        """
    )
)
NEGATIVE = frozenset(
    word_list(
        """
        bad poor terrible awful horrible dreadful disappointing disappointed disappointment
        rude unfriendly unhelpful dirty filthy noisy cold stale bland tasteless boring dull
        broken flimsy uncomfortable cramped overpriced annoying annoyed angry upset sad unhappy
        frustrated frustrating hate hated hates dislike disliked worst useless awkward mediocre
        predictable wooden messy ugly painful complaint complain complained stressful chaotic
        hostile
        """
    )
)
_PHRASES = {
    "hung up": "negative",
    "hang up": "negative",
    "hangs up": "negative",
    "let down": "negative",
    "fell apart": "negative",
}
_WORD = re.compile(r"[a-z][a-z'-]*")


def polarity_of(word: str) -> str | None:
    """The polarity of a lower-cased word, its adverb too ("rudely", "happily", "terribly")."""
    for form in _base_forms(word):
        if form in POSITIVE:
            return "positive"
        if form in NEGATIVE:
            return "negative"
    return None


def _base_forms(word: str) -> tuple[str, ...]:
    if not word.endswith("ly") or len(word) < 5:
        return (word,)
    stem = word[:-2]
    if stem.endswith("i"):  # happily → happy
        return word, stem[:-1] + "y"
    if word.endswith("bly"):  # terribly → terrible, comfortably → comfortable
        return word, word[:-1] + "e"
    return word, stem


def polarity_counts(text: str) -> Counter[str]:
    """How many sentiment words (and phrases) of each polarity ``text`` has."""
    lowered = text.lower().replace("’", "'")
    counts: Counter[str] = Counter()
    for word in _WORD.findall(lowered):
        polarity = polarity_of(word)
        if polarity is not None:
            counts[polarity] += 1
    for phrase, polarity in _PHRASES.items():
        counts[polarity] += len(re.findall(rf"\b{phrase}\b", lowered))
    return counts


def polarities(text: str) -> set[str]:
    """The polarities ("positive", "negative") that ``text`` has a sentiment word of."""
    return {polarity for polarity, count in polarity_counts(text).items() if count}
