"""Tense: count present and past finite verbs, and move a sentence from one to the other."""

from __future__ import annotations

from relations.english.agreement import be_present, finite_verb, present_of, subject_of
from relations.english.lexicon import CONJUNCTIONS
from relations.english.tokens import is_word, match_case, norm, prev_word
from relations.english.verbs import MODALS, past_tense


def tense_counts(sentences: list[list[str]]) -> tuple[int, int]:
    """(past, present): how many finite verbs of each tense the sentences have."""
    past = present = 0
    for tokens in sentences:
        for i, token in enumerate(tokens):
            if not is_word(token):
                continue
            lower = norm(token)
            if lower in {"was", "were", "had", "did", "wasn't", "weren't", "hadn't", "didn't"}:
                past += 1
            elif lower in {"am", "is", "are", "has", "have", "does", "do"} or lower in {
                "isn't",
                "aren't",
                "hasn't",
                "haven't",
                "doesn't",
                "don't",
            }:
                present += 1
            elif (form := finite_verb(tokens, i)) is not None:
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


def sentence_to_past(tokens: list[str]) -> None:
    """Move the sentence's present-tense finite verbs to the past, in place."""
    do_support = False  # after "do"/"does" the main verb stays bare: "did they pay", not "paid"
    for i, token in enumerate(tokens):
        if not is_word(token):
            continue
        lower = norm(token)
        before = prev_word(tokens, i)
        after_modal = before is not None and norm(tokens[before]) in MODALS | {"to"}
        if lower in _TO_PAST and not after_modal:
            tokens[i] = match_case(token, _TO_PAST[lower])
            do_support = do_support or lower in {"do", "does", "don't", "doesn't"}
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
        subject = last_subject if previous in CONJUNCTIONS else subject_of(tokens, i)
        if lower in {"was", "were", "wasn't", "weren't"}:
            be = be_present(subject) if lower in {"was", "wasn't"} else "are"
            if lower.endswith("n't"):
                be = "am not" if be == "am" else be + "n't"
            tokens[i] = match_case(token, be)
        elif lower in {"had", "hadn't", "did", "didn't"}:
            base = "have" if lower.startswith("had") else "do"
            present = present_of(base, subject)
            tokens[i] = match_case(token, present + ("n't" if lower.endswith("n't") else ""))
        else:
            form = finite_verb(tokens, i)
            if form is None or form.kind != "past" or past_tense(form.base) == form.base:
                continue
            tokens[i] = match_case(token, present_of(form.base, subject))
        last_subject = subject
