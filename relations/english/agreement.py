"""Finite verbs and their subjects: which verb carries the tense and who agrees with it."""

from __future__ import annotations

from relations.english.lexicon import (
    ADJECTIVES,
    ADVERBS,
    DETERMINERS,
    PLURAL_PRONOUNS,
    PREPOSITIONS,
    STOPWORDS,
    SUBJECT_PRONOUNS,
)
from relations.english.nouns import SINGULAR_OF, is_plural_noun
from relations.english.tokens import is_word, norm, prev_word
from relations.english.verbs import (
    AUXILIARIES,
    NEGATED,
    VerbForm,
    forms_of,
    is_verb_form,
    third_person,
)


def subject_of(tokens: list[str], index: int) -> str:
    """'i', 'plural' or 'singular': the grammatical subject just left of a verb."""
    j = prev_word(tokens, index)
    while j is not None and (norm(tokens[j]) in ADVERBS or norm(tokens[j]).endswith("ly")):
        j = prev_word(tokens, j)
    if j is None:
        return "singular"
    word = norm(tokens[j])
    if word == "i":
        return "i"
    if word in PLURAL_PRONOUNS:
        return "plural"
    if word in SUBJECT_PRONOUNS:
        return "singular"
    if tokens[j][:1].isupper() and word not in STOPWORDS:
        return "plural" if is_plural_noun(word) and word not in SINGULAR_OF else "singular"
    before = prev_word(tokens, j)
    after_determiner = before is not None and norm(tokens[before]) in DETERMINERS
    if word not in STOPWORDS and (after_determiner or not is_verb_form(word)):
        return "plural" if is_plural_noun(word) else "singular"
    return "singular"


def present_of(base: str, subject: str) -> str:
    """The present form of ``base`` for a subject kind ('i', 'plural' or 'singular')."""
    return base if subject in {"i", "plural"} else third_person(base)


def be_present(subject: str) -> str:
    """'am', 'are' or 'is' for a subject kind ('i', 'plural' or 'singular')."""
    return {"i": "am", "plural": "are"}.get(subject, "is")


def finite_verb(tokens: list[str], index: int) -> VerbForm | None:
    """The lexicon verb at ``index`` if it is used as a finite verb (best effort).

    It needs a word before it in the same sentence that is not a determiner, preposition, 'to',
    an auxiliary (then it is a participle or an infinitive) or an adjective; a bare base form
    also needs a plural or first/second-person subject.
    """
    forms = forms_of(tokens[index])
    if not forms:
        return None
    before = prev_word(tokens, index)
    if before is None and not _after_comma_inside_sentence(tokens, index):
        return None
    previous = norm(tokens[before]) if before is not None else ""
    if (
        previous in DETERMINERS
        or previous in PREPOSITIONS
        or previous in AUXILIARIES
        or previous in NEGATED
        or previous in ADJECTIVES
        or previous in {"not", "to"}
    ):
        return None
    for kind in ("3sg", "past"):
        for form in forms:
            if form.kind == kind:
                return form
    base = next((f for f in forms if f.kind == "base"), None)
    if base is not None and subject_of(tokens, index) in {"i", "plural"}:
        return base
    return None


def _after_comma_inside_sentence(tokens: list[str], index: int) -> bool:
    # "Sarah, my neighbour, bakes bread": a comma, and some word before it.
    for j in range(index - 1, -1, -1):
        if tokens[j].isspace():
            continue
        return tokens[j] == "," and any(is_word(t) for t in tokens[:j])
    return False
