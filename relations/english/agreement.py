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
from relations.english.protect import NUMBER_WORD_LIST
from relations.english.tokens import is_word, next_word, norm, prev_word
from relations.english.verbs import (
    AUXILIARIES,
    NEGATED,
    VerbForm,
    forms_of,
    is_verb_form,
    third_person,
)


def subject_of(tokens: list[str], index: int) -> str:
    """'i', 'plural' or 'singular': the grammatical subject just left of a verb.

    Two nouns joined by 'and' are plural ("Peter and Sarah buy"), and a noun inside a phrase
    after the subject is skipped ("Five students in the class pass": the students pass)."""
    j = prev_word(tokens, index)
    while j is not None and (norm(tokens[j]) in ADVERBS or norm(tokens[j]).endswith("ly")):
        j = prev_word(tokens, j)
    j = _past_prepositional_phrase(tokens, j)
    if j is None:
        return "singular"
    word = norm(tokens[j])
    if _joined_by_and(tokens, j):
        return "plural"
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


def subject_after(tokens: list[str], index: int) -> str:
    """'i', 'plural' or 'singular': the subject right after an auxiliary put before it, as in a
    question ("Did you park …?" → 'plural': "Do you park …?")."""
    j = next_word(tokens, index)
    while j is not None and (norm(tokens[j]) in DETERMINERS or norm(tokens[j]) in ADJECTIVES):
        j = next_word(tokens, j)
    if j is None:
        return "singular"
    word = norm(tokens[j])
    if word == "i":
        return "i"
    if word in PLURAL_PRONOUNS:
        return "plural"
    if word in SUBJECT_PRONOUNS or tokens[j][:1].isupper():
        return "singular"
    return "plural" if is_plural_noun(word) else "singular"


def _past_prepositional_phrase(tokens: list[str], j: int | None) -> int | None:
    """The noun a phrase 'preposition (determiner) noun' ending at ``j`` follows, if any:
    "students in the class" → "students"."""
    if j is None:
        return None
    k = prev_word(tokens, j)
    if k is not None and norm(tokens[k]) in DETERMINERS:
        k = prev_word(tokens, k)
    if k is None or norm(tokens[k]) not in PREPOSITIONS:
        return j
    noun = prev_word(tokens, k)
    if noun is None or is_verb_form(tokens[noun]) or norm(tokens[noun]) in STOPWORDS:
        return j
    return noun


def _joined_by_and(tokens: list[str], j: int) -> bool:
    """Whether the noun at ``j`` is the second of two joined by 'and' ("Peter and Sarah")."""
    k = prev_word(tokens, j)
    if k is not None and norm(tokens[k]) in DETERMINERS:
        k = prev_word(tokens, k)
    if k is None or norm(tokens[k]) != "and":
        return False
    first = prev_word(tokens, k)
    return (
        first is not None
        and not is_verb_form(tokens[first])
        and norm(tokens[first]) not in (STOPWORDS - SUBJECT_PRONOUNS)
    )


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


_NOT_BEFORE_FINITE = (
    DETERMINERS | PREPOSITIONS | AUXILIARIES | ADJECTIVES | frozenset(NEGATED) | NUMBER_WORD_LIST
) | {"not", "to", "get"}


def finite_slot(tokens: list[str], index: int) -> bool:
    """Whether the word at ``index`` stands where a finite verb would, whatever the word: after
    a subject, not after a determiner, preposition, auxiliary, adjective, number, verb or 'to'
    (adverbs skipped), nor before 'by' (a participle: "the patient examined by …").

    For verbs outside our lexicon, so that a rule can see them ("three bridges" is no verb)."""
    before = prev_word(tokens, index)
    while before is not None and (
        norm(tokens[before]) in ADVERBS or norm(tokens[before]).endswith("ly")
    ):
        before = prev_word(tokens, before)
    if before is None:
        return False
    previous = norm(tokens[before])
    if previous in _NOT_BEFORE_FINITE or previous[:1].isdigit() or is_verb_form(previous):
        return False  # after a verb comes its object: "She sells flowers"
    after = next_word(tokens, index)
    return after is None or norm(tokens[after]) != "by"


def _after_comma_inside_sentence(tokens: list[str], index: int) -> bool:
    # "Sarah, my neighbour, bakes bread": a comma, and some word before it.
    for j in range(index - 1, -1, -1):
        if tokens[j].isspace():
            continue
        return tokens[j] == "," and any(is_word(t) for t in tokens[:j])
    return False
