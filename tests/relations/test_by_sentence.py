"""A small rewriter is asked sentence by sentence (``relations.candidates.best_by_sentence``).

Given a whole word problem, the embedded SmolLM2-135M answers it (1 valid rewrite in 150
attempts on our held-out word problems); given one statement of it, it rewrites that statement
passably. So its rewrite of a text with a question is put together from rewrites of each
statement, the question kept as written. Each test checks the follow-up by content: every
sentence of it is its own source sentence or that sentence's own rewrite, in place.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations.apply import Candidates, generate_followups
from relations.english.close_rewrite import SmallRewriter
from relations.registry import get_relation
from relations.requirements import wordnet_status
from relations.validity import gate_followup

pytestmark = pytest.mark.skipif(
    not wordnet_status()[0], reason="WordNet is not installed (make installs it)"
)

MATH = BUILTIN_TASKS["math"]
SENTIMENT = BUILTIN_TASKS["sentiment"]
PROBLEM = "Tom has 3 marbles.\nHe gives 2 marbles to Ann. How many marbles does Tom have now?"
# Close rewrites of each statement (a verb changed: the closer rule allows it).
CLOSE = {
    "Tom has 3 marbles.": "Tom owns 3 marbles.",
    "He gives 2 marbles to Ann.": "He hands 2 marbles to Ann.",
}
ANSWER = "Tom has 1 marble left."  # what a small model says to the whole problem


def _similar(a: str, b: str) -> float:
    return 1.0 if a == b else 0.9


def _text_of(prompt: str) -> str:
    return re.search(r"<text>\n(.*)\n</text>", prompt, re.DOTALL).group(1)


class Rewriter:
    """A stand-in rewriter: ``answer(text, candidate)`` for each prompt's text; records the
    texts it was asked to rewrite."""

    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def __call__(self, prompt: str, candidate: int) -> str:
        text = _text_of(prompt)
        self.asked.append((text, candidate))
        return self.answer(text, candidate)


def _followup(relation_id, text, rewriter, *, task=MATH, small=True, whole_text=False):
    field = task.fields[0]
    candidates = Candidates(
        3,
        rewriter,
        _similar,
        small_rewriter=SmallRewriter() if small else None,
        whole_text=whole_text,
    )
    (result,) = generate_followups(
        get_relation(relation_id),
        Sample({field: text}),
        task,
        [field],
        rewrite=lambda prompt: rewriter(prompt, 0),
        candidates=candidates,
    )
    return result


def test_each_statement_is_rewritten_on_its_own_and_the_question_kept():
    """The question is never sent; each statement is asked k times; the follow-up keeps the
    source's layout (the line break) with each statement's rewrite in its place."""
    rewriter = Rewriter(lambda text, n: CLOSE.get(text, ANSWER))
    followup = _followup("si.paraphrase", PROBLEM, rewriter)
    assert followup.fields["problem"] == (
        "Tom owns 3 marbles.\nHe hands 2 marbles to Ann. How many marbles does Tom have now?"
    )
    assert sorted(rewriter.asked) == sorted((s, n) for s in CLOSE for n in range(3))
    details = followup.details["rewrite"]
    assert [s["kept"] for s in details["by_sentence"]] == ["reworded", "reworded", "question"]
    assert (details["tried"], details["valid"], details["gate"]) == (6, 6, None)
    assert {c["sentence"] for c in details["candidates"]} == {0, 1}


def test_a_statement_with_no_valid_candidate_stays_as_written():
    """The first statement's candidates all lose its number: it stays; the second's rewrite
    goes in. The text put together passes the gate as a whole."""
    answers = {"Tom has 3 marbles.": "Tom has some marbles."} | {
        "He gives 2 marbles to Ann.": CLOSE["He gives 2 marbles to Ann."]
    }
    followup = _followup("si.paraphrase", PROBLEM, Rewriter(lambda t, n: answers[t]))
    assert followup.fields["problem"] == (
        "Tom has 3 marbles.\nHe hands 2 marbles to Ann. How many marbles does Tom have now?"
    )
    by_sentence = followup.details["rewrite"]["by_sentence"]
    assert [(s["kept"], s.get("valid")) for s in by_sentence] == [
        ("as written", 0),
        ("reworded", 3),
        ("question", None),
    ]
    assert gate_followup(
        get_relation("si.paraphrase"), {"problem": PROBLEM}, followup, _similar,
        small_rewriter=SmallRewriter(),
    ) is None  # fmt: skip


def test_with_no_statement_reworded_the_first_candidates_go_in_for_the_gate_to_skip():
    followup = _followup("si.paraphrase", PROBLEM, Rewriter(lambda t, n: ANSWER))
    assert followup.fields["problem"] == (f"{ANSWER}\n{ANSWER} How many marbles does Tom have now?")
    reason = followup.details["rewrite"]["gate"]
    assert reason is not None
    assert (
        gate_followup(
            get_relation("si.paraphrase"), {"problem": PROBLEM}, followup, _similar,
            small_rewriter=SmallRewriter(),
        )
        == reason
    )  # fmt: skip


def test_a_rewrite_without_its_full_stop_gets_the_sentences():
    rewriter = Rewriter(lambda text, n: CLOSE.get(text, ANSWER).rstrip("."))
    followup = _followup("si.paraphrase", PROBLEM, rewriter)
    assert followup.fields["problem"].startswith("Tom owns 3 marbles.\nHe hands 2 marbles to Ann.")


@pytest.mark.parametrize(
    ("relation_id", "text", "small", "whole_text"),
    [
        ("si.paraphrase", "Tom has 3 marbles and gives 2 marbles to Ann.", True, False),
        ("si.paraphrase", PROBLEM, False, False),  # a strong rewriter
        ("si.paraphrase", PROBLEM, True, True),  # the bench's comparison
        ("si.contrastive", PROBLEM, True, False),  # adds sentences: needs the whole text
        ("si.reorder_facts", PROBLEM, True, False),  # moves sentences
        ("si.paraphrase", "How many marbles? Who has them?", True, False),  # questions only
        ("si.paraphrase", "The tent leaked. The shop kept our money.", True, False),  # no question
    ],
)
def test_whole_texts_are_asked_otherwise(relation_id, text, small, whole_text):
    rewriter = Rewriter(lambda t, n: CLOSE.get(t, ANSWER))
    followup = _followup(relation_id, text, rewriter, small=small, whole_text=whole_text)
    assert {asked for asked, _ in rewriter.asked} == {text}
    assert "by_sentence" not in followup.details.get("rewrite", {})


def test_ad_paraphrase_filters_each_sentences_line():
    """ad.paraphrase's filter (one line, a sane length, not identical) applies to each
    sentence: a statement the rewriter returns unchanged stays, the other is reworded."""
    rewriter = Rewriter(lambda t, n: t if t.startswith("Tom") else CLOSE.get(t, ANSWER))
    followup = _followup("ad.paraphrase", PROBLEM, rewriter)
    assert followup.fields["problem"] == (
        "Tom has 3 marbles.\nHe hands 2 marbles to Ann. How many marbles does Tom have now?"
    )


_STATEMENTS = (
    "The soup was cold.",
    "The waiter was rude.",
    "The bread was fresh.",
    "The room was bright.",
    "Mia has 4 apples.",
    "Sam buys 7 pears.",
)
_QUESTIONS = ("How many apples are left?", "Was it worth it?")
_REWORDED = {
    "The soup was cold.": "The soup was cold indeed.",
    "The waiter was rude.": "The waiter was rude to us.",
    "The bread was fresh.": "The bread had been fresh.",
    "The room was bright.": "Bright was the room.",
    "Mia has 4 apples.": "Mia owns 4 apples.",
    "Sam buys 7 pears.": "Sam purchases 7 pears.",
}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(_STATEMENTS + _QUESTIONS), min_size=2, max_size=5, unique=True),
    st.sets(st.sampled_from(_STATEMENTS)),
    st.sampled_from(["si.paraphrase", "si.expand", "sentence.paraphrase"]),
)
def test_property_every_sentence_is_its_own_or_its_own_rewrite(sentences, failing, relation_id):
    """Random mixes of statements and questions, some statements with no valid candidate (the
    rewriter drops their number or adds a new subject): the follow-up has the source's
    sentences in order, each question as written, each statement as written when it has no
    valid candidate and else its own rewrite. A text without a question is asked whole."""
    text = " ".join(sentences)

    def answer(sentence: str, n: int) -> str:
        if sentence in failing:
            return "The manager arrived at the office."
        return _REWORDED.get(sentence, ANSWER)  # a whole text of questions: answered

    rewriter = Rewriter(answer)
    result = _followup(relation_id, text, rewriter, task=SENTIMENT)
    asked = {s for s, _ in rewriter.asked}
    if not any(s in _STATEMENTS for s in sentences) or not any(s in _QUESTIONS for s in sentences):
        assert asked == {text}  # only a text with a question and a statement is split
        return
    assert asked == {s for s in sentences if s in _STATEMENTS}
    if all(s in failing for s in sentences if s in _STATEMENTS):
        assert result.details["rewrite"]["gate"] is not None
        return
    expected = " ".join(
        _REWORDED[s] if s in _STATEMENTS and s not in failing else s for s in sentences
    )
    assert result.fields["text"] == expected


def test_with_every_candidate_rejected_by_the_relation_the_case_skips_with_its_reason():
    """ad.paraphrase rejects a candidate identical to its sentence: with every candidate of
    every statement rejected, the follow-up cannot be made and the first reason is given."""
    result = _followup("ad.paraphrase", PROBLEM, Rewriter(lambda t, n: t))
    assert result.reason == (
        "paraphrase rejected: identical to the source (all 3 candidates of each sentence)"
    )


def test_a_failing_call_fails_the_case_after_every_sentence_was_asked():
    """As with whole texts: the error comes after all candidates of all statements were asked
    (so a batch export's first stage sees every request)."""

    def answer(text: str, n: int) -> str:
        if text.startswith("Tom"):
            raise ConnectionError("the endpoint went away")
        return CLOSE[text]

    rewriter = Rewriter(answer)
    with pytest.raises(ConnectionError):
        _followup("si.paraphrase", PROBLEM, rewriter)
    assert sorted(rewriter.asked) == sorted((s, n) for s in CLOSE for n in range(3))
