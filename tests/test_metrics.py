"""app/metrics.py: paper metrics against hand-computed values and an independent computation."""

from __future__ import annotations

import re
from collections import defaultdict
from statistics import mean

import pytest

from app import metrics
from storage.analysis import CaseFilter
from tests.test_analysis_queries import ROWS, seed_dataset


@pytest.fixture
def seeded(store):
    seed_dataset(store)
    return store


# ------------------------------------------------------------------ Wilson


def test_wilson_interval_hand_values():
    # 2 of 10: z² = 3.841459, centre = 0.392073 / 1.384146 = 0.283261,
    # half = 1.959964 · √(0.016 + 0.009604) / 1.384146 = 0.226576 → (0.0567, 0.5098)
    low, high = metrics.wilson_interval(2, 10)
    assert low == pytest.approx(0.056685, abs=1e-5)
    assert high == pytest.approx(0.509838, abs=1e-5)
    # 2 of 4: symmetric around 0.5 → (0.15004, 0.84996)
    low, high = metrics.wilson_interval(2, 4)
    assert low == pytest.approx(0.150039, abs=1e-5)
    assert high == pytest.approx(0.849961, abs=1e-5)
    # 0 of 5 stays at 0 on the left; 5 of 5 at 1 on the right
    assert metrics.wilson_interval(0, 5)[0] == 0.0
    assert metrics.wilson_interval(5, 5)[1] == pytest.approx(1.0)
    assert metrics.wilson_interval(0, 0) == (None, None)


def test_rates_and_net_of_floor():
    assert metrics.violation_rate(3, 1) == 0.25
    assert metrics.violation_rate(0, 0) is None
    assert metrics.net_of_floor(0.5, 0.25) == 0.25
    assert metrics.net_of_floor(0.1, 0.25) == 0.0
    assert metrics.net_of_floor(0.5, None) is None


# ------------------------------------------------------------------ summaries on the dataset


def test_model_relation_rows_hand_values(seeded):
    rows = {(r["model"], r["relation_id"]): r for r in metrics.model_relation_rows(seeded)}
    para = rows[("A", "si.paraphrase")]
    assert (para["n"], para["pass"], para["fail"], para["skip"], para["error"]) == (7, 2, 2, 2, 1)
    assert para["invalid_followup"] == 1
    assert para["violation_rate"] == 0.5
    assert para["ci_low"] == pytest.approx(0.150039, abs=1e-5)
    assert para["ci_high"] == pytest.approx(0.849961, abs=1e-5)
    assert para["noise_floor"] == 0.25  # si.identity of model A: 1 FAIL in 4
    assert para["net_violation_rate"] == 0.25
    assert para["mean_delta"] == pytest.approx(-0.09)
    assert para["mad"] == pytest.approx(0.11)
    assert para["stability"] == pytest.approx(1 / 3)
    assert para["mean_similarity"] == pytest.approx(0.7625)
    assert para["inconsistency_rate"] == pytest.approx(1 / 3)
    b_para = rows[("B", "si.paraphrase")]
    assert b_para["noise_floor"] is None and b_para["net_violation_rate"] is None
    assert b_para["mean_delta"] == pytest.approx(-0.5 / 3)
    assert b_para["stability"] == pytest.approx(2 / 3)
    assert rows[("A", "ad.format")]["mean_delta"] is None  # no reference → no Δ


def test_noise_floor_ignores_the_relation_filter(seeded):
    floors = metrics.noise_floor(seeded, CaseFilter.make(relations=["si.paraphrase"]))
    assert set(floors) == {"A"} and set(floors["A"]) == {"reasoning"}
    floor = floors["A"]["reasoning"]
    assert (floor["n"], floor["pass"], floor["fail"]) == (4, 3, 1)
    assert floor["noise_floor"] == 0.25
    low, high = metrics.wilson_interval(1, 4)
    assert (floor["ci_low"], floor["ci_high"]) == (low, high)
    assert floor["inconsistency_rate"] == 0.25


def test_model_rows(seeded):
    models = {r["model"]: r for r in metrics.model_rows(seeded)}
    a = models["A"]
    # non-identity cases of A: paraphrase 2P/2F, ad.paraphrase 2P/2F, ad.format 1P/2F
    assert (a["pass"], a["fail"]) == (5, 6)
    assert a["violation_rate"] == pytest.approx(6 / 11)
    assert a["net_violation_rate"] == pytest.approx(6 / 11 - 0.25)
    assert a["mad"] == pytest.approx(0.11)
    assert a["stability"] == pytest.approx(0.5)  # identity cell (0.01) + s3 (0.03) of 4 cells
    assert a["stability_excl_identity"] == pytest.approx(1 / 3)
    assert a["mean_delta"] == pytest.approx((0.01 - 0.1 - 0.2 + 0.03) / 4)
    assert a["agentdiff_gap"] == pytest.approx(0.0)  # IR 0.5 on both sides (see test_reports)
    assert a["n_all"] == 18
    assert models["B"]["agentdiff_gap"] is None


def _independent(rows):
    """Recompute the per model × relation numbers in plain Python from ROWS."""
    out = {}
    groups = defaultdict(list)
    for row in rows:
        groups[(row[0], row[1])].append(row)
    for key, group in groups.items():
        verdicts = [r[6] for r in group]
        n_pass, n_fail = verdicts.count("PASS"), verdicts.count("FAIL")
        cells = defaultdict(list)
        for r in group:
            if r[8] is not None:
                cells[r[3]].append(r[8])
        cell_deltas = [mean(v) for v in cells.values()]
        sims = [r[9] for r in group if r[9] is not None]
        answered = [r for r in group if r[10] is not None and r[11] is not None]
        changed = [r for r in answered if r[10].lower() != r[11].lower()]
        out[key] = {
            "n": len(group),
            "violation_rate": n_fail / (n_pass + n_fail) if n_pass + n_fail else None,
            "mean_delta": mean(cell_deltas) if cell_deltas else None,
            "mad": mean(abs(d) for d in cell_deltas) if cell_deltas else None,
            "stability": (
                sum(abs(d) < 0.05 for d in cell_deltas) / len(cell_deltas) if cell_deltas else None
            ),
            "mean_similarity": mean(sims) if sims else None,
            "inconsistency_rate": len(changed) / len(answered) if answered else None,
        }
    return out


def test_every_row_matches_an_independent_computation(seeded):
    expected = _independent(ROWS)
    rows = metrics.model_relation_rows(seeded)
    assert len(rows) == len(expected)
    for row in rows:
        want = expected[(row["model"], row["relation_id"])]
        for key, value in want.items():
            if value is None:
                assert row[key] is None, (row["relation_id"], key)
            else:
                assert row[key] == pytest.approx(value), (row["relation_id"], key)


def test_summarize_and_gap(seeded):
    summary = metrics.summarize(seeded)
    assert {r["model"] for r in summary["models"]} == {"A", "B"}
    (gap,) = summary["gap"]
    assert gap["model"] == "A"
    assert gap["gap"] == pytest.approx(0.0)
    assert gap["n_originals"] == 3


def test_breakdown_by_difficulty(seeded):
    rows = {(r["model"], r["difficulty"]): r for r in metrics.breakdown(seeded, "difficulty")}
    hard = rows[("A", "hard")]  # s3: paraphrase PASS (Δ 0.03), ad.paraphrase PASS
    assert (hard["n"], hard["pass"], hard["fail"]) == (2, 2, 0)
    assert hard["mean_delta"] == pytest.approx(0.03)
    assert hard["violation_rate"] == 0.0
    assert rows[("A", "(none)")]["samples"] == 4  # s1 (level only), s4, s5, s6


def test_box_stats_quartiles(seeded):
    rows, stride = metrics.box_stats(seeded, column="delta")
    assert stride == 1
    box = {(r["model"], r["relation_id"]): r for r in rows}[("A", "si.paraphrase")]
    # case-level Δ: −0.3, −0.2, 0.03, 0.1 → quartiles by linear interpolation
    assert box["n"] == 4
    assert box["median"] == pytest.approx((-0.2 + 0.03) / 2)
    assert box["q1"] == pytest.approx(-0.225)
    assert box["q3"] == pytest.approx(0.0475)
    assert (box["lowerfence"], box["upperfence"]) == (pytest.approx(-0.3), pytest.approx(0.1))


def test_compare_runs(seeded):
    rows = {r["relation_id"]: r for r in metrics.compare_runs(seeded, "run-a", "run-b")}
    para = rows["si.paraphrase"]
    assert para["a_violation_rate"] == 0.5
    assert para["b_violation_rate"] == pytest.approx(1 / 3)
    assert para["violation_rate_change"] == pytest.approx(1 / 3 - 0.5)
    assert para["b_mean_delta"] == pytest.approx(-0.5 / 3)
    assert rows["ad.format"]["b_n"] == 0 and rows["ad.format"]["b_violation_rate"] is None
    with pytest.raises(ValueError):
        metrics.compare_runs(seeded, "run-a", "run-a")


# ------------------------------------------------------------------ severity proxies


def test_severity_proxy_hand_values():
    assert metrics.normalized_levenshtein("kitten", "sitting") == pytest.approx(3 / 7)
    assert metrics.normalized_levenshtein("", "") == 0.0
    assert metrics.token_jaccard_distance("The cat sat", "the dog sat") == pytest.approx(0.5)
    assert metrics.token_jaccard_distance("", "") == 0.0
    assert metrics.length_change_ratio("abcd", "abcdef") == 0.5
    assert metrics.length_change_ratio("", "ab") == 2.0


def test_severity_compares_only_changed_fields():
    case = {
        "source_input": {"context": "A long shared context.", "question": "How many apples?"},
        "followup_input": {"context": "A long shared context.", "question": "How many pears?"},
        "details": {"input_similarity": 0.8},
        "output_similarity": 0.3,
    }
    proxies = metrics.severity_proxies(case)
    assert proxies["levenshtein"] == pytest.approx(
        metrics.normalized_levenshtein("How many apples?", "How many pears?")
    )
    assert proxies["jaccard"] == pytest.approx(
        1 - 2 / 4
    )  # {how, many} of {how, many, apples, pears}
    assert proxies["length_change"] == pytest.approx(1 / 16)
    assert proxies["cosine_distance"] == pytest.approx(0.2)
    no_input_similarity = {**case, "details": {}}
    # Never a proxy on the outputs: without an input similarity or an embedder, no cosine.
    assert metrics.severity_proxies(no_input_similarity)["cosine_distance"] is None


def test_answer_changed_matches_the_sql_rule():
    assert metrics.answer_changed({"source_answer": "Paris", "followup_answer": "paris"}) is False
    assert metrics.answer_changed({"source_answer": "4", "followup_answer": "5"}) is True
    assert metrics.answer_changed({"source_answer": "4", "followup_answer": None}) is None


def test_drilldown_attaches_severity(seeded):
    rows = metrics.drilldown(seeded, model="A", relation_id="si.paraphrase", verdicts=["FAIL"])
    assert {r["id"] for r in rows} == {"case-005", "case-006"}
    added = " Please answer."  # the follow-up appends 15 characters and two words
    for row in rows:
        text = row["source_input"]["problem"]
        assert row["levenshtein"] == pytest.approx(len(added) / (len(text) + len(added)))
        assert row["length_change"] == pytest.approx(len(added) / len(text))
        words = len(set(re.findall(r"\w+", text.lower())))
        assert row["jaccard"] == pytest.approx(1 - words / (words + 2))
        # case-005: "4" → "5"; case-006 has no follow-up answer
        assert row["answer_changed"] is {"case-005": True, "case-006": None}[row["id"]]
    table = metrics.severity_table(seeded, limit=5)
    assert len(table) == 5
    assert all(r["levenshtein"] > 0 for r in table)
