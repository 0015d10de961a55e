"""A golden fixture written by hand: 16 cases whose ``report --json`` numbers are worked out here.

The byte-for-byte goldens (``test_golden_reports.py``) are written by the code they check; this
one is not. The cases below are made by hand (not by the runner) and stored with the Store's own
verbs; every expected number is computed in this file from the table, with the arithmetic written
out, and the Wilson interval from its formula (not from ``app.analysis.proportions``).

Definitions pinned (``app/analysis/catalogue/definitions.py``, ``app/analysis/metrics.py``):
- violation rate = FAIL / (PASS + FAIL); SKIP and ERROR are counted in n but in neither;
- Wilson 95% interval, z = Φ⁻¹(0.975): (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n),
  clipped to [0, 1];
- noise floor (per model × task) = the violation rate of ``si.identity``; net violation rate =
  max(0, rate − floor), for the invariance relations (expectation "equivalent"), identity left out;
- Δ, similarity, inconsistency, MAD and stability read judged (PASS / FAIL) cases only;
- mean Δ = mean over cells (model, task, sample, relation) of the cell's mean Δ;
- MAD (SI §3.1 eq. 6) = mean |Δ| per observation (repeats not averaged first) over the SI paper's
  non-identity transformations; per relation row, that relation's (none for identity);
- stability (SI §3.1, Table 3's Stability Rate) = share of observations with |Δ| < 0.05 over the
  SI transformations, identity included: per relation row, that relation's; per model, over all
  of them (``stability_excl_identity``: without identity);
- inconsistency = share of judged cases whose two answers are not equivalent under the task's
  answer type (issue 23 item 5: "Paris" and "paris" are one answer).

Every relation here is of the SI family (``si.identity``, ``si.paraphrase``, ``si.academic``), so
MAD and stability count every relation but identity's MAD.
"""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import pytest

from app.cli.main import main
from core.types import Case, Endpoint, Sample, Verdict
from storage import Store
from storage.run_verbs import RunDefinition

MODEL = "hand-model"
TASK = "reasoning"
RUN_ID = "hand-run"
SAMPLES = {
    "p1": Sample(fields={"problem": "What is 2 + 2?"}, reference="4"),
    "p2": Sample(fields={"problem": "What is 3 × 3?"}, reference="9"),
    "p3": Sample(fields={"problem": "What is the capital of France?"}, reference="Paris"),
    "p4": Sample(fields={"problem": "What is 10 − 4?"}, reference="6"),
}

P, F, S, E = Verdict.PASS, Verdict.FAIL, Verdict.SKIP, Verdict.ERROR
# (relation, sample, repeat, verdict, source answer, follow-up answer, Δ, output similarity)
CASES: list[tuple] = [
    # si.identity, the noise floor: 3 PASS, 1 FAIL
    ("si.identity", "p1", 0, P, "4", "4", +0.01, 0.99),
    ("si.identity", "p2", 0, P, "9", "9", -0.02, 0.97),
    ("si.identity", "p3", 0, F, "Paris", "Lyon", -0.06, 0.40),
    ("si.identity", "p4", 0, P, "6", "6", 0.00, 1.00),
    # si.paraphrase: 3 PASS, 3 FAIL, a SKIP of the validity gate and an ERROR. The SKIP carries a
    # Δ and a similarity that must not count (only judged cases are measured).
    ("si.paraphrase", "p1", 0, P, "4", "4", +0.10, 0.90),
    ("si.paraphrase", "p1", 1, F, "4", "5", -0.30, 0.50),
    ("si.paraphrase", "p2", 0, F, "9", "6", -0.20, 0.60),
    ("si.paraphrase", "p3", 0, P, "Paris", "paris", +0.03, 0.95),  # same answer, letter case aside
    ("si.paraphrase", "p4", 0, P, "6", "6", 0.00, 0.98),
    ("si.paraphrase", "p4", 1, F, "6", "7", -0.04, 0.70),
    ("si.paraphrase", "p2", 1, S, "9", "3", +0.90, 0.10),
    ("si.paraphrase", "p3", 1, E, None, None, None, None),
    # si.academic: 4 PASS, no FAIL (its net rate is clipped at 0)
    ("si.academic", "p1", 0, P, "4", "4", +0.02, 0.92),
    ("si.academic", "p2", 0, P, "9", "9", -0.05, 0.94),  # |Δ| = 0.05 is not below 0.05
    ("si.academic", "p3", 0, P, "Paris", "Paris", +0.08, 0.85),
    ("si.academic", "p4", 0, P, "6", "6", -0.50, 0.30),
]
REASONS = {
    P: "answers agree",
    F: "answers differ",
    S: "invalid_followup: the rewrite dropped the number 3",
    E: "call failed: HTTP 500",
}


def hand_cases() -> list[Case]:
    out = []
    for i, (relation_id, name, repeat, verdict, source, followup, delta, similarity) in enumerate(
        CASES
    ):
        sample = SAMPLES[name]
        text = sample.fields["problem"]
        scored = delta is not None
        out.append(
            Case(
                id=f"hand-{i:02d}",
                run_id=RUN_ID,
                sample_id=sample.id,
                relation_id=relation_id,
                family="si",
                target="problem",
                followup_index=0,
                repeat_index=repeat,
                model=MODEL,
                task_id=TASK,
                source_input={"problem": text},
                followup_input={"problem": f"{text} (rewritten)"},
                source_prompt=f"Solve: {text}",
                followup_prompt=f"Solve: {text} (rewritten)",
                source_output=f"Answer: {source}" if source else None,
                followup_output=f"Answer: {followup}" if followup else None,
                source_answer=source,
                followup_answer=followup,
                verdict=verdict,
                oracle="equal_answer",
                value={P: 1.0, F: 0.0}.get(verdict),
                reason=REASONS[verdict],
                score_source=0.5 if scored else None,
                score_followup=0.5 + delta if scored else None,
                delta=delta,
                output_similarity=similarity,
                created_at="2026-11-20T10:00:00+00:00",
            )
        )
    return out


@pytest.fixture
def report(tmp_path, capsys):
    db = tmp_path / "hand.db"
    store = Store(db)
    store.save_run(
        RunDefinition(
            RUN_ID,
            endpoint=Endpoint(name="hand", base_url="http://127.0.0.1:9/v1", model=MODEL),
            task_id=TASK,
            config={"relations": ["si.identity", "si.paraphrase", "si.academic"]},
            samples=list(SAMPLES.values()),
        ),
        created_at="2026-11-20T09:00:00+00:00",
    )
    store.record_cases(hand_cases())
    store.finish_run(RUN_ID, "done")
    store.close()
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ the formulas, by hand

Z = NormalDist().inv_cdf(0.975)  # 1.959963984540054


def wilson(fails: int, n: int) -> tuple[float, float]:
    """Wilson 95% score interval of fails / n, from the formula (clipped to [0, 1])."""
    p = fails / n
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / (1 + Z**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_the_wilson_formula_here_gives_the_published_values():
    """The test's own formula against the textbook's values (Newcombe 1998, table I)."""
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-5)
    assert wilson(1, 29) == pytest.approx((0.0061, 0.1718), abs=5e-5)


def approx(value):
    return pytest.approx(value, rel=1e-12, abs=1e-12)


# ------------------------------------------------------------------ the expected report

FLOOR = 1 / 4  # si.identity: 1 FAIL of 3 PASS + 1 FAIL

EXPECTED_ROWS = {
    "si.identity": {
        "n": 4,
        "pass": 3,
        "fail": 1,
        "skip": 0,
        "error": 0,
        "invalid_followup": 0,
        "violation_rate": 1 / 4,
        "ci": wilson(1, 4),
        # one case per sample: cells = cases
        "mean_delta": (0.01 - 0.02 - 0.06 + 0.00) / 4,  # −0.0175
        "mad": None,  # eq. 6 leaves identity out (its Δ noise is the floor's mean_abs_delta)
        "stability": 3 / 4,  # |−0.06| ≥ 0.05
        "mean_similarity": (0.99 + 0.97 + 0.40 + 1.00) / 4,  # 0.84
        "inconsistency_rate": 1 / 4,  # Paris → Lyon
        "net_violation_rate": None,  # the floor relation itself
    },
    "si.paraphrase": {
        "n": 8,
        "pass": 3,
        "fail": 3,
        "skip": 1,
        "error": 1,
        "invalid_followup": 1,
        "violation_rate": 3 / 6,
        "ci": wilson(3, 6),
        # cells: p1 (0.10 − 0.30)/2 = −0.10, p2 −0.20, p3 +0.03, p4 (0.00 − 0.04)/2 = −0.02
        "mean_delta": (-0.10 - 0.20 + 0.03 - 0.02) / 4,  # −0.0725
        # observations (repeats apart, the SKIP's 0.90 left out)
        "mad": (0.10 + 0.30 + 0.20 + 0.03 + 0.00 + 0.04) / 6,  # 0.67 / 6
        "stability": 3 / 6,  # 0.03, 0.00, 0.04
        "mean_similarity": (0.90 + 0.50 + 0.60 + 0.95 + 0.98 + 0.70) / 6,  # 4.63 / 6
        "inconsistency_rate": 3 / 6,  # 4→5, 9→6, 6→7; Paris → paris is no change
        "net_violation_rate": 3 / 6 - FLOOR,  # 0.25
    },
    "si.academic": {
        "n": 4,
        "pass": 4,
        "fail": 0,
        "skip": 0,
        "error": 0,
        "invalid_followup": 0,
        "violation_rate": 0 / 4,
        "ci": wilson(0, 4),  # the low end is clipped at 0
        "mean_delta": (0.02 - 0.05 + 0.08 - 0.50) / 4,  # −0.1125
        "mad": (0.02 + 0.05 + 0.08 + 0.50) / 4,  # 0.1625
        "stability": 1 / 4,  # 0.02 only: stable means |Δ| strictly below 0.05
        "mean_similarity": (0.92 + 0.94 + 0.85 + 0.30) / 4,  # 0.7525
        "inconsistency_rate": 0 / 4,
        "net_violation_rate": max(0.0, 0 / 4 - FLOOR),  # clipped: 0
    },
}


def test_each_relation_row_is_the_hand_computed_one(report):
    assert report["n_cases"] == 16
    rows = {row["relation_id"]: row for row in report["rows"]}
    assert set(rows) == set(EXPECTED_ROWS)
    for relation_id, expected in EXPECTED_ROWS.items():
        row = rows[relation_id]
        assert row["model"] == MODEL
        for key, value in expected.items():
            if key == "ci":
                assert (row["ci_low"], row["ci_high"]) == approx(value), relation_id
            elif value is None:
                assert row[key] is None, (relation_id, key)
            else:
                assert row[key] == approx(value), (relation_id, key, row[key], value)


def test_the_wilson_intervals_written_out(report):
    """The intervals again, as numbers (so a change in the formula above shows too)."""
    rows = {row["relation_id"]: row for row in report["rows"]}
    # 1 of 4: p = 0.25, z²/n = 0.9604; centre = (0.25 + 0.4802)/1.9604 = 0.3725
    assert (rows["si.identity"]["ci_low"], rows["si.identity"]["ci_high"]) == pytest.approx(
        (0.0456, 0.6994), abs=5e-5
    )
    # 3 of 6: symmetric around 0.5
    assert (rows["si.paraphrase"]["ci_low"], rows["si.paraphrase"]["ci_high"]) == pytest.approx(
        (0.1876, 0.8124), abs=5e-5
    )
    # 0 of 4: centre = half = 0.4802/1.9604 → (0, 0.4899)
    assert rows["si.academic"]["ci_low"] == 0.0
    assert rows["si.academic"]["ci_high"] == pytest.approx(0.4899, abs=5e-5)


def test_the_model_row_is_the_hand_computed_one(report):
    (model,) = report["models"]
    assert model["model"] == MODEL
    # counts and rates over the non-floor relations (paraphrase + academic)
    assert model["relations"] == 2
    assert (model["n"], model["pass"], model["fail"]) == (8 + 4, 3 + 4, 3 + 0)
    assert (model["skip"], model["error"], model["invalid_followup"]) == (1, 1, 1)
    assert model["n_all"] == 16
    assert model["violation_rate"] == approx(3 / 10)
    assert (model["ci_low"], model["ci_high"]) == approx(wilson(3, 10))
    assert model["mean_similarity"] == approx((4.63 + 3.01) / 10)  # 0.764
    assert model["inconsistency_rate"] == approx((3 + 0) / (6 + 4))
    # the floor of the one task, and the invariance relations pooled: 3 FAIL of 10 judged
    assert model["noise_floor"] == approx(FLOOR)
    assert model["net_violation_rate"] == approx(3 / 10 - FLOOR)  # 0.05
    # mean Δ: every cell, identity included: (−0.07 − 0.29 − 0.45) / 12
    assert model["n_cells"] == 4 + 4 + 4
    assert model["mean_delta"] == approx((-0.07 - 0.29 - 0.45) / 12)
    # MAD over the non-identity observations: (0.67 + 0.65) / (6 + 4)
    assert model["mad"] == approx((0.67 + 0.65) / 10)  # 0.132
    # stability, identity included: (3 + 3 + 1) stable of (4 + 6 + 4); without: (3 + 1) / 10
    assert model["n_observations"] == 14
    assert model["stability"] == approx(7 / 14)
    assert model["stability_excl_identity"] == approx(4 / 10)
    assert model["agentdiff_gap"] is None  # no side-tagged cases


def test_the_noise_floor_is_the_hand_computed_one(report):
    assert set(report["noise_floor"]) == {MODEL}
    floor = report["noise_floor"][MODEL][TASK]
    assert (floor["n"], floor["pass"], floor["fail"]) == (4, 3, 1)
    assert floor["violation_rate"] == approx(FLOOR)
    assert (floor["ci_low"], floor["ci_high"]) == approx(wilson(1, 4))
    assert floor["inconsistency_rate"] == approx(1 / 4)
