"""Tense: count present and past finite verbs, and move a sentence from one to the other."""

from __future__ import annotations

from relations.english.agreement import (
    be_present,
    finite_slot,
    finite_verb,
    present_of,
    subject_after,
    subject_of,
)
from relations.english.lemmas import inflect_verb, unknown_finite_form
from relations.english.lexicon import CONJUNCTIONS
from relations.english.tokens import is_word, match_case, norm, prev_word
from relations.english.verbs import AUXILIARIES, MODALS, forms_of, past_tense


def tense_counts(sentences: list[list[str]]) -> tuple[int, int]:
    """(past, present): how many finite verbs of each tense the sentences have."""
    past = present = 0
    for tokens in sentences:
        bare_after = False  # after do-support or a modal the main verb is bare, of no tense
        for i, token in enumerate(tokens):
            if not is_word(token):
                continue
            lower = norm(token)
            if lower in MODALS:
                bare_after = True
            if lower in {"was", "were", "had", "did", "wasn't", "weren't", "hadn't", "didn't"}:
                past += 1
                bare_after = bare_after or lower in {"did", "didn't"}
            elif lower in {"am", "is", "are", "has", "have", "does", "do"} or lower in {
                "isn't",
                "aren't",
                "hasn't",
                "haven't",
                "doesn't",
                "don't",
            }:
                present += 1
                bare_after = bare_after or lower in {"do", "does", "doesn't", "don't"}
            elif (unknown := _unknown_finite(tokens, i)) is not None:
                past += unknown[1] == "past"
                present += unknown[1] == "3sg"
            elif (form := finite_verb(tokens, i)) is not None:
                if form.kind == "base" and bare_after:
                    continue
                if form.kind == "past" and past_tense(form.base) != form.base:
                    past += 1
                elif form.kind in {"3sg", "base"}:
                    present += 1
    return past, present


_TO_PAST = {
    "am": "was",
    "is": "was",
    "are": "were",
    "has": "had",
    "have": "had",
    "does": "did",
    "do": "did",
    "isn't": "wasn't",
    "aren't": "weren't",
    "hasn't": "hadn't",
    "haven't": "hadn't",
    "doesn't": "didn't",
    "don't": "didn't",
}


_WH_WORDS = frozenset(["why", "what", "where", "when", "how", "who", "which"])


def inverted(tokens: list[str], index: int) -> bool:
    """Whether the word at ``index`` opens a question before its subject: "Did you …?",
    "Where did you …?"."""
    if "?" not in tokens or norm(tokens[index]) not in AUXILIARIES:
        return False
    before = prev_word(tokens, index)
    return before is None or (
        norm(tokens[before]) in _WH_WORDS and prev_word(tokens, before) is None
    )


# Words that fix a sentence in one time: "last spring" stays past, "tomorrow" stays ahead.
PAST_MARKERS = frozenset(["yesterday", "ago", "last", "formerly", "previously"])
NON_PAST_MARKERS = frozenset(["tomorrow", "next", "now", "currently", "nowadays"])


def time_marker(tokens: list[str], to_past: bool) -> str | None:
    """A word that ties the sentence to the tense it has ("last spring" when moving to the
    present, "tomorrow" when moving to the past), or None."""
    markers = NON_PAST_MARKERS if to_past else PAST_MARKERS
    return next((t for t in tokens if is_word(t) and norm(t) in markers), None)


def _unknown_finite(tokens: list[str], index: int) -> tuple[str, str] | None:
    """(lemma, 'past' or '3sg') for a verb outside our lexicon standing as a finite verb."""
    token = tokens[index]
    if not is_word(token) or forms_of(token) or norm(token) in AUXILIARIES:
        return None
    found = unknown_finite_form(norm(token))
    return found if found is not None and finite_slot(tokens, index) else None


def sentence_to_past(tokens: list[str]) -> None:
    """Move the sentence's present-tense finite verbs to the past, in place."""
    # After "do"/"does" or a modal the main verb stays bare: "did they pay", not "paid"; "did
    # Tom have", not "had"; "can you tell", not "told".
    do_support = False
    for i, token in enumerate(tokens):
        if not is_word(token):
            continue
        lower = norm(token)
        before = prev_word(tokens, i)
        after_modal = before is not None and norm(tokens[before]) in MODALS | {"to"}
        if lower in MODALS or lower in {"did", "didn't"}:
            do_support = True
            continue
        if lower in {"do", "have"} and do_support:
            continue
        if lower in _TO_PAST and not after_modal:
            tokens[i] = match_case(token, _TO_PAST[lower])
            do_support = do_support or lower in {"do", "does", "don't", "doesn't"}
            continue
        unknown = _unknown_finite(tokens, i)
        if unknown is not None and unknown[1] == "3sg":
            past = inflect_verb(unknown[0], "VBD")
            if past is not None:
                tokens[i] = match_case(token, past)
            continue
        form = finite_verb(tokens, i)
        if form is not None and form.kind == "base" and do_support:
            continue
        if form is not None and form.kind in {"3sg", "base"}:
            tokens[i] = match_case(token, past_tense(form.base))


def sentence_to_present(tokens: list[str]) -> None:
    """Move the sentence's past-tense finite verbs to the present, in place, agreeing with
    their subjects.
    """
    last_subject = "singular"
    for i, token in enumerate(tokens):
        if not is_word(token):
            continue
        lower = norm(token)
        before = prev_word(tokens, i)
        previous = norm(tokens[before]) if before is not None else ""
        if previous in MODALS | {"to"}:
            continue
        if inverted(tokens, i):
            subject = subject_after(tokens, i)
        elif previous in CONJUNCTIONS:
            subject = last_subject
        else:
            subject = subject_of(tokens, i)
        if lower in {"was", "were", "wasn't", "weren't"}:
            be = be_present(subject) if lower in {"was", "wasn't"} else "are"
            if lower.endswith("n't"):
                be = "am not" if be == "am" else be + "n't"
            tokens[i] = match_case(token, be)
        elif lower in {"had", "hadn't", "did", "didn't"}:
            base = "have" if lower.startswith("had") else "do"
            present = present_of(base, subject)
            tokens[i] = match_case(token, present + ("n't" if lower.endswith("n't") else ""))
        elif (unknown := _unknown_finite(tokens, i)) is not None:
            if unknown[1] != "past":
                continue
            present = unknown[0] if subject in {"i", "plural"} else inflect_verb(unknown[0], "VBZ")
            if present is None:
                continue
            tokens[i] = match_case(token, present)
        else:
            form = finite_verb(tokens, i)
            if form is None or form.kind != "past" or past_tense(form.base) == form.base:
                continue
            tokens[i] = match_case(token, present_of(form.base, subject))
        last_subject = subject
