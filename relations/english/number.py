"""Grammatical number of noun phrases: singular ↔ plural, with the verb that follows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from relations.english.lexicon import ADJECTIVES, CONJUNCTIONS, DETERMINERS, PREPOSITIONS
from relations.english.nouns import (
    INVARIANT_NOUNS,
    is_noun_candidate,
    is_plural_noun,
    pluralize,
    singularize,
)
from relations.english.tokens import (
    capitalize_first,
    is_word,
    match_case,
    next_word,
    norm,
    prev_word,
    word_list,
)
from relations.english.verbs import has_kind, third_person

SINGULAR_DETS = {"a": "", "an": "", "this": "these", "that": "those"}
PLURAL_DETS = {"these": "this", "those": "that", "some": "a"}
POSSESSIVE_DETS = frozenset(word_list("the my your his her its our their"))
VERB_TO_PLURAL = {
    "is": "are",
    "was": "were",
    "has": "have",
    "does": "do",
    "isn't": "aren't",
    "wasn't": "weren't",
    "hasn't": "haven't",
    "doesn't": "don't",
}
VERB_TO_SINGULAR = {v: k for k, v in VERB_TO_PLURAL.items()}
_QUANTIFIER_NOUNS = frozenset(word_list("few lot little couple bit number"))


@dataclass
class NounPhrase:
    det: int
    head: int


def noun_phrases(tokens: list[str], protected: set[int]) -> list[NounPhrase]:
    """Determiner + optional adjectives + a noun (best effort, no tagger)."""
    phrases = []
    for i, token in enumerate(tokens):
        if not is_word(token) or i in protected or norm(token) not in DETERMINERS:
            continue
        j = next_word(tokens, i)
        while j is not None and norm(tokens[j]) in ADJECTIVES:
            j = next_word(tokens, j)
        if j is None or j in protected or not is_noun_candidate(tokens[j]):
            continue
        if norm(tokens[j]) in _QUANTIFIER_NOUNS:
            continue
        # A second noun makes a compound ("school bus"): its last word is the head.
        k = next_word(tokens, j)
        if (
            k is not None
            and k not in protected
            and is_noun_candidate(tokens[k])
            and not is_plural_noun(tokens[k])  # "the dog growls": an unknown verb, not a noun
            and not re.search(r"(ed|ing)$", norm(tokens[k]))
        ):
            j = k
        phrases.append(NounPhrase(det=i, head=j))
    return phrases


_ADJECTIVE_ENDING = re.compile(r"(?:ful|ous|ive|able|ible|less|ish|ic|al)$")
_DO_SUPPORT = frozenset(word_list("do does did"))
_INVERTING = frozenset(word_list("is are was were has have had can could will would"))
_SINGULAR_PRONOUNS = frozenset(word_list("he she it him his her its himself herself itself"))
_FOLLOWERS = (PREPOSITIONS | CONJUNCTIONS | frozenset(word_list("who which that"))) - {"so"}


def _safe_to_change(tokens: list[str], phrase: NounPhrase) -> bool:
    """Whether the phrase's number can change without breaking the sentence around it.

    The word after the head must be punctuation, a preposition or conjunction, or a verb we can
    agree; a content word there means the "head" was a modifier ("careful work", "opening
    hours") or an adverb hides the verb ("the harvest usually begins"). A phrase after an
    auxiliary ("does the garden give") agrees with a verb before it, "a" after a number or a
    plural is a rate ("25 pages a day"), and a later singular pronoun ("he", "its") would point
    at a plural.
    """
    after = next_word(tokens, phrase.head)
    if after is not None:
        word = norm(tokens[after])
        agreeable = word in VERB_TO_PLURAL or word in VERB_TO_SINGULAR
        agreeable = agreeable or has_kind(word, "3sg", "base", "past") is not None
        if not agreeable and word not in _FOLLOWERS:
            return False
    before = prev_word(tokens, phrase.det)
    if before is not None and _inverted(tokens, before):
        return False
    rate = before is not None and norm(tokens[phrase.det]) in {"a", "an"}
    if rate and (is_plural_noun(tokens[before]) or norm(tokens[before]) in {"once", "twice"}):
        return False
    if _ADJECTIVE_ENDING.search(norm(tokens[phrase.head])):
        return False  # "their careful work": "careful" is no noun, whatever follows it
    # The same noun elsewhere ("the garden … does the garden give") would disagree in number;
    # a gerund ("the acting") has no plural.
    noun = singularize(norm(tokens[phrase.head]))
    if noun.endswith("ing") or any(
        i != phrase.head and is_word(t) and singularize(norm(t)) == noun
        for i, t in enumerate(tokens)
    ):
        return False
    previous = phrase.det - 1
    while previous >= 0 and tokens[previous].isspace():
        previous -= 1
    if previous >= 0 and tokens[previous][:1].isdigit():
        return False
    return not any(norm(t) in _SINGULAR_PRONOUNS for t in tokens[phrase.head + 1 :])


def _inverted(tokens: list[str], aux: int) -> bool:
    """Whether the word at ``aux`` is an auxiliary put before its subject ("does the garden")."""
    word = norm(tokens[aux])
    if word in _DO_SUPPORT:
        return True
    return word in _INVERTING and prev_word(tokens, aux) is None


def _agree(tokens: list[str], head: int, table: dict[str, str], to_plural: bool) -> None:
    verb = next_word(tokens, head)
    if verb is None:
        return
    lower = norm(tokens[verb])
    if lower in table:
        tokens[verb] = match_case(tokens[verb], table[lower])
        return
    form = has_kind(lower, "3sg" if to_plural else "base")
    if form is not None and not has_kind(lower, "past"):
        new = form.base if to_plural else third_person(form.base)
        tokens[verb] = match_case(tokens[verb], new)


def _a_or_an(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def to_plural(tokens: list[str], phrases: list[NounPhrase]) -> bool:
    """Turn the singular ``phrases`` plural, with their determiner and the verb that follows.

    Changes ``tokens`` in place; False when no phrase could change.
    """
    changed = False
    for phrase in reversed(phrases):  # right to left: removals do not shift earlier indices
        det = norm(tokens[phrase.det])
        noun = tokens[phrase.head]
        if norm(noun) in INVARIANT_NOUNS or is_plural_noun(noun):
            continue
        if det not in SINGULAR_DETS and det not in POSSESSIVE_DETS:
            continue
        if not _safe_to_change(tokens, phrase):
            continue
        tokens[phrase.head] = pluralize(noun)
        _agree(tokens, phrase.head, VERB_TO_PLURAL, to_plural=True)
        if SINGULAR_DETS.get(det):
            tokens[phrase.det] = match_case(tokens[phrase.det], SINGULAR_DETS[det])
        elif det in SINGULAR_DETS:
            capital = tokens[phrase.det][:1].isupper()
            following = next_word(tokens, phrase.det)
            tokens[phrase.det : phrase.det + 1] = [""]
            if following is not None and capital:
                tokens[following] = capitalize_first(tokens[following])
            if phrase.det + 1 < len(tokens) and tokens[phrase.det + 1].isspace():
                tokens[phrase.det + 1] = ""
        changed = True
    return changed


def to_singular(tokens: list[str], phrases: list[NounPhrase]) -> bool:
    """Turn the plural ``phrases`` singular, with their determiner and the verb that follows.

    Changes ``tokens`` in place; False when no phrase could change.
    """
    changed = False
    for phrase in reversed(phrases):
        det = norm(tokens[phrase.det])
        noun = tokens[phrase.head]
        if not is_plural_noun(noun) or (det not in PLURAL_DETS and det not in POSSESSIVE_DETS):
            continue
        if not _safe_to_change(tokens, phrase):
            continue
        singular = singularize(noun)
        tokens[phrase.head] = singular
        _agree(tokens, phrase.head, VERB_TO_SINGULAR, to_plural=False)
        if det == "some":
            following = next_word(tokens, phrase.det)
            article = _a_or_an(tokens[following] if following is not None else singular)
            tokens[phrase.det] = match_case(tokens[phrase.det], article)
        elif det in PLURAL_DETS:
            tokens[phrase.det] = match_case(tokens[phrase.det], PLURAL_DETS[det])
        changed = True
    return changed
