"""One threshold rule: the SQL form (evaluated by SQLite) and the Python form agree.

Random values and thresholds, plus the edge cases that broke copies of the rule before: ties
(value == threshold) and 0.8 − 0.7 (= 0.10000000000000009) against ε = 0.1.
"""

from __future__ import annotations

import random

import pytest

from app.analysis.triage.thresholds import threshold_reason, threshold_verdict
from core.thresholds import THRESHOLD_RULES, ThresholdRule, threshold_rule
from core.types import Verdict
from storage import Store
from tests.triage_data import make_case, save_runs

EDGE_PAIRS = [  # (value, threshold)
    (0.8 - 0.7, 0.1),
    (0.1, 0.1),
    (0.8, 0.8),
    (0.5, 0.5),
    (0.1 + 1e-13, 0.1),
    (0.1 + 1e-11, 0.1),
    (0.0, 0.0),
    (1.0, 1.0),
    (-0.25, -0.25),
]


def random_pairs(seed: int, n: int = 300) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        threshold = rng.choice([rng.random(), round(rng.random(), 2), rng.uniform(-1, 5)])
        value = rng.choice(
            [
                threshold,  # a tie
                round(threshold + rng.choice([-0.1, 0.1]), 2) - round(rng.choice([-0.1, 0.1]), 2),
                threshold + rng.choice([-1e-12, 1e-12, -1e-13, 1e-13, 2e-12]),
                rng.uniform(-1, 5),
                rng.random(),
            ]
        )
        pairs.append((value, threshold))
    return pairs


def sql_fails(store: Store, rule: ThresholdRule, case_id: str, threshold: float) -> bool:
    rows = store._query(
        f"SELECT {rule.fail_sql('c.value')} AS fails FROM cases c WHERE c.id = ?",
        [threshold, case_id],
    )
    return bool(rows[0]["fails"])


@pytest.mark.parametrize("oracle", sorted(THRESHOLD_RULES))
def test_sql_and_python_forms_agree_on_random_data(oracle: str) -> None:
    rule = threshold_rule(oracle)
    pairs = EDGE_PAIRS + random_pairs(seed=len(oracle))
    store = Store(":memory:")
    cases = [
        make_case(f"c{i}", index=i, oracle=oracle, value=value, task_id="sentiment_score")
        for i, (value, _) in enumerate(pairs)
    ]
    save_runs(store, cases)
    for i, (value, threshold) in enumerate(pairs):
        python = rule.fails(value, threshold)
        assert sql_fails(store, rule, f"c{i}", threshold) == python, (value, threshold)
        assert threshold_verdict(oracle, value, threshold) == rule.verdict(value, threshold)
        assert rule.verdict(value, threshold) == (Verdict.FAIL if python else Verdict.PASS)


@pytest.mark.parametrize("oracle", sorted(THRESHOLD_RULES))
def test_flip_count_in_sql_matches_python(oracle: str) -> None:
    """``count_threshold_flips`` (SQL) counts exactly the verdicts the Python rule changes."""
    rule = threshold_rule(oracle)
    rng = random.Random(7)
    values = [value for value, _ in EDGE_PAIRS + random_pairs(seed=3, n=120)]
    cases = [
        make_case(
            f"c{i}",
            index=i,
            oracle=oracle,
            value=value,
            verdict=rng.choice(["PASS", "FAIL"]),
            task_id="sentiment_score",
        )
        for i, value in enumerate(values)
    ]
    store = Store(":memory:")
    save_runs(store, cases)
    for threshold in [0.1, 0.5, 0.8, 0.0, *(rng.uniform(-1, 2) for _ in range(10))]:
        expected = sum(rule.verdict(case.value, threshold) != case.verdict for case in cases)
        assert store.count_threshold_flips("si.paraphrase", oracle, threshold) == expected


def test_the_float_slack_case() -> None:
    within = threshold_rule("numeric_within")
    assert within.verdict(0.8 - 0.7, 0.1) is Verdict.PASS
    assert within.verdict(0.11, 0.1) is Verdict.FAIL
    assert threshold_rule("semantic_similar").verdict(0.8, 0.8) is Verdict.PASS
    assert threshold_rule("semantic_different").verdict(0.8, 0.8) is Verdict.FAIL


def test_triage_reasons_keep_their_wording() -> None:
    assert threshold_reason("semantic_similar", 0.6, 0.5) == (
        "cosine 0.600 ≥ θ 0.500 (threshold set in Triage)"
    )
    assert threshold_reason("semantic_different", 0.4, 0.5) == (
        "cosine 0.400 < θ 0.500 (threshold set in Triage)"
    )
    assert threshold_reason("numeric_within", 0.8 - 0.7, 0.1) == (
        "|Δ| 0.1 ≤ ε 0.1 (threshold set in Triage)"
    )
    assert threshold_reason("numeric_within", 0.25, 0.1) == (
        "|Δ| 0.25 > ε 0.1 (threshold set in Triage)"
    )
    with pytest.raises(ValueError, match="has no threshold"):
        threshold_verdict("equal_label", 1.0, 0.5)
