"""app/analysis/stats.py: Mann-Whitney / Kruskal-Wallis against scipy, Benjamini-Hochberg by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from app.analysis import metrics, stats
from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Verdict
from storage.run_verbs import RunDefinition
from tests.test_analysis_queries import SAMPLES, seed_dataset


def test_benjamini_hochberg_hand_example():
    # m = 4, sorted 0.005 (1), 0.01 (2), 0.03 (3), 0.04 (4):
    # p·m/rank = 0.02, 0.02, 0.04, 0.04 → already monotone
    assert stats.benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, 0.04, 0.02]
    )
    # m = 8: p·8/rank = 0.008, 0.032, 0.104, 0.082, 0.0672, 0.08, 0.084571, 0.205; the running
    # minimum from the top lowers ranks 3 and 4 to 0.0672
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205]
    expected = [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.074 * 8 / 7, 0.205]
    assert stats.benjamini_hochberg(p) == pytest.approx(expected)
    # capped at 1, None passes through and does not count towards m
    assert stats.benjamini_hochberg([0.9, None, 0.8]) == [pytest.approx(0.9), None, 0.9]
    assert stats.benjamini_hochberg([]) == []


def test_benjamini_hochberg_agrees_with_scipy():
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 0.2, size=25)
    ours = stats.benjamini_hochberg(list(p))
    assert ours == pytest.approx(list(scipy_stats.false_discovery_control(p, method="bh")))


def test_mann_whitney_matches_scipy():
    a = np.array([0.10, 0.20, 0.03, 0.40, 0.35, 0.22])
    b = np.array([0.01, 0.01, 0.50, 0.02, 0.04])
    u, p, effect = stats.mann_whitney(a, b)
    reference = scipy_stats.mannwhitneyu(a, b, alternative="two-sided")
    assert u == pytest.approx(reference.statistic)
    assert p == pytest.approx(reference.pvalue)
    assert effect == pytest.approx(reference.statistic / (len(a) * len(b)))
    assert stats.mann_whitney(np.zeros(3), np.zeros(4))[1] is None  # no variation
    assert stats.mann_whitney(np.array([]), b) == (None, None, None)


def test_kruskal_wallis_matches_scipy():
    groups = [np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.55, 0.7]), np.array([0.0, 0.05])]
    h, p = stats.kruskal_wallis(groups)
    reference = scipy_stats.kruskal(*groups)
    assert (h, p) == (pytest.approx(reference.statistic), pytest.approx(reference.pvalue))
    assert stats.kruskal_wallis([np.ones(3), np.ones(2)]) == (None, None)
    assert stats.kruskal_wallis([np.ones(3)]) == (None, None)


def test_model_tests_reading_and_adjustment():
    far_apart = {
        "big": {"si.paraphrase": list(np.linspace(0.3, 0.6, 20))},
        "small": {"si.paraphrase": list(np.linspace(0.0, 0.05, 20))},
        "also-small": {"si.paraphrase": list(np.linspace(0.001, 0.051, 20))},
    }
    results = {r.subject: r for r in stats.model_tests(far_apart, {})}
    assert set(results) == {"also-small vs big", "also-small vs small", "big vs small"}
    big = results["big vs small"]
    reference = scipy_stats.mannwhitneyu(
        far_apart["big"]["si.paraphrase"], far_apart["small"]["si.paraphrase"]
    )
    assert big.p_value == pytest.approx(reference.pvalue)
    raw = [r.p_value for r in results.values()]
    assert [r.p_adjusted for r in results.values()] == pytest.approx(stats.benjamini_hochberg(raw))
    assert big.significant and big.effect == 1.0
    assert big.reading.startswith(
        "big's |Δ| is larger than small's (p < 0.001, adjusted p < 0.001)"
    )
    assert big.reading.endswith("unlikely to be chance.")
    assert results["also-small vs big"].reading.startswith("also-small's |Δ| is smaller than big's")
    close = results["also-small vs small"]
    assert not close.significant
    assert close.reading.startswith("No clear difference in |Δ| between also-small and small")
    assert close.reading.endswith("could be chance.")


def test_identity_is_left_out_of_model_comparisons():
    data = {
        "x": {"si.identity": [9.0, 9.0, 9.0], "si.paraphrase": [0.1, 0.2]},
        "y": {"si.paraphrase": [0.1, 0.3]},
    }
    (result,) = stats.model_tests(data, {})
    assert result.sizes == (2, 2)


def test_violation_fallback_without_delta():
    counts = {"x": {"r1": (2, 8), "r2": (9, 1)}, "y": {"r1": (9, 1), "r2": (8, 2)}}
    (mw,) = stats.model_tests({}, counts)
    assert mw.measure == "violation"
    x = np.r_[np.ones(9), np.zeros(11)]  # 8 + 1 FAIL, 2 + 9 PASS
    y = np.r_[np.ones(3), np.zeros(17)]
    assert mw.p_value == pytest.approx(scipy_stats.mannwhitneyu(x, y).pvalue)
    assert "violation rate" in mw.reading
    kw = {r.subject: r for r in stats.relation_tests({}, counts)}
    reference = scipy_stats.kruskal(np.r_[np.ones(8), np.zeros(2)], np.r_[np.ones(1), np.zeros(9)])
    assert kw["x"].measure == "violation"
    assert kw["x"].p_value == pytest.approx(reference.pvalue)
    assert kw["x"].reading.startswith("x: violation rate differs across relations (H = ")


def test_run_tests_on_the_dataset(store):
    seed_dataset(store)
    everything = CaseFilter()
    summary = metrics.summarize(store, everything)
    result = stats.run_tests(store, everything, counts=summary["counts"], roles=summary["roles"])
    (mw,) = result["mann_whitney"]
    assert mw["subject"] == "A vs B" and mw["measure"] == "abs_delta"
    # per-observation |Δ| (non-identity): A = 0.1, 0.3, 0.2, 0.03; B = 0.01, 0.01, 0.5
    reference = scipy_stats.mannwhitneyu([0.1, 0.3, 0.2, 0.03], [0.01, 0.01, 0.5])
    assert mw["p_value"] == pytest.approx(reference.pvalue)
    assert mw["sizes"] == [4, 3]
    assert mw["p_adjusted"] == pytest.approx(reference.pvalue)  # one test: BH leaves it
    (kw,) = result["kruskal_wallis"]  # B has one relation only: nothing to compare
    assert kw["subject"] == "A"
    # identity's 4 repeats (one observation each) against paraphrase's 4 observations
    reference = scipy_stats.kruskal([0.02, 0.02, 0.0, 0.04], [0.1, 0.3, 0.2, 0.03])
    assert kw["p_value"] == pytest.approx(reference.pvalue)
    assert kw["sizes"] == [4, 4]


def _delta_case(model: str, relation_id: str, sample: str, repeat: int, delta: float) -> Case:
    return Case(
        id=f"{model}-{relation_id}-{sample}-{repeat}",
        run_id="run",
        sample_id=SAMPLES[sample].id,
        relation_id=relation_id,
        family=relation_id.split(".")[0],
        target="problem",
        followup_index=0,
        repeat_index=repeat,
        model=model,
        task_id="reasoning",
        source_input=dict(SAMPLES[sample].fields),
        verdict=Verdict.PASS if abs(delta) < 0.5 else Verdict.FAIL,
        score_source=0.5,
        score_followup=0.5 + delta,
        delta=delta,
    )


def test_tests_compare_per_observation_abs_delta_of_invariance_relations(store):
    """Issue 23 item 3 (SI §3.1: MAD, eq. 6, sums |Δ_τ(p)| per observation; §4 compares models
    with Mann-Whitney U and relations with Kruskal-Wallis on what MAD measures).

    X: si.paraphrase repeats Δ = +0.2, −0.2 on s1 and +0.3, −0.3 on s2; word.negation ("should
    change") Δ = 0.9 on s1. Y: si.paraphrase 0.01, 0.02 on s1 and 0.00, 0.01 on s2.
    - Mann-Whitney on per-observation |Δ|: X = 0.2, 0.2, 0.3, 0.3 vs Y = 0.01, 0.02, 0.0, 0.01:
      every X value is larger, U = 4 × 4 = 16, effect 1. Averaging Δ per (task, sample) before
      the absolute value would give X = |0|, |0| (+0.9 with negation) and Y = 0.015, 0.005.
    - Kruskal-Wallis: word.negation is no invariance relation, so X has one group left and no
      test; Y has one relation too: no Kruskal-Wallis at all (it used to compare 2 groups in X).
    """
    cases = [
        _delta_case("X", "si.paraphrase", "s1", 0, 0.2),
        _delta_case("X", "si.paraphrase", "s1", 1, -0.2),
        _delta_case("X", "si.paraphrase", "s2", 0, 0.3),
        _delta_case("X", "si.paraphrase", "s2", 1, -0.3),
        _delta_case("X", "word.negation", "s1", 0, 0.9),
        _delta_case("Y", "si.paraphrase", "s1", 0, 0.01),
        _delta_case("Y", "si.paraphrase", "s1", 1, 0.02),
        _delta_case("Y", "si.paraphrase", "s2", 0, 0.0),
        _delta_case("Y", "si.paraphrase", "s2", 1, 0.01),
    ]
    store.save_run(
        RunDefinition(
            "run",
            endpoint=Endpoint(name="ep", base_url="http://127.0.0.1:9/v1", model="X"),
            task_id="reasoning",
            config={},
            samples=[SAMPLES["s1"], SAMPLES["s2"]],
        )
    )
    store.record_cases(cases)
    everything = CaseFilter()
    summary = metrics.summarize(store, everything)
    result = stats.run_tests(store, everything, counts=summary["counts"], roles=summary["roles"])
    (mw,) = result["mann_whitney"]
    assert (mw["subject"], mw["measure"], mw["sizes"]) == ("X vs Y", "abs_delta", [4, 4])
    assert (mw["statistic"], mw["effect"]) == (16.0, 1.0)
    reference = scipy_stats.mannwhitneyu([0.2, 0.2, 0.3, 0.3], [0.01, 0.02, 0.0, 0.01])
    assert mw["p_value"] == pytest.approx(reference.pvalue)
    assert result["kruskal_wallis"] == []


def test_tables_show_the_measure_in_words():
    """Issue 28 item 4: Statistics showed the raw key ``abs_delta``."""
    rows = [{"measure": "abs_delta", "p_value": 0.5}, {"measure": "violation", "p_value": None}]
    assert [r["measure"] for r in stats.shown_tests(rows)] == ["|Δ|", "violation rate"]
    assert rows[0]["measure"] == "abs_delta"  # the JSON rows keep their keys
