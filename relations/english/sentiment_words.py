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


def polarity_counts(text: str) -> Counter[str]:
    """How many sentiment words (and phrases) of each polarity ``text`` has."""
    lowered = text.lower().replace("’", "'")
    counts: Counter[str] = Counter()
    for word in _WORD.findall(lowered):
        if word in POSITIVE:
            counts["positive"] += 1
        elif word in NEGATIVE:
            counts["negative"] += 1
    for phrase, polarity in _PHRASES.items():
        counts[polarity] += len(re.findall(rf"\b{phrase}\b", lowered))
    return counts


def polarities(text: str) -> set[str]:
    """The polarities ("positive", "negative") that ``text`` has a sentiment word of."""
    lowered = text.lower().replace("’", "'")
    found: set[str] = set()
    for word in _WORD.findall(lowered):
        if word in POSITIVE:
            found.add("positive")
        elif word in NEGATIVE:
            found.add("negative")
    for phrase, polarity in _PHRASES.items():
        if re.search(rf"\b{phrase}\b", lowered):
            found.add(polarity)
    return found
