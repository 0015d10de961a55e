"""Nouns: plural and singular forms, and whether a word could be a noun."""

from __future__ import annotations

import re

from relations.english.lexicon import ADJECTIVES, PLURAL_PRONOUNS, STOPWORDS
from relations.english.tokens import match_case, norm, word_list
from relations.english.verbs import is_verb_form

IRREGULAR_PLURALS = {
    "man": "men",
    "woman": "women",
    "child": "children",
    "person": "people",
    "mouse": "mice",
    "foot": "feet",
    "tooth": "teeth",
    "goose": "geese",
    "knife": "knives",
    "wife": "wives",
    "life": "lives",
    "leaf": "leaves",
    "wolf": "wolves",
    "half": "halves",
    "shelf": "shelves",
    "thief": "thieves",
    "loaf": "loaves",
    "potato": "potatoes",
    "mango": "mangoes",
    "tomato": "tomatoes",
    "hero": "heroes",
}
SINGULAR_OF = {plural: singular for singular, plural in IRREGULAR_PLURALS.items()}
# Uncountable or invariant nouns: their number is not changed.
INVARIANT_NOUNS = frozenset(
    word_list(
        """
        sheep fish deer series species news information water money rice advice furniture
        luggage equipment music homework weather bread milk traffic research knowledge evidence
        staff fruit
        """
    )
)


def pluralize(noun: str) -> str:
    """The plural of a singular noun (irregular ones from our list), in the noun's case."""
    lower = noun.lower()
    if lower in IRREGULAR_PLURALS:
        return match_case(noun, IRREGULAR_PLURALS[lower])
    if re.search(r"(s|sh|ch|x|z)$", lower):
        return noun + "es"
    if re.search(r"[^aeiou]y$", lower):
        return noun[:-1] + "ies"
    return noun + "s"


def singularize(noun: str) -> str:
    """The singular of a plural noun (irregular ones from our list), in the noun's case."""
    lower = noun.lower()
    if lower in SINGULAR_OF:
        return match_case(noun, SINGULAR_OF[lower])
    if lower.endswith("ies") and len(lower) > 4:
        return noun[:-3] + "y"
    if re.search(r"(ss|sh|ch|x|z)es$", lower):
        return noun[:-2]
    if lower.endswith("s") and not re.search(r"(ss|us|is)$", lower):
        return noun[:-1]
    return noun


def is_plural_noun(word: str) -> bool:
    """Whether ``word`` reads as a plural noun or pronoun (function words are not)."""
    lower = norm(word)
    if lower in SINGULAR_OF or lower in PLURAL_PRONOUNS:
        return True
    if lower in INVARIANT_NOUNS or lower in STOPWORDS or lower in {"his", "its", "this", "us"}:
        return False
    return singularize(lower) != lower


def is_noun_candidate(word: str) -> bool:
    """Could be a noun: alphabetic, not a function word, adjective, adverb or known verb form."""
    lower = norm(word)
    return (
        lower.isalpha()
        and lower not in STOPWORDS
        and lower not in ADJECTIVES
        and not lower.endswith("ly")
        and not is_verb_form(lower)
    )
