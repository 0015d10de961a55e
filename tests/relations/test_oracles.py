"""Oracles: the verdict from two parsed outputs, chosen by expectation and answer type."""

from __future__ import annotations

import random

import pytest

from core.answers import AnswerType
from core.thresholds import NUMERIC_WITHIN, SEMANTIC_DIFFERENT, SEMANTIC_SIMILAR
from core.types import ParsedOutput, Verdict
from relations.catalog import describe_relation
from relations.oracles import (
    DECISIVE_SOURCE,
    evaluate,
    is_precondition_skip,
    source_precondition_of,
)
from relations.registry import get_relation

EQUIVALENT = "si.identity"  # expectation: equivalent
DIFFERENT = "word.antonym"  # expectation: different


def out(answer: str | None) -> ParsedOutput:
    return ParsedOutput(answer=answer)


def judge(relation_id, answer_type, a, b, *, cosine=0.5, threshold=None):
    return evaluate(
        get_relation(relation_id), answer_type, out(a), out(b), lambda x, y: cosine,
        threshold=threshold,
    )  # fmt: skip


def test_evaluate_takes_an_answer_type_not_a_task():
    result = judge(EQUIVALENT, AnswerType.LABEL, "positive", "negative")
    assert (result.verdict, result.oracle) == (Verdict.FAIL, "equal_label")
    assert result.reason == "label 'positive' → 'negative' (changed)"
    # A plain string answer type reads the same as the enum member.
    assert judge(EQUIVALENT, "label", "positive", "positive").verdict is Verdict.PASS


def test_unparseable_output_is_an_error():
    result = judge(EQUIVALENT, AnswerType.TEXT, None, "x")
    assert result.verdict is Verdict.ERROR and result.reason == "source output: no answer"


def test_reasons_keep_their_wording():
    score = judge(EQUIVALENT, AnswerType.SCORE, "0.8", "0.7")
    assert (score.verdict, score.oracle) == (Verdict.PASS, "numeric_within")
    assert score.reason == "|Δ| = 0.1 (0.8 → 0.7); ε = 0.1"
    text = judge(EQUIVALENT, AnswerType.TEXT, "paris", "london", cosine=0.79)
    assert (text.verdict, text.reason) == (Verdict.FAIL, "cosine 0.790 < θ 0.80")
    different = judge(DIFFERENT, AnswerType.TEXT, "paris", "london", cosine=0.8)
    assert (different.verdict, different.oracle) == (Verdict.FAIL, "semantic_different")
    assert different.reason == "cosine 0.800 ≥ θ 0.80"


@pytest.mark.parametrize("seed", range(5))
def test_oracle_verdicts_agree_with_the_threshold_rules(seed):
    rng = random.Random(seed)
    for _ in range(200):
        theta = rng.choice([0.4, 0.8, rng.random()])
        cosine = rng.choice([theta, rng.random()])
        similar = judge(EQUIVALENT, AnswerType.TEXT, "a", "b", cosine=cosine, threshold=theta)
        assert similar.verdict is SEMANTIC_SIMILAR.verdict(cosine, theta)
        different = judge(DIFFERENT, AnswerType.TEXT, "a", "b", cosine=cosine, threshold=theta)
        assert different.verdict is SEMANTIC_DIFFERENT.verdict(cosine, theta)
        x, y = round(rng.random(), 2), round(rng.random(), 2)
        eps = rng.choice([0.1, abs(x - y), rng.random()])
        score = judge(EQUIVALENT, AnswerType.SCORE, str(x), str(y), threshold=eps)
        assert score.verdict is NUMERIC_WITHIN.verdict(score.value, eps)


# ---------------------------------------------------------------- source-output preconditions
# LLMorph tool paper §II.D ("verifications": restrictions on the outputs that must hold for the
# MR to be valid) and §III.B (a group that breaks one is a verification failure, not a
# violation); the per-relation rules are LLMorph's catalogue (src/config/list_relations.json,
# "func_vso": verify the source output).

SHOULD_CHANGE = ("word.antonym", "word.replace_keywords", "word.remove_keywords", "word.negation")


@pytest.mark.parametrize("relation_id", SHOULD_CHANGE)
@pytest.mark.parametrize(
    ("answer_type", "source", "followup", "why"),
    [
        # NLI (LLMorph 10/25/34/152 "inference": VerifySetDifference("neutral")).
        (AnswerType.LABEL, "neutral", "neutral", "the source label is 'neutral'"),
        (AnswerType.LABEL, "neutral", "entailment", "the source label is 'neutral'"),
        # QA ("question_answering": VerifySetDifference("unknown")).
        (AnswerType.TEXT, "unknown", "unknown", "the source answer is 'unknown'"),
        # RE ("relation_extraction": VerifySetDifference("no relation")).
        (AnswerType.TEXT, "no relation", "founder of", "the source answer is 'no relation'"),
        # Continuous sentiment (VerifyDifferenceRange(0.4, 0.6), both ends included).
        (AnswerType.SCORE, "0.4", "0.4", "the source score 0.4 is in the neutral band"),
        (AnswerType.SCORE, "0.5", "0.9", "the source score 0.5 is in the neutral band"),
        (AnswerType.SCORE, "0.6", "0.6", "the source score 0.6 is in the neutral band"),
    ],
)
def test_should_change_relations_skip_an_undecided_source(
    relation_id, answer_type, source, followup, why
):
    """LLMorph 10, 25, 34, 152 ("should change") from a source outside the precondition.

    E.g. NLI, source 'neutral', follow-up 'neutral': the label did not change, which used to be
    a FAIL, but a neutral source has no decision to change: SKIP, never FAIL (nor PASS).
    """
    result = judge(relation_id, answer_type, source, followup)
    assert (result.verdict, result.oracle, result.value) == (Verdict.SKIP, "precondition", None)
    assert result.reason.startswith("precondition: " + why)
    assert is_precondition_skip(result.reason)
    assert result.details["precondition"] == "decisive_source"


@pytest.mark.parametrize(
    ("answer_type", "source", "followup", "verdict"),
    [
        (AnswerType.LABEL, "entailment", "entailment", Verdict.FAIL),  # decided, unchanged
        (AnswerType.LABEL, "contradiction", "neutral", Verdict.PASS),
        (AnswerType.TEXT, "paris", "london", Verdict.PASS),  # cosine 0.1: different enough
        (AnswerType.SCORE, "0.39", "0.8", Verdict.PASS),  # just outside [0.4, 0.6]: judged
        (AnswerType.SCORE, "0.61", "0.65", Verdict.FAIL),  # |Δ| = 0.04 ≤ ε 0.1: unchanged
    ],
)
def test_should_change_relations_judge_a_decided_source(answer_type, source, followup, verdict):
    result = judge(DIFFERENT, answer_type, source, followup, cosine=0.1)
    assert result.verdict is verdict


def test_intensifiers_skip_a_source_score_of_exactly_one_half():
    """LLMorph 150, 151, 154 ("at least as extreme"; catalogue: VerifyDifferenceNumeric(0.5)).

    A source of 0.5 has no side, so "the follow-up is at least as far from 0.5 on the same
    side" held for any follow-up (0.5 → 0.1 was a PASS). Now SKIP; 0.51 → 0.1 is judged (FAIL:
    it crossed to the other side) and 0.51 → 0.7 passes.
    """
    for relation_id in (
        "sentiment.exclamation",
        "sentiment.emphasis",
        "sentiment.capitalise_keywords",
    ):
        skipped = judge(relation_id, AnswerType.SCORE, "0.5", "0.1")
        assert (skipped.verdict, skipped.value) == (Verdict.SKIP, None)
        assert skipped.reason == (
            "precondition: the source score is exactly 0.5: it has no side to be more extreme on"
        )
        assert judge(relation_id, AnswerType.SCORE, "0.51", "0.1").verdict is Verdict.FAIL
        assert judge(relation_id, AnswerType.SCORE, "0.51", "0.7").verdict is Verdict.PASS
        # The label task has no midpoint: a neutral label is judged (label must not change).
        assert judge(relation_id, AnswerType.LABEL, "neutral", "neutral").verdict is Verdict.PASS


def test_the_precondition_is_read_after_the_source_and_before_the_followup():
    # An unreadable source: nothing can be decided, ERROR.
    assert judge(DIFFERENT, AnswerType.LABEL, None, "neutral").verdict is Verdict.ERROR
    # A source outside the precondition: the follow-up cannot matter, SKIP even if unreadable.
    assert judge(DIFFERENT, AnswerType.LABEL, "neutral", None).verdict is Verdict.SKIP
    # A source inside it with an unreadable follow-up: ERROR.
    assert judge(DIFFERENT, AnswerType.LABEL, "entailment", None).verdict is Verdict.ERROR


def test_invariance_relations_have_no_source_precondition():
    assert source_precondition_of(get_relation(EQUIVALENT)) is None
    assert judge(EQUIVALENT, AnswerType.LABEL, "neutral", "neutral").verdict is Verdict.PASS
    assert source_precondition_of(get_relation(DIFFERENT)) is DECISIVE_SOURCE
    assert describe_relation(get_relation(DIFFERENT))["source_precondition"].startswith(
        "The source"
    )


def test_math_and_reasoning_answers_are_always_decided():
    assert judge(DIFFERENT, AnswerType.REASONING, "5.4 km", "5.4 km").verdict is Verdict.FAIL
    assert judge(DIFFERENT, AnswerType.MATH, "0.5", "0.5").verdict is Verdict.FAIL
