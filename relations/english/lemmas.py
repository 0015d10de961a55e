"""Verb and adjective forms outside our lexicon, read from lemminflect's (it ships its tables
with the package; nothing is downloaded).

Our grammar rules know the verbs of ``relations.english.verbs``. A sentence can hold another
verb ("The doctor examined the patient and wrote …"), and a rule that moves 'wrote' but not
'examined' writes two tenses into one sentence; negation would skip 'hired' and negate a later
verb. These lookups let the rules see such a verb where it stands as a finite verb
(``agreement.finite_slot``) and inflect it.
"""

from __future__ import annotations

import threading
from functools import cache

from relations.english.verbs import forms_of

_load_lock = threading.Lock()


@cache
def _inflections(lemma: str) -> dict[str, tuple[str, ...]]:
    import lemminflect

    return lemminflect.getAllInflections(lemma, upos="VERB")


@cache
def _verb_lemmas(word: str) -> tuple[str, ...]:
    # The first call loads lemminflect's tables: once, whichever thread asks first.
    with _load_lock:
        import lemminflect

        return tuple(lemminflect.getAllLemmas(word, upos="VERB").get("VERB", ()))


def unknown_finite_form(word: str) -> tuple[str, str] | None:
    """(lemma, 'past' or '3sg') for a simple-past or third-person verb form outside our lexicon
    ('hired' → ('hire', 'past'), 'boils' → ('boil', '3sg')), or None."""
    lower = word.lower()
    if forms_of(lower):
        return None
    for lemma in _verb_lemmas(lower):
        with _load_lock:
            inflections = _inflections(lemma)
        if lower in inflections.get("VBD", ()):
            return lemma, "past"
        if lower in inflections.get("VBZ", ()):
            return lemma, "3sg"
    return None


@cache
def is_graded_adjective(word: str) -> bool:
    """A comparative or superlative ('nearest', 'older'): an adjective, never a noun head."""
    with _load_lock:
        import lemminflect

        lemmas = lemminflect.getAllLemmas(word.lower())
    return any(lemma != word.lower() for lemma in lemmas.get("ADJ", ())) and "NOUN" not in lemmas


def inflect_verb(lemma: str, tag: str) -> str | None:
    """The form of a verb for a Penn tag ('VBD' past, 'VBZ' third person), or None."""
    with _load_lock:
        forms = _inflections(lemma).get(tag, ())
    return forms[0] if forms else None
