"""Grammatical number of noun phrases: singular ↔ plural, with the verb that follows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from relations.english.lemmas import is_graded_adjective
from relations.english.lexicon import ADJECTIVES, CONJUNCTIONS, DETERMINERS, PREPOSITIONS
from relations.english.nouns import (
    INVARIANT_NOUNS,
    is_noun_candidate,
    is_plural_noun,
    pluralize,
    singularize,
)
from relations.english.tokens import (
    SENTENCE_END,
    capitalize_first,
    is_word,
    match_case,
    next_word,
    norm,
    prev_word,
    word_list,
)
from relations.english.verbs import has_kind, is_verb_form, third_person

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
# Units of time and measure: "in an hour" is one hour, "in hours" is several; the count, not
# only the grammar, would change.
_UNIT_NOUNS = frozenset(
    word_list(
        "second minute hour day week month year decade century metre meter kilometre kilometer "
        "mile litre liter kilogram gram pound dollar euro cent percent"
    )
)


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
        while j is not None and (norm(tokens[j]) in ADJECTIVES or is_graded_adjective(tokens[j])):
            j = next_word(tokens, j)
        if j is None or j in protected or not is_noun_candidate(tokens[j]):
            continue
        if norm(tokens[j]) in _QUANTIFIER_NOUNS or singularize(norm(tokens[j])) in _UNIT_NOUNS:
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
_COPULAS = frozenset(word_list("am is are was were be been being become became remain remains"))


def _agreeable_verb(word: str, to_plural: bool) -> bool:
    """A verb right after the head that agrees with it now: 'is', 'sleeps', 'slept' after a
    singular; 'are', 'sleep', 'slept' after a plural. 'the nearest train' has none."""
    if to_plural:
        return word in VERB_TO_PLURAL or has_kind(word, "3sg", "past") is not None
    return word in VERB_TO_SINGULAR or has_kind(word, "base", "past") is not None


_CLAUSE_OPENERS = CONJUNCTIONS | frozenset(
    word_list("where when that which who whom whether why how what once since until unless")
)


def _opens_clause(tokens: list[str], det: int) -> bool:
    """Whether the phrase at ``det`` starts its clause (and so is likely its subject)."""
    before = prev_word(tokens, det)
    return before is None or norm(tokens[before]) in _CLAUSE_OPENERS


def _verb_agreement(tokens: list[str], phrase: NounPhrase, to_plural: bool) -> bool | None:
    """Whether the verb after the phrase changes with it (True), stays (False: there is none,
    or it belongs to an earlier subject: "the students in the library are"), or None when the
    phrase cannot change: a subject whose verb is not right after it ("The museum in Oslo
    opens", "the museum, which …, opens") or a content word after the head."""
    after = next_word(tokens, phrase.head)
    opens = _opens_clause(tokens, phrase.det)
    if after is None:
        ends = all(t.isspace() or t in SENTENCE_END for t in tokens[phrase.head + 1 :])
        return False if ends or not opens else None
    word = norm(tokens[after])
    if opens:
        return True if _agreeable_verb(word, to_plural) else None
    if word in _FOLLOWERS:
        return False
    if is_verb_form(word):
        before = prev_word(tokens, phrase.det)
        after_preposition = before is not None and norm(tokens[before]) in PREPOSITIONS
        return False if after_preposition else None
    return None


def _safe_to_change(tokens: list[str], phrase: NounPhrase) -> bool:
    """Whether the phrase's number can change without breaking the sentence around it (its
    verb is ``_verb_agreement``'s business).

    A phrase after an auxiliary ("does the garden give") agrees with a verb before it, one
    after 'is' is what a singular subject is ("Paris is a city"), "a" after a number or a
    plural is a rate ("25 pages a day"), and a later singular pronoun ("he", "its") would point
    at a plural.
    """
    before = prev_word(tokens, phrase.det)
    if before is not None and norm(tokens[before]) in _COPULAS:
        return False
    if (
        before is not None
        and norm(tokens[before]) in {"and", "or"}
        and _after_copula(tokens, before)
    ):
        return False  # "Rome is the capital of Italy and a popular destination"
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


def _after_copula(tokens: list[str], index: int) -> bool:
    """Whether the nearest verb left of ``index`` in its sentence is a copula: what follows is
    a predicate."""
    for token in reversed(tokens[:index]):
        if token in SENTENCE_END:
            return False
        if not is_word(token):
            continue
        if norm(token) in _COPULAS:
            return True
        if is_verb_form(token):
            return False
    return False


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
        agree = _verb_agreement(tokens, phrase, to_plural=True)
        if agree is None or not _safe_to_change(tokens, phrase):
            continue
        tokens[phrase.head] = pluralize(noun)
        if agree:
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
        agree = _verb_agreement(tokens, phrase, to_plural=False)
        if agree is None or not _safe_to_change(tokens, phrase):
            continue
        singular = singularize(noun)
        tokens[phrase.head] = singular
        if agree:
            _agree(tokens, phrase.head, VERB_TO_SINGULAR, to_plural=False)
        if det == "some":
            following = next_word(tokens, phrase.det)
            article = _a_or_an(tokens[following] if following is not None else singular)
            tokens[phrase.det] = match_case(tokens[phrase.det], article)
        elif det in PLURAL_DETS:
            tokens[phrase.det] = match_case(tokens[phrase.det], PLURAL_DETS[det])
        changed = True
    return changed
