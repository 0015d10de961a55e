"""Our small lexicon of sentiment-bearing words, for the validity gate.

A rewrite that drops every positive word of a review ("a calm, ordinary Tuesday" → "a normal
Tuesday"), or brings in a polarity the source did not have, has changed what a sentiment model
should answer. Our own lists of common evaluative words (and two phrasal verbs); not a sentiment
classifier: the gate only asks whether each polarity present survives.
"""

from __future__ import annotations

import re

from relations.english.tokens import word_list

POSITIVE = frozenset(
    word_list(
        """
        good great excellent wonderful fantastic amazing brilliant superb lovely nice pleasant
        delightful perfect outstanding impressive beautiful charming friendly helpful kind warm
        calm peaceful quiet relaxing comfortable cozy cosy clean fresh tasty delicious enjoyable
        enjoyed enjoy love loved loves like liked happy glad pleased satisfied grateful thankful
        recommend recommended best better fine favourite favorite fun funny exciting thrilling
        reliable fast quick smooth easy bright sharp generous polite attentive efficient
        """
    )
)
NEGATIVE = frozenset(
    word_list(
        """
        bad poor terrible awful horrible dreadful disappointing disappointed disappointment
        rude unfriendly unhelpful dirty filthy noisy loud cold stale bland tasteless boring dull
        slow broken cheap flimsy uncomfortable cramped expensive overpriced annoying annoyed
        angry upset sad unhappy frustrated frustrating hate hated hates dislike disliked worst
        worse wrong useless awkward mediocre predictable wooden messy ugly painful late lost
        never-again fail failed failure problem problems complaint complain complained busy
        stressful chaotic hostile
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
