"""The paper metrics on small hand-made stores, every field of every row checked against a value
worked out by hand (issue 21: the mutants of app/analysis/metrics.py that the other tests let
live). The arithmetic is in the comments; nothing here recomputes a number with the code it tests.

Wilson 95% intervals used below (z = 1.959964, z² = 3.841459), by the module's formula
centre = (p + z²/2n) / (1 + z²/n), half = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n):
  1 of 2: 1 + z²/2 = 2.920729, centre 0.5, half 1.959964·√(0.125 + 0.240091) / 2.920729 = 0.405469
  0 of 1: centre = half = (z²/2) / (1 + z²) = 1.920730 / 4.841459 = 0.396726 → (0, 0.793451)
  1 of 1: the mirror of 0 of 1 → (0.206549, 1)
  2 of 2: centre (1 + z²/4) / (1 + z²/2) = 0.671190, half (z²/4) / 2.920729 = 0.328810
  3 of 5: 1 + z²/5 = 1.768292, centre 0.984146 / 1.768292 = 0.556551,
          half 1.959964·√(0.048 + 0.038415) / 1.768292 = 0.325828
"""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from app.analysis import aggregates, case_fields, metrics, noise_floor, relation_roles, severity
from app.analysis.consistency import answer_types, same_answers
from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Sample
from storage.run_verbs import RunDefinition

WILSON = {
    (1, 2): (0.094531, 0.905469),
    (0, 1): (0.0, 0.793451),
    (1, 1): (0.206549, 1.0),
    (2, 2): (0.342380, 1.0),
    (3, 5): (0.230723, 0.882379),
}


def ci(k: int, n: int) -> dict:
    low, high = WILSON[(k, n)]
    return {"ci_low": pytest.approx(low, abs=1e-5), "ci_high": pytest.approx(high, abs=1e-5)}


# ------------------------------------------------------------------ recording hand-made cases

META = {"s1": {"level": 1}, "s2": {"level": "hard"}, "s3": {}, "s4": {}}


def _sample(name: str) -> Sample:
    return Sample(fields={"text": f"Question {name}?"}, reference=f"ref {name}", meta=META[name])


def _record(store, runs: dict[str, tuple[str, str, str]], rows: list[dict]) -> None:
    """``runs``: run id → (model, task, start day); each row names ``run``, ``rel``, ``sample``
    and ``verdict`` and may set side, repeat, followup, reason, delta, sim, answers, step
    (source, follow-up AvgStepScore), details and the two inputs. Case ids are
    ``<run>-c<row index>``, so by id the cases come in the order written here."""
    for run_id, (model, task_id, day) in runs.items():
        names = sorted({row["sample"] for row in rows if row["run"] == run_id})
        store.save_run(
            RunDefinition(
                run_id,
                endpoint=Endpoint(name=model, base_url="http://127.0.0.1:9/v1", model=model),
                task_id=task_id,
                config={},
                samples=[_sample(name) for name in names],
            ),
            created_at=f"{day}T09:00:00+00:00",
        )
    cases = []
    for i, row in enumerate(rows):
        model, task_id, _ = runs[row["run"]]
        sample = _sample(row["sample"])
        delta = row.get("delta")
        judged = row["verdict"] in ("PASS", "FAIL")
        source_answer, followup_answer = row.get("answers", (None, None))
        step_source, step_followup = row.get("step", (None, None))
        cases.append(
            Case.from_row(
                {
                    "id": f"{row['run']}-c{i:03d}",
                    "run_id": row["run"],
                    "sample_id": sample.id,
                    "relation_id": row["rel"],
                    "family": row["rel"].split(".")[0],
                    "side": row.get("side"),
                    "target": "text",
                    "followup_index": row.get("followup", 0),
                    "repeat_index": row.get("repeat", 0),
                    "model": model,
                    "task_id": task_id,
                    "source_input": row.get("source_input", sample.fields),
                    "followup_input": row.get(
                        "followup_input", {"text": f"{sample.fields['text']} Please."}
                    )
                    if judged
                    else None,
                    "source_answer": source_answer,
                    "followup_answer": followup_answer,
                    "verdict": row["verdict"],
                    "reason": row.get("reason", ""),
                    "details": row.get("details", {}),
                    "score_source": 0.5 if delta is not None else None,
                    "score_followup": 0.5 + delta if delta is not None else None,
                    "delta": delta,
                    "output_similarity": row.get("sim"),
                    "step_score_source": step_source,
                    "step_score_followup": step_followup,
                    "created_at": "2026-11-02T10:00:00+00:00",
                }
            )
        )
    store.record_cases(cases)


class Spy:
    """The store, recording the keyword arguments of each verb called on it."""

    def __init__(self, store) -> None:
        self._store = store
        self.calls: list[tuple[str, dict]] = []

    def __getattr__(self, name):
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls.append((name, kwargs))
            return attr(*args, **kwargs)

        return call


# ------------------------------------------------------------------ the summary dataset
#
# r1 (M, qa, 2 Nov), r2 (M, qa, 9 Nov), r3 (N, qa), r4 (P, qa). The filter ONLY = runs r1, r3, r4
# leaves r2 out, and every number of r2 would change a figure for M, so a query that drops the
# filter shows. By hand for ONLY:
#   M si.identity  s1 FAIL Δ .25 (a→b) sim .5 · s2 PASS Δ 0 (a→a) sim 1 → floor 1/2
#   M si.paraphrase s1 FAIL Δ −.5 (a→c) sim .25 · s2 PASS Δ .125 (a→a) sim .75 · s3 SKIP
#                  (invalid_followup) · s4 ERROR
#   M word.antonym  s1 FAIL Δ .5 (a→b): "should change", outside MAD and stability, no floor
#   M ad.paraphrase (meaning) s1 FAIL (a→b) · M ad.format (presentation) s1 PASS (a→a)
#   N si.paraphrase s1 FAIL Δ −.25 (a→b) sim .5 · N ad.format (presentation) s1 FAIL (a→b)
#   P ad.format (presentation) s1 PASS (a→a)
# r2 (left out by ONLY): identity s1, s2 PASS Δ 0; paraphrase s1, s2 PASS Δ 0; ad.paraphrase
# and ad.format s1 PASS.

RUNS = {
    "r1": ("M", "qa", "2026-11-02"),
    "r2": ("M", "qa", "2026-11-09"),
    "r3": ("N", "qa", "2026-11-02"),
    "r4": ("P", "qa", "2026-11-02"),
}
SAME, CHANGED = ("a", "a"), ("a", "b")
ROWS = [
    {"run": "r1", "rel": "si.identity", "sample": "s1", "verdict": "FAIL", "delta": 0.25,
     "answers": CHANGED, "sim": 0.5},
    {"run": "r1", "rel": "si.identity", "sample": "s2", "verdict": "PASS", "delta": 0.0,
     "answers": SAME, "sim": 1.0},
    {"run": "r1", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "delta": -0.5,
     "answers": ("a", "c"), "sim": 0.25, "step": (0.5, 0.25)},
    {"run": "r1", "rel": "si.paraphrase", "sample": "s2", "verdict": "PASS", "delta": 0.125,
     "answers": SAME, "sim": 0.75, "step": (0.25, 0.75)},
    {"run": "r1", "rel": "si.paraphrase", "sample": "s3", "verdict": "SKIP",
     "reason": "invalid_followup: dropped a number"},
    {"run": "r1", "rel": "si.paraphrase", "sample": "s4", "verdict": "ERROR"},
    {"run": "r1", "rel": "word.antonym", "sample": "s1", "verdict": "FAIL", "delta": 0.5,
     "answers": CHANGED},
    {"run": "r1", "rel": "ad.paraphrase", "side": "meaning", "sample": "s1", "verdict": "FAIL",
     "answers": CHANGED},
    {"run": "r1", "rel": "ad.format", "side": "presentation", "sample": "s1", "verdict": "PASS",
     "answers": SAME},
    {"run": "r2", "rel": "si.identity", "sample": "s1", "verdict": "PASS", "delta": 0.0,
     "answers": SAME},
    {"run": "r2", "rel": "si.identity", "sample": "s2", "verdict": "PASS", "delta": 0.0,
     "answers": SAME},
    {"run": "r2", "rel": "si.paraphrase", "sample": "s1", "verdict": "PASS", "delta": 0.0,
     "answers": SAME, "step": (1.0, 0.0)},
    {"run": "r2", "rel": "si.paraphrase", "sample": "s2", "verdict": "PASS", "delta": 0.0,
     "answers": SAME},
    {"run": "r2", "rel": "ad.paraphrase", "side": "meaning", "sample": "s1", "verdict": "PASS",
     "answers": SAME},
    {"run": "r2", "rel": "ad.format", "side": "presentation", "sample": "s1", "verdict": "PASS",
     "answers": SAME},
    {"run": "r3", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "delta": -0.25,
     "answers": CHANGED, "sim": 0.5},
    {"run": "r3", "rel": "ad.format", "side": "presentation", "sample": "s1", "verdict": "FAIL",
     "answers": CHANGED},
    {"run": "r4", "rel": "ad.format", "side": "presentation", "sample": "s1", "verdict": "PASS",
     "answers": SAME},
]  # fmt: skip
ONLY = CaseFilter.make(run_ids=["r1", "r3", "r4"])


@pytest.fixture
def summary_store(store):
    _record(store, RUNS, ROWS)
    return store


# M's floor on qa under ONLY: 2 observations (r1), 1 FAIL → 1/2; answers changed 1 of 2;
# |Δ| .25 and 0 → mean .125; |Δ| < 0.05: 1 of 2.
FLOOR_M_QA = {
    "n": 2,
    "pass": 1,
    "fail": 1,
    "violation_rate": 0.5,
    "noise_floor": 0.5,
    **ci(1, 2),
    "inconsistency_rate": 0.5,
    "n_answered": 2,
    "mean_abs_delta": 0.125,
    "stability": 0.5,
}


def _row(model, relation_id, **values):
    """A model × relation row: zero counts and no metric unless given."""
    row = {
        "model": model,
        "relation_id": relation_id,
        "n": 1,
        "pass": 0,
        "fail": 0,
        "skip": 0,
        "error": 0,
        "invalid_followup": 0,
        "violation_rate": None,
        "ci_low": None,
        "ci_high": None,
        "mean_similarity": None,
        "inconsistency_rate": None,
        "n_answered": 0,
        "noise_floor": None,
        "net_violation_rate": None,
        "mean_delta": None,
        "mad": None,
        "stability": None,
        "n_cells": 0,
        "n_observations": 0,
    }
    row.update(values)
    return row


# Every model × relation row under ONLY, in (model, relation) order.
RELATION_ROWS = [
    # 1 PASS → rate 0; invariance: M's qa floor 1/2 over its 1 judged case → floor .5,
    # net max(0, 0 − .5) = 0; no Δ → no cell.
    _row("M", "ad.format", n=1, **{"pass": 1}, violation_rate=0.0, **ci(0, 1),
         inconsistency_rate=0.0, n_answered=1, noise_floor=0.5, net_violation_rate=0.0),
    # 1 FAIL → rate 1; net 1 − .5 = .5.
    _row("M", "ad.paraphrase", fail=1, violation_rate=1.0, **ci(1, 1), inconsistency_rate=1.0,
         n_answered=1, noise_floor=0.5, net_violation_rate=0.5),
    # the floor relation itself: no floor, no net; cells s1 .25, s2 0 → mean Δ .125; no MAD
    # (SI eq. 6 leaves identity out), stability 1/2; similarity (.5 + 1) / 2.
    _row("M", "si.identity", n=2, **{"pass": 1}, fail=1, violation_rate=0.5, **ci(1, 2),
         mean_similarity=0.75, inconsistency_rate=0.5, n_answered=2, mean_delta=0.125,
         stability=0.5, n_cells=2, n_observations=2),
    # 4 cases: 1 PASS 1 FAIL 1 SKIP (invalid_followup) 1 ERROR; net max(0, .5 − .5) = 0;
    # Δ (−.5 + .125) / 2 = −.1875, MAD (.5 + .125) / 2 = .3125, stability 0 / 2;
    # similarity (.25 + .75) / 2 = .5; answers changed 1 of 2.
    _row("M", "si.paraphrase", n=4, **{"pass": 1}, fail=1, skip=1, error=1, invalid_followup=1,
         violation_rate=0.5, **ci(1, 2), mean_similarity=0.5, inconsistency_rate=0.5,
         n_answered=2, noise_floor=0.5, net_violation_rate=0.0, mean_delta=-0.1875,
         mad=0.3125, stability=0.0, n_cells=2, n_observations=2),
    # "should change": no floor; its cell's Δ .5 and its observation are shown, but it is no SI
    # transformation: no MAD, no stability.
    _row("M", "word.antonym", fail=1, violation_rate=1.0, **ci(1, 1), inconsistency_rate=1.0,
         n_answered=1, mean_delta=0.5, n_cells=1, n_observations=1),
    # N has no floor: invariance relations get none either.
    _row("N", "ad.format", fail=1, violation_rate=1.0, **ci(1, 1), inconsistency_rate=1.0,
         n_answered=1),
    _row("N", "si.paraphrase", fail=1, violation_rate=1.0, **ci(1, 1), mean_similarity=0.5,
         inconsistency_rate=1.0, n_answered=1, mean_delta=-0.25, mad=0.25, stability=0.0,
         n_cells=1, n_observations=1),
    _row("P", "ad.format", **{"pass": 1}, violation_rate=0.0, **ci(0, 1), inconsistency_rate=0.0,
         n_answered=1),
]  # fmt: skip

# Per model under ONLY.
MODEL_ROWS = [
    {
        "model": "M",
        # non-floor relations: ad.format, ad.paraphrase, si.paraphrase, word.antonym
        "relations": 4,
        # 1 + 1 + 4 + 1 cases: PASS ad.format + paraphrase s2; FAIL ad.paraphrase, paraphrase
        # s1, antonym; the SKIP and the ERROR of paraphrase
        "n": 7,
        "pass": 2,
        "fail": 3,
        "skip": 1,
        "error": 1,
        "invalid_followup": 1,
        "violation_rate": 0.6,  # 3 / 5
        **ci(3, 5),
        "mean_similarity": 0.5,  # paraphrase (.25 + .75) / 2 (the floor's similarities out)
        "inconsistency_rate": 0.6,  # changed: ad.paraphrase, paraphrase s1, antonym; of 5
        "n_answered": 5,
        "n_all": 9,  # 7 + the 2 identity cases
        # invariance: ad.format 1P, ad.paraphrase 1F, paraphrase 1P 1F → 2 / 4 on qa, floor .5
        "noise_floor": 0.5,
        "net_violation_rate": 0.0,
        # cells: identity 2 (Δ .125 each on average), paraphrase 2 (−.1875), antonym 1 (.5)
        # → (2·.125 + 2·(−.1875) + .5) / 5 = .375 / 5 = .075
        "mean_delta": pytest.approx(0.075),
        # SI observations (antonym is no SI transformation): identity .25, 0; paraphrase .5, .125
        "mad": 0.3125,  # (.5 + .125) / 2, identity out
        "stability": 0.25,  # 1 of 4 below 0.05 (identity's 0)
        "stability_excl_identity": 0.0,  # 0 of 2
        # "equivalent" relations with a Δ: the same 4 (ad.* have no Δ) → 1 of 4
        "invariance_stability": 0.25,
        "n_cells": 5,
        "n_observations": 5,  # the 4 above + antonym's
        "n_mad_observations": 2,
        "n_stability_observations": 4,
        # r1, M × qa: meaning ad.paraphrase 1/1 − presentation ad.format 0/1 = 1
        "agentdiff_gap": 1.0,
    },
    {
        "model": "N",
        "relations": 2,
        "n": 2,
        "pass": 0,
        "fail": 2,
        "skip": 0,
        "error": 0,
        "invalid_followup": 0,
        "violation_rate": 1.0,
        **ci(2, 2),
        "mean_similarity": 0.5,
        "inconsistency_rate": 1.0,
        "n_answered": 2,
        "n_all": 2,
        "noise_floor": None,  # N has no floor observations
        "net_violation_rate": None,
        "mean_delta": -0.25,
        "mad": 0.25,
        "stability": 0.0,
        "stability_excl_identity": 0.0,
        "invariance_stability": 0.0,
        "n_cells": 1,
        "n_observations": 1,
        "n_mad_observations": 1,
        "n_stability_observations": 1,
        "agentdiff_gap": None,  # presentation side only: no cell has both sides
    },
    {
        "model": "P",
        "relations": 1,
        "n": 1,
        "pass": 1,
        "fail": 0,
        "skip": 0,
        "error": 0,
        "invalid_followup": 0,
        "violation_rate": 0.0,
        **ci(0, 1),
        "mean_similarity": None,
        "inconsistency_rate": 0.0,
        "n_answered": 1,
        "n_all": 1,
        "noise_floor": None,
        "net_violation_rate": None,
        "mean_delta": None,  # no Δ at all: no cell
        "mad": None,
        "stability": None,
        "stability_excl_identity": None,
        "invariance_stability": None,
        "n_cells": 0,
        "n_observations": 0,
        "n_mad_observations": 0,
        "n_stability_observations": 0,
        "agentdiff_gap": None,
    },
]

# AgentDiff rows under ONLY: M's cell has both sides (1/1 vs 0/1); N and P presentation only.
GAP_ROWS = [
    {"model": "M", "n_cells": 1, "n_originals": 1, "gap": 1.0, "sd_gap": None,
     "meaning_rate": 1.0, "presentation_rate": 0.0, "n_meaning": 1, "n_presentation": 1},
    {"model": "N", "n_cells": 0, "n_originals": 1, "gap": None, "sd_gap": None,
     "meaning_rate": None, "presentation_rate": 1.0, "n_meaning": 0, "n_presentation": 1},
    {"model": "P", "n_cells": 0, "n_originals": 1, "gap": None, "sd_gap": None,
     "meaning_rate": None, "presentation_rate": 0.0, "n_meaning": 0, "n_presentation": 1},
]  # fmt: skip


def _same(store):
    return same_answers(store, answer_types(store))


def test_noise_floor_under_a_run_filter_every_field(summary_store):
    """The floor's counts, interval, answers and Δ noise all come from the filtered runs, and
    its Δ noise from the floor relation alone (r1 also has paraphrase and antonym Δs)."""
    only_paraphrase = CaseFilter.make(run_ids=["r1", "r3", "r4"], relations=["si.paraphrase"])
    roles = relation_roles.relation_roles(summary_store)
    for flt in (ONLY, only_paraphrase):  # the relation filter is ignored
        assert aggregates.fetch_floors(summary_store, flt, roles, _same(summary_store)) == {
            "M": {"qa": FLOOR_M_QA}
        }
    # Unfiltered, r2's two PASSes join: 4 observations, 1 FAIL; |Δ| .25, 0, 0, 0.
    every = aggregates.fetch_floors(summary_store, CaseFilter(), roles, _same(summary_store))["M"][
        "qa"
    ]
    assert (every["n"], every["fail"], every["noise_floor"]) == (4, 1, 0.25)
    assert every["mean_abs_delta"] == 0.0625
    assert every["stability"] == 0.75


def test_noise_floor_without_floor_relations_is_empty(summary_store):
    roles = relation_roles.RelationRoles(noise_floor=frozenset(), invariance=frozenset())
    assert aggregates.fetch_floors(summary_store, CaseFilter(), roles, _same(summary_store)) == {}


def test_floor_rows_sorted_by_model_then_task():
    floors = {
        "Z": {"qa": {"n": 1}},
        "A": {"sentiment": {"n": 2}, "math": {"n": 3}},
    }
    assert noise_floor.floor_rows(floors) == [
        {"model": "A", "task_id": "math", "n": 3},
        {"model": "A", "task_id": "sentiment", "n": 2},
        {"model": "Z", "task_id": "qa", "n": 1},
    ]
    assert noise_floor.floor_rows({}) == []


def test_model_relation_rows_under_a_run_filter_every_field(summary_store):
    found = aggregates.fetch_aggregates(summary_store, ONLY)
    assert metrics.model_relation_rows(found) == RELATION_ROWS


def test_model_relation_rows_by_task(summary_store):
    """One task only (qa): the same rows with the task column, cells grouped by task too."""
    expected = [{**row, "task_id": "qa"} for row in RELATION_ROWS]
    found = aggregates.fetch_aggregates(summary_store, ONLY, by_task=True)
    assert metrics.model_relation_rows(found) == expected


def test_model_relation_rows_take_the_floors_given(summary_store):
    """The aggregates' floors are used as they are: a 1/8 floor for M on qa gives
    si.paraphrase (1 of 2 failed) a net rate of .5 − .125 = .375; no floors, no net."""
    found = aggregates.fetch_aggregates(summary_store, ONLY)
    floors = {"M": {"qa": {"noise_floor": 0.125}}}
    rows = {
        r["relation_id"]: r
        for r in metrics.model_relation_rows(replace(found, floors=floors))
        if r["model"] == "M"
    }
    assert rows["si.paraphrase"]["noise_floor"] == 0.125
    assert rows["si.paraphrase"]["net_violation_rate"] == 0.375
    assert rows["ad.paraphrase"]["net_violation_rate"] == 0.875  # 1 − .125
    for row in metrics.model_relation_rows(replace(found, floors={})):
        assert row["noise_floor"] is None and row["net_violation_rate"] is None


def test_model_relation_rows_honour_the_roles_given(summary_store):
    """With roles naming no floor relation there is no floor to net against (si.identity's
    verdicts are then just another relation's)."""
    roles = relation_roles.RelationRoles(
        noise_floor=frozenset(), invariance=frozenset({"si.paraphrase", "si.identity"})
    )
    floors = aggregates.fetch_floors(summary_store, ONLY, roles, _same(summary_store))
    found = replace(aggregates.fetch_aggregates(summary_store, ONLY), roles=roles, floors=floors)
    rows = metrics.model_relation_rows(found)
    assert [(r["model"], r["relation_id"]) for r in rows] == [
        (r["model"], r["relation_id"]) for r in RELATION_ROWS
    ]
    for row in rows:
        assert row["noise_floor"] is None and row["net_violation_rate"] is None
    (model,) = [m for m in metrics.model_rows(found) if m["model"] == "M"]
    assert model["noise_floor"] is None and model["net_violation_rate"] is None
    # no floor relation: every relation of M counts, identity included: 9 cases, 2 + 1 PASS,
    # 3 + 1 FAIL → 4 / 7
    assert (model["relations"], model["n"], model["pass"], model["fail"]) == (5, 9, 3, 4)


def test_model_rows_under_a_run_filter_every_field(summary_store):
    assert metrics.model_rows(aggregates.fetch_aggregates(summary_store, ONLY)) == MODEL_ROWS


def test_model_rows_take_the_floors_given(summary_store):
    """M's invariance cases on qa (2 FAIL of 4) against a given floor of 1/8: net .375."""
    found = aggregates.fetch_aggregates(summary_store, ONLY)
    floors = {"M": {"qa": {"noise_floor": 0.125}}}
    (m, n, p) = metrics.model_rows(replace(found, floors=floors))
    assert (m["noise_floor"], m["net_violation_rate"]) == (0.125, 0.375)
    assert (n["noise_floor"], p["noise_floor"]) == (None, None)
    for row in metrics.model_rows(replace(found, floors={})):
        assert row["noise_floor"] is None and row["net_violation_rate"] is None


def test_agentdiff_gap_under_a_run_filter(summary_store):
    """A model with one side only is still listed (its cases are side cases); r2 left out:
    with it, M's s1 meaning share would be 1/2 and the gap .5."""
    assert aggregates.agentdiff_gap(summary_store, ONLY) == GAP_ROWS
    (m, *_) = aggregates.agentdiff_gap(summary_store, CaseFilter())
    assert (m["gap"], m["n_meaning"]) == (0.5, 2)


def test_step_scores_under_a_run_filter(summary_store):
    """M × si.paraphrase in r1: sources .5 and .25 → .375, follow-ups .25 and .75 → .5, changes
    −.25 and +.5 → .125 (r2's 1.0 → 0.0 left out)."""
    expected = [
        {"model": "M", "relation_id": "si.paraphrase", "n": 2, "step_score_source": 0.375,
         "step_score_followup": 0.5, "step_score_delta": 0.125},
    ]  # fmt: skip
    assert aggregates.step_scores(summary_store, ONLY) == expected


def test_summarize_under_a_run_filter_every_part(summary_store):
    found = metrics.summarize(summary_store, ONLY)
    assert found["rows"] == RELATION_ROWS
    assert found["models"] == MODEL_ROWS
    assert found["noise_floor"] == {"M": {"qa": FLOOR_M_QA}}
    assert found["gap"] == GAP_ROWS
    assert found["step_scores"] == [
        {"model": "M", "relation_id": "si.paraphrase", "n": 2, "step_score_source": 0.375,
         "step_score_followup": 0.5, "step_score_delta": 0.125},
    ]  # fmt: skip
    # verdict counts by model × relation (summed over tasks), as stats.run_tests reads them
    counts = {(r["model"], r["relation_id"]): r for r in found["counts"]}
    assert list(counts) == [(r["model"], r["relation_id"]) for r in RELATION_ROWS]
    assert counts[("M", "si.paraphrase")] == {
        "model": "M",
        "relation_id": "si.paraphrase",
        "n": 4,
        "n_pass": 1,
        "n_fail": 1,
        "n_skip": 1,
        "n_error": 1,
        "n_invalid_followup": 1,
        "n_similarity": 2,
        "sum_similarity": 1.0,  # .25 + .75
        "n_answered": 2,
        "n_changed": 1,
    }


def test_summarize_without_step_scores_gives_an_empty_list(store):
    _record(store, {"r": ("M", "qa", "2026-11-02")},
            [{"run": "r", "rel": "si.paraphrase", "sample": "s1", "verdict": "PASS"}])  # fmt: skip
    found = metrics.summarize(store, CaseFilter())
    assert found["step_scores"] == []
    assert found["gap"] == []
    assert found["noise_floor"] == {}


def test_net_violation_skips_tasks_without_a_floor_and_goes_on():
    """A task without a floor (or without judged cases) is passed over, not the end of the
    list: qa after them still counts — rate 1/2 against its floor .25 → net .25."""
    groups = [
        {"task_id": "math", "n_pass": 3, "n_fail": 1},  # no floor for math
        {"task_id": "qa", "n_pass": 0, "n_fail": 0},  # a floor, but nothing judged
        {"task_id": "qa", "n_pass": 1, "n_fail": 1},
    ]
    floors = {"qa": {"noise_floor": 0.25}}
    assert noise_floor.net_violation(groups, floors) == (0.25, 0.25)
    assert noise_floor.net_violation(groups[:2], floors) == (None, None)


def _cell(model, relation_id, n_cells, mean_delta, obs, stable, abs_sum, paper, mad, inv):
    """A ``cell_stats`` row: every observation counted in the sets it belongs to."""
    return {
        "model": model, "relation_id": relation_id, "n_cells": n_cells, "mean_delta": mean_delta,
        "n_observations": obs, "sum_abs_delta": abs_sum, "n_stable": stable,
        "n_paper": obs if paper else 0, "n_paper_stable": stable if paper else 0,
        "n_mad": obs if mad else 0, "sum_mad": abs_sum if mad else 0.0,
        "n_mad_stable": stable if mad else 0,
        "n_invariance": obs if inv else 0, "n_invariance_stable": stable if inv else 0,
    }  # fmt: skip


def test_model_cells_combine_relation_cells_exactly():
    """Per model from per relation: cells weight the mean Δ, every observation sum adds up.
    M: identity 2 cells mean 1/8, 4 obs (3 stable, |Δ| sum 1/4); paraphrase 3 cells mean −1/4,
    2 obs (0 stable, |Δ| sum 1/2); antonym (no SI transformation, no invariance) 1 cell mean
    1/2, 1 obs (0 stable, |Δ| 1/2).
    → cells 6, mean Δ (2·1/8 − 3·1/4 + 1/2) / 6 = 0; mean |Δ| (1/4 + 1/2 + 1/2) / 7; SI
    stability 3/6; MAD over paraphrase (1/2) / 2 = 1/4, its stability 0/2; invariance
    stability (identity + paraphrase) 3/6. N: identity only → nothing without identity."""
    relation_cells = [
        _cell("M", "si.identity", 2, 0.125, 4, 3, 0.25, paper=True, mad=False, inv=True),
        _cell("M", "si.paraphrase", 3, -0.25, 2, 0, 0.5, paper=True, mad=True, inv=True),
        _cell("M", "word.antonym", 1, 0.5, 1, 0, 0.5, paper=False, mad=False, inv=False),
        _cell("N", "si.identity", 1, 0.0, 1, 1, 0.0, paper=True, mad=False, inv=True),
    ]
    combined = metrics._model_cells(relation_cells)
    m, n = combined["M"], combined["N"]
    assert (m["n_cells"], m["mean_delta"], m["n_observations"]) == (6, 0.0, 7)
    assert m["mean_abs_delta"] == pytest.approx(1.25 / 7)
    assert (m["n_paper"], m["stability"]) == (6, 0.5)
    assert (m["n_mad"], m["mad"], m["stability_excl_identity"]) == (2, 0.25, 0.0)
    assert m["invariance_stability"] == 0.5
    assert (n["n_cells"], n["n_paper"], n["stability"], n["invariance_stability"]) == (
        1,
        1,
        1.0,
        1.0,
    )
    assert (n["n_mad"], n["mad"], n["stability_excl_identity"]) == (0, None, None)
    assert metrics._model_cells([]) == {}


# ------------------------------------------------------------------ custom relations' roles


def _save_custom(store, relation_id: str, expectation: str) -> None:
    from relations.custom import save_spec

    save_spec(
        store,
        {"id": relation_id, "name": relation_id, "description": "", "kind": "template",
         "prefix": "Please: ", "suffix": "", "expectation": expectation},
    )  # fmt: skip


@pytest.fixture
def custom_store(store):
    """M on qa: floor 1/2 (identity s1 FAIL Δ .25, s2 PASS Δ 0); custom.same (expects an
    equivalent answer) s1 FAIL Δ −.5; custom.flip (expects a different one) s1 FAIL Δ .125."""
    _save_custom(store, "custom.same", "equivalent")
    _save_custom(store, "custom.flip", "different")
    rows = [
        {"run": "c", "rel": "si.identity", "sample": "s1", "verdict": "FAIL", "delta": 0.25},
        {"run": "c", "rel": "si.identity", "sample": "s2", "verdict": "PASS", "delta": 0.0},
        {"run": "c", "rel": "custom.same", "sample": "s1", "verdict": "FAIL", "delta": -0.5},
        {"run": "c", "rel": "custom.flip", "sample": "s1", "verdict": "FAIL", "delta": 0.125},
    ]
    _record(store, {"c": ("M", "qa", "2026-11-02")}, rows)
    return store


def test_relation_roles_read_the_stores_custom_relations(custom_store):
    roles = relation_roles.relation_roles(custom_store)
    assert roles.noise_floor == frozenset({"si.identity"})
    assert "custom.same" in roles.invariance and "custom.same" not in roles.paper
    assert "custom.flip" not in roles.invariance and "custom.flip" not in roles.paper
    # without a store, or with one that keeps no custom relations: the built-in ones only
    for store in (None, object()):
        roles = relation_roles.relation_roles(store)
        assert roles.noise_floor == frozenset({"si.identity"})
        assert "si.paraphrase" in roles.invariance and "si.paraphrase" in roles.paper
        assert "word.antonym" not in roles.invariance | roles.paper
        assert not {r for r in roles.invariance | roles.paper if r.startswith("custom.")}


def test_custom_relations_get_their_roles_in_every_summary(custom_store):
    """custom.same is an invariance relation: floor 1/2, net 1 − 1/2. Neither custom relation is
    one of the SI paper's transformations, so neither enters MAD or stability (SI §3.1, Table
    3). Model M: invariance = custom.same alone (1 FAIL) → net .5; no MAD (no non-identity SI
    observation); stability 1 of identity's 2 observations; invariance stability over identity
    and custom.same: 1 of 3 (identity's 0)."""
    for rows in (
        metrics.model_relation_rows(aggregates.fetch_aggregates(custom_store, CaseFilter())),
        metrics.summarize(custom_store, CaseFilter())["rows"],
    ):
        by_relation = {r["relation_id"]: r for r in rows}
        same, flip = by_relation["custom.same"], by_relation["custom.flip"]
        assert (same["noise_floor"], same["net_violation_rate"]) == (0.5, 0.5)
        assert (same["mad"], same["stability"], same["n_observations"]) == (None, None, 1)
        assert (flip["noise_floor"], flip["net_violation_rate"]) == (None, None)
        assert (flip["mad"], flip["stability"], flip["n_observations"]) == (None, None, 1)
        assert (flip["mean_delta"], flip["n_cells"]) == (0.125, 1)
    everything = aggregates.fetch_aggregates(custom_store, CaseFilter())
    for models in (
        metrics.model_rows(everything),
        metrics.summarize(custom_store, CaseFilter())["models"],
    ):
        (model,) = models
        assert (model["noise_floor"], model["net_violation_rate"]) == (0.5, 0.5)
        assert model["mad"] is None
        assert model["stability"] == 0.5
        assert model["stability_excl_identity"] is None
        assert model["invariance_stability"] == pytest.approx(1 / 3)
        assert model["n_observations"] == 4


# ------------------------------------------------------------------ breakdown


@pytest.fixture
def breakdown_store(store):
    """Four models (so the two halves of the scan are A, C and B, D). Sample levels: s1 1,
    s2 "hard", s3 none. A: s1 FAIL Δ −.5 (a→b), PASS Δ .25 (a→a), SKIP; s2 ERROR, PASS (a→a);
    s3 PASS Δ 0 without a follow-up answer. B: s1 FAIL (a→b). C: s2 PASS. D: s3 FAIL."""
    runs = {run: (run.upper(), "qa", "2026-11-02") for run in "abcd"}
    rows = [
        {"run": "a", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "delta": -0.5,
         "answers": CHANGED},
        {"run": "a", "rel": "si.paraphrase", "sample": "s1", "repeat": 1, "verdict": "PASS",
         "delta": 0.25, "answers": SAME},
        {"run": "a", "rel": "ad.format", "sample": "s1", "verdict": "SKIP"},
        {"run": "a", "rel": "si.paraphrase", "sample": "s2", "verdict": "ERROR"},
        {"run": "a", "rel": "si.paraphrase", "sample": "s2", "repeat": 1, "verdict": "PASS",
         "answers": SAME},
        {"run": "a", "rel": "si.paraphrase", "sample": "s3", "verdict": "PASS", "delta": 0.0,
         "answers": ("a", None)},
        {"run": "b", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "answers": CHANGED},
        {"run": "c", "rel": "si.paraphrase", "sample": "s2", "verdict": "PASS"},
        {"run": "d", "rel": "si.paraphrase", "sample": "s3", "verdict": "FAIL"},
    ]  # fmt: skip
    _record(store, runs, rows)
    return store


def _level(model, level, **values):
    row = {"model": model, "level": level, "samples": 1, "n": 1, "pass": 0, "fail": 0,
           "skip": 0, "error": 0, "violation_rate": None, "ci_low": None, "ci_high": None,
           "mean_delta": None, "inconsistency_rate": None}  # fmt: skip
    row.update(values)
    return row


BREAKDOWN = [
    # A, level 1: 3 cases, 1 PASS 1 FAIL 1 SKIP → 1/2; Δ (−.5 + .25) / 2; changed 1 of 2
    _level("A", 1, n=3, **{"pass": 1}, fail=1, skip=1, violation_rate=0.5, **ci(1, 2),
           mean_delta=-0.125, inconsistency_rate=0.5),
    # A, "hard": ERROR + PASS → 0/1; no Δ; the PASS's answer unchanged → 0 of 1
    _level("A", "hard", n=2, **{"pass": 1}, error=1, violation_rate=0.0, **ci(0, 1),
           inconsistency_rate=0.0),
    # A, no level (shown last): PASS Δ 0; no follow-up answer → no inconsistency rate
    _level("A", "(none)", **{"pass": 1}, violation_rate=0.0, **ci(0, 1), mean_delta=0.0),
    _level("B", 1, fail=1, violation_rate=1.0, **ci(1, 1), inconsistency_rate=1.0),
    _level("C", "hard", **{"pass": 1}, violation_rate=0.0, **ci(0, 1)),
    _level("D", "(none)", fail=1, violation_rate=1.0, **ci(1, 1)),
]  # fmt: skip


def test_breakdown_every_model_and_value_every_field(breakdown_store):
    """Numbers first, then text, then the samples without the key — per model."""
    assert metrics.breakdown(breakdown_store, "level", CaseFilter()) == BREAKDOWN
    # the same with only the two models of one half named in the filter
    only = CaseFilter.make(models=["D", "B"])
    assert metrics.breakdown(breakdown_store, "level", only) == [BREAKDOWN[3], BREAKDOWN[5]]
    one = CaseFilter.make(models=["A"])
    assert metrics.breakdown(breakdown_store, "level", one) == BREAKDOWN[:3]
    assert metrics.breakdown(breakdown_store, "level", CaseFilter.make(models=[])) == []


def test_breakdown_of_an_empty_store(store):
    assert metrics.breakdown(store, "level", CaseFilter()) == []


# ------------------------------------------------------------------ box statistics


@pytest.fixture
def box_store(store):
    """M: si.paraphrase Δ −1/16, 1/8, 3/16, 1/4, 7/16 (similarities 1/4, 1/2, 1/2, 3/4, 1);
    si.reorder_facts Δ −1/8, 1/8, 3/16, 1/4, 9/16; si.expand Δ 1 (left out by the filter).
    Powers of two, so every quartile and fence below is exact."""
    paraphrase = [(-0.0625, 0.25), (0.125, 0.5), (0.1875, 0.5), (0.25, 0.75), (0.4375, 1.0)]
    reorder = [-0.125, 0.125, 0.1875, 0.25, 0.5625]
    rows = [
        {"run": "b", "rel": "si.paraphrase", "sample": "s1", "repeat": i, "verdict": "PASS",
         "delta": delta, "sim": sim}
        for i, (delta, sim) in enumerate(paraphrase)
    ] + [
        {"run": "b", "rel": "si.reorder_facts", "sample": "s1", "repeat": i, "verdict": "FAIL",
         "delta": delta}
        for i, delta in enumerate(reorder)
    ] + [{"run": "b", "rel": "si.expand", "sample": "s1", "verdict": "PASS", "delta": 1.0}]  # fmt: skip
    _record(store, {"b": ("M", "qa", "2026-11-02")}, rows)
    return store


BOX_FILTER = CaseFilter.make(relations=["si.paraphrase", "si.reorder_facts"])


def test_box_stats_fences_at_exactly_one_and_a_half_iqr(box_store):
    """Five values: q1, median, q3 are the 2nd, 3rd, 4th (linear interpolation at 1, 2, 3).
    paraphrase: q1 1/8, q3 1/4, IQR 1/8, fences 1/8 − 3/16 = −1/16 and 1/4 + 3/16 = 7/16: the
    extremes lie exactly on them and are inside. reorder: same box, −1/8 and 9/16 lie beyond
    (−1/8 < −1/16, 9/16 > 7/16) but within 2.5 IQR (−3/16, 9/16): the whiskers stop at 1/8, 1/4."""
    rows, stride = metrics.box_stats(box_store, BOX_FILTER)
    assert stride == 1
    assert rows == [
        # mean (−1 + 2 + 3 + 4 + 7) / 16 / 5 = 15/80 = .1875
        {"model": "M", "relation_id": "si.paraphrase", "n": 5, "min": -0.0625, "q1": 0.125,
         "median": 0.1875, "q3": 0.25, "max": 0.4375, "mean": 0.1875, "lowerfence": -0.0625,
         "upperfence": 0.4375},
        # mean (−2 + 2 + 3 + 4 + 9) / 16 / 5 = 16/80 = .2
        {"model": "M", "relation_id": "si.reorder_facts", "n": 5, "min": -0.125, "q1": 0.125,
         "median": 0.1875, "q3": 0.25, "max": 0.5625, "mean": pytest.approx(0.2),
         "lowerfence": 0.125, "upperfence": 0.25},
    ]  # fmt: skip


def test_box_stats_of_another_column(box_store):
    """Similarities 1/4, 1/2, 1/2, 3/4, 1: q1 1/2, median 1/2, q3 3/4, fences 1/8 and 9/8 →
    nothing outside; mean 3/5. Only paraphrase cases have a similarity."""
    rows, stride = metrics.box_stats(box_store, BOX_FILTER, column="output_similarity")
    assert stride == 1
    assert rows == [
        {"model": "M", "relation_id": "si.paraphrase", "n": 5, "min": 0.25, "q1": 0.5,
         "median": 0.5, "q3": 0.75, "max": 1.0, "mean": pytest.approx(0.6), "lowerfence": 0.25,
         "upperfence": 1.0},
    ]  # fmt: skip


def test_box_stats_default_column_is_delta_and_unfiltered(box_store):
    """No filter: si.expand's single Δ 1 is its own box."""
    rows, stride = metrics.box_stats(box_store, CaseFilter())
    assert stride == 1
    assert [(r["relation_id"], r["n"]) for r in rows] == [
        ("si.expand", 1),
        ("si.paraphrase", 5),
        ("si.reorder_facts", 5),
    ]
    expand = rows[0]
    for key in ("min", "q1", "median", "q3", "max", "mean", "lowerfence", "upperfence"):
        assert expand[key] == 1.0


def test_box_stats_sample_every_kth_case_above_max_rows(box_store):
    """10 values under the filter, at most 4 wanted → every ⌈10/4⌉ = 3rd case by rowid."""
    rows, stride = metrics.box_stats(box_store, BOX_FILTER, max_rows=4)
    assert stride == 3
    assert sum(r["n"] for r in rows) <= 4
    # by default up to 100,000 values are read
    spy = Spy(box_store)
    metrics.box_stats(spy, CaseFilter())
    assert spy.calls == [("value_sample", {"column": "delta", "max_rows": 100_000})]


# ------------------------------------------------------------------ severity, drill-down


def test_field_texts_writes_every_value_as_a_string():
    assert case_fields.field_texts({}) == {}
    assert case_fields.field_texts({"q": "x", "n": 3, "gone": None}) == {
        "q": "x",
        "n": "3",
        "gone": "",
    }
    assert case_fields.field_texts({1: "a"}) == {"1": "a"}


def test_input_texts_field_on_one_side_only():
    """A field missing on one side reads as ""; it is changed only if the other side's value
    is not empty. Several fields are joined with one newline, in name order."""
    # b only in the follow-up, empty → not a change: only a is compared
    assert case_fields.input_texts({"a": "x"}, {"a": "y", "b": ""}) == ("x", "y")
    # b only in the source, empty → not a change
    assert case_fields.input_texts({"a": "x", "b": ""}, {"a": "y"}) == ("x", "y")
    # b added / removed with text: both fields compared, the missing side reads ""
    assert case_fields.input_texts({"a": "x"}, {"a": "y", "b": "z"}) == ("x\n", "y\nz")
    assert case_fields.input_texts({"b": "z", "a": "x"}, {"a": "y"}) == ("x\nz", "y\n")
    # nothing changed: every field, in name order
    assert case_fields.input_texts({"b": "2", "a": "1"}, {"a": "1", "b": "2"}) == ("1\n2", "1\n2")
    # an empty field on one side only, nothing else changed: every field, the missing one ""
    assert case_fields.input_texts({"a": "1", "b": ""}, {"a": "1"}) == ("1\n", "1\n")
    assert case_fields.input_texts({"a": "1"}, {"a": "1", "b": ""}) == ("1\n", "1\n")


def test_severity_proxies_without_stored_details_use_the_similarity():
    """details None (or not an object) → the given similarity of the changed texts, source
    first: "a b" vs "a c": cosine distance 1 − 0.75; Levenshtein 1/3; Jaccard 1 − 1/3;
    length 0. The similarity below knows only that pair, in that order."""
    for details in (None, "not an object", {"input_similarity": "not a number"}):
        case = Case(
            id="c", run_id="r", sample_id="s", relation_id="si.paraphrase", family="si",
            target="text", followup_index=0, repeat_index=0, model="M", task_id="qa",
            verdict="PASS", source_input={"text": "a b", "same": "s"},
            followup_input={"text": "a c", "same": "s"}, details=details,
        )  # fmt: skip
        proxies = severity.severity_proxies(case, lambda a, b: {("a b", "a c"): 0.75}[(a, b)])
        assert asdict(proxies) == {
            "levenshtein": pytest.approx(1 / 3),
            "jaccard": pytest.approx(2 / 3),
            "cosine_distance": 0.25,
            "length_change": 0.0,
        }


@pytest.fixture
def severity_store(store):
    """r1 (M): si.paraphrase "the cat sat" → "the cat sat down" FAIL Δ −.5, answers a → A,
    similarity .5, stored input similarity .75; ad.format (meaning side) "x y" → "x z" PASS, no
    Δ, answers a → b. r2 (N): one PASS, left out by the filter."""
    rows = [
        {"run": "r1", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "delta": -0.5,
         "answers": ("a", "A"), "sim": 0.5, "details": {"input_similarity": 0.75},
         "source_input": {"text": "the cat sat"}, "followup_input": {"text": "the cat sat down"}},
        {"run": "r1", "rel": "ad.format", "side": "meaning", "sample": "s2", "verdict": "PASS",
         "answers": CHANGED, "source_input": {"text": "x y"}, "followup_input": {"text": "x z"}},
        {"run": "r1", "rel": "si.expand", "sample": "s3", "verdict": "SKIP"},
        {"run": "r2", "rel": "si.paraphrase", "sample": "s1", "verdict": "PASS", "delta": 0.0},
    ]  # fmt: skip
    _record(store, {"r1": ("M", "qa", "2026-11-02"), "r2": ("N", "qa", "2026-11-02")}, rows)
    return store


def test_severity_table_every_field(severity_store):
    """ "the cat sat" → "the cat sat down": Levenshtein 5 / 16, Jaccard 1 − 3/4, length 5 / 11,
    cosine 1 − .75; "x y" → "x z": Levenshtein 1/3, Jaccard 1 − 1/3, length 0, no cosine (no
    stored similarity, no embeddings). The SKIP has no follow-up input: not a severity row."""
    rows = severity.severity_table(severity_store, CaseFilter.make(run_ids=["r1"]))
    assert [asdict(row) for row in rows] == [
        {"id": "r1-c000", "model": "M", "relation_id": "si.paraphrase", "side": None,
         "verdict": "FAIL", "abs_delta": 0.5, "answer_changed": False, "output_similarity": 0.5,
         "levenshtein": 0.3125, "jaccard": 0.25, "cosine_distance": 0.25,
         "length_change": pytest.approx(5 / 11)},
        {"id": "r1-c001", "model": "M", "relation_id": "ad.format", "side": "meaning",
         "verdict": "PASS", "abs_delta": None, "answer_changed": True, "output_similarity": None,
         "levenshtein": pytest.approx(1 / 3), "jaccard": pytest.approx(2 / 3),
         "cosine_distance": None, "length_change": 0.0},
    ]  # fmt: skip
    assert [r.id for r in severity.severity_table(severity_store, CaseFilter())] == [
        "r1-c000",
        "r1-c001",
        "r2-c003",
    ]
    assert [r.id for r in severity.severity_table(severity_store, CaseFilter(), limit=1)] == [
        "r1-c000"
    ]
    spy = Spy(severity_store)
    severity.severity_table(spy, CaseFilter())
    # the custom tasks' answer types are read for answer_changed
    assert spy.calls == [("severity_rows", {"limit": 2000}), ("custom_task_rows", {})]


def test_drilldown_filter_and_limit(severity_store):
    """FAILs first; the filter and the limit are the caller's; 500 cases at most by default."""
    rows = severity.drilldown(severity_store, CaseFilter.make(run_ids=["r1"]))
    assert [(r.case.id, r.case.verdict) for r in rows] == [
        ("r1-c000", "FAIL"),
        ("r1-c002", "SKIP"),
        ("r1-c001", "PASS"),
    ]
    assert rows[0].proxies.levenshtein == 0.3125 and rows[0].answer_changed is False
    assert rows[2].answer_changed is True
    assert len(severity.drilldown(severity_store, CaseFilter())) == 4
    assert [r.case.id for r in severity.drilldown(severity_store, CaseFilter(), limit=2)] == [
        "r1-c000",
        "r1-c002",
    ]
    spy = Spy(severity_store)
    severity.drilldown(spy, CaseFilter(), model="M")
    assert spy.calls == [
        ("cell_cases", {"model": "M", "relation_id": None, "verdicts": None, "limit": 500}),
        ("custom_task_rows", {}),
    ]


# ------------------------------------------------------------------ comparing two runs


@pytest.fixture
def compare_store(store):
    """ra: si.paraphrase s1 FAIL Δ −.5 sim .5, s2 PASS Δ .25 sim 1; si.expand s1 PASS Δ 0
    sim .75. rb: si.paraphrase s1 FAIL Δ −.25 sim .25, s2 FAIL (no Δ), s3 SKIP;
    si.reorder_facts s1 PASS. rc (a third run, never compared): si.paraphrase s1 PASS."""
    rows = [
        {"run": "ra", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "delta": -0.5,
         "sim": 0.5},
        {"run": "ra", "rel": "si.paraphrase", "sample": "s2", "verdict": "PASS", "delta": 0.25,
         "sim": 1.0},
        {"run": "ra", "rel": "si.expand", "sample": "s1", "verdict": "PASS", "delta": 0.0,
         "sim": 0.75},
        {"run": "rb", "rel": "si.paraphrase", "sample": "s1", "verdict": "FAIL", "delta": -0.25,
         "sim": 0.25},
        {"run": "rb", "rel": "si.paraphrase", "sample": "s2", "verdict": "FAIL"},
        {"run": "rb", "rel": "si.paraphrase", "sample": "s3", "verdict": "SKIP"},
        {"run": "rb", "rel": "si.reorder_facts", "sample": "s1", "verdict": "PASS"},
        {"run": "rc", "rel": "si.paraphrase", "sample": "s1", "verdict": "PASS", "delta": 0.0},
    ]  # fmt: skip
    runs = {run: ("M", "qa", "2026-11-02") for run in ("ra", "rb", "rc")}
    _record(store, runs, rows)
    return store


def test_compare_runs_every_field(compare_store):
    """A relation of one run only gets n 0 and no rates on the other side, and no change.
    paraphrase: A 1 of 2 failed, cells −.5 and .25 → −.125, similarity (.5 + 1) / 2; B 2 of 2
    failed (the SKIP not judged), one cell −.25, similarity .25; change 1 − .5."""
    assert metrics.compare_runs(compare_store, "ra", "rb") == [
        {"relation_id": "si.expand", "a_n": 1, "a_violation_rate": 0.0, "a_mean_delta": 0.0,
         "a_mean_similarity": 0.75, "b_n": 0, "b_violation_rate": None, "b_mean_delta": None,
         "b_mean_similarity": None, "violation_rate_change": None},
        {"relation_id": "si.paraphrase", "a_n": 2, "a_violation_rate": 0.5,
         "a_mean_delta": -0.125, "a_mean_similarity": 0.75, "b_n": 3, "b_violation_rate": 1.0,
         "b_mean_delta": -0.25, "b_mean_similarity": 0.25, "violation_rate_change": 0.5},
        {"relation_id": "si.reorder_facts", "a_n": 0, "a_violation_rate": None,
         "a_mean_delta": None, "a_mean_similarity": None, "b_n": 1, "b_violation_rate": 0.0,
         "b_mean_delta": None, "b_mean_similarity": None, "violation_rate_change": None},
    ]  # fmt: skip


def test_compare_runs_refuses_one_run_with_itself(compare_store):
    with pytest.raises(ValueError, match=r"^pick two different runs to compare$"):
        metrics.compare_runs(compare_store, "ra", "ra")


def test_summarize_counts_the_filtered_cases(summary_store):
    """``n_cases`` is every case the filter keeps, whatever its verdict: ROWS holds 9 cases of
    r1, 6 of r2, 2 of r3 and 1 of r4; ONLY leaves r2 out → 9 + 2 + 1 = 12 (all 18 unfiltered)."""
    assert metrics.summarize(summary_store, ONLY)["n_cases"] == 12
    assert metrics.summarize(summary_store, CaseFilter())["n_cases"] == 18
