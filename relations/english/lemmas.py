"""Verb forms outside our lexicon, read from lemminflect's (it ships its data with the package;
nothing is downloaded).

Our grammar rules change only the verbs of ``relations.english.verbs``: those we know how to
inflect and where we trust the reading as a verb. A sentence can hold another verb ("The doctor
examined the patient and wrote …"), and a rule that moves 'wrote' but not 'examined' writes two
tenses into one sentence. These lookups let a rule see such verbs and leave the sentence alone.
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


def verb_tags(word: str) -> frozenset[str]:
    """The Penn tags ``word`` has as a form of some verb (VBD past, VBZ 3rd person …)."""
    lower = word.lower()
    tags: set[str] = set()
    for lemma in _verb_lemmas(lower):
        with _load_lock:
            inflections = _inflections(lemma)
        tags.update(tag for tag, forms in inflections.items() if lower in forms)
    return frozenset(tags)


def is_unknown_past_verb(word: str) -> bool:
    """A simple-past verb form ('examined', 'hired') that our verb lexicon does not know."""
    return not forms_of(word) and "VBD" in verb_tags(word)


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
