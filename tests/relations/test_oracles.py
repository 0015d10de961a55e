"""Oracles: the verdict from two parsed outputs, chosen by expectation and answer type."""

from __future__ import annotations

import random

import pytest

from core.answers import AnswerType
from core.thresholds import NUMERIC_WITHIN, SEMANTIC_DIFFERENT, SEMANTIC_SIMILAR
from core.types import ParsedOutput, Verdict
from relations.oracles import evaluate
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
