"""Noun phrases as word lists, for re-assembling sentences (voice change, question form)."""

from __future__ import annotations

from dataclasses import dataclass

from relations.english.categories import CATEGORY_LOOKUP
from relations.english.lexicon import (
    DETERMINERS,
    OBJECT_PRONOUNS,
    OBJECT_TO_SUBJECT,
    PLURAL_PRONOUNS,
    STOPWORDS,
    SUBJECT_PRONOUNS,
    SUBJECT_TO_OBJECT,
)
from relations.english.nouns import is_noun_candidate, is_plural_noun
from relations.english.tokens import SENTENCE_END, capitalize_first, is_word, norm
from relations.english.verbs import is_verb_form


@dataclass
class Phrase:
    """A noun phrase as words (for re-assembly) and whether it is plural."""

    words: list[str]
    plural: bool
    pronoun: bool = False
    proper: bool = False


def parse_phrase(words: list[str], start: int, stop: int, subject: bool) -> int | None:
    """End (exclusive) of a noun phrase starting at ``start``, or None.

    A pronoun; a run of capitalised names; a determiner + 1–3 words that are not function
    words or verbs; or a bare noun (+ one more noun).
    """
    if start >= stop:
        return None
    first = words[start]
    lower = norm(first)
    pronouns = SUBJECT_PRONOUNS if subject else OBJECT_PRONOUNS
    after = start + 1
    if lower in pronouns and not (
        lower == "her" and after < stop and is_noun_candidate(words[after])
    ):
        return after
    if lower in DETERMINERS:
        end = after
        while end < stop and end - after < 3 and np_word(words[end]):
            end += 1
        return end if end > after else None
    if first[:1].isupper() and lower not in STOPWORDS and not is_verb_form(first):
        end = after
        while end < stop and words[end][:1].isupper() and not is_verb_form(words[end]):
            end += 1
        return end
    if is_noun_candidate(first):
        end = after
        if end < stop and is_noun_candidate(words[end]):
            end += 1
        return end
    return None


def np_word(word: str) -> bool:
    """Whether ``word`` may stand inside a noun phrase: a word that is no function word or verb."""
    lower = norm(word)
    return lower.isalpha() and lower not in STOPWORDS and not is_verb_form(lower)


def make_phrase(words: list[str]) -> Phrase:
    """A noun phrase of ``words``, with whether it is a pronoun, a name and plural."""
    lower = [norm(w) for w in words]
    if len(words) == 1 and (lower[0] in SUBJECT_PRONOUNS or lower[0] in OBJECT_PRONOUNS):
        return Phrase(words, lower[0] in PLURAL_PRONOUNS or lower[0] == "i", pronoun=True)
    capitalised = all(w[:1].isupper() for w in words) and lower[0] not in DETERMINERS
    # A lone capitalised plural-looking word that is not a known name is a sentence-initial
    # common noun ("Dogs chase cats"); anything else capitalised is taken for a name.
    proper = capitalised and (
        len(words) > 1 or words[0] in CATEGORY_LOOKUP or not is_plural_noun(words[0])
    )
    plural = lower[0] in {"these", "those", "some"} or (not proper and is_plural_noun(lower[-1]))
    return Phrase(words, plural, proper=proper)


def lower_first(words: list[str]) -> list[str]:
    """Lower-case the first word of a phrase moved inside a sentence ("The" → "the").

    Names keep their capital (relation extraction needs its entities spelled as given).
    """
    first = words[0]
    # "A" has no lower-case tail but is no acronym: "Does a rectangle …", not "Does A rectangle".
    acronym = len(first) > 1 and not first[1:].islower()
    if norm(first) == "i" or make_phrase(words).proper or acronym:
        return list(words)
    return [first[:1].lower() + first[1:], *words[1:]]


def phrase_as_subject(phrase: Phrase) -> str:
    """The phrase as a sentence-initial subject ('me' → 'I', first letter capitalised)."""
    words = list(phrase.words)
    if phrase.pronoun:
        words[0] = OBJECT_TO_SUBJECT.get(norm(words[0]), norm(words[0]))
    return capitalize_first(" ".join(words))


def phrase_as_object(phrase: Phrase) -> str:
    """The phrase as an object ('I' → 'me'; a common noun's capital dropped)."""
    words = list(phrase.words)
    if phrase.pronoun:
        lower = norm(words[0])
        return SUBJECT_TO_OBJECT.get(lower, lower)
    return " ".join(lower_first(words))


def simple_sentence(tokens: list[str]) -> list[int] | None:
    """Word and number indices, when the sentence has only those, spaces, commas and an end."""
    indices = []
    for i, token in enumerate(tokens):
        if is_word(token) or token[:1].isdigit():
            indices.append(i)
        elif not (token.isspace() or token in SENTENCE_END or token == ","):
            return None
    return indices
