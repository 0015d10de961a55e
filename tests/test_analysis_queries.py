"""SQL aggregation verbs (storage/analysis_verbs.py) on a small hand-built dataset.

The dataset (``seed_dataset``) is shared with test_metrics / test_stats / test_reports and the
Analysis page test; every expected number below is worked out by hand in the comments.
"""

from __future__ import annotations

from collections import Counter

import pytest

from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Sample
from storage.answer_verbs import SameAnswers
from storage.case_filter import case_where
from storage.run_verbs import RunDefinition

PROBLEMS = {
    "s1": ("A ball falls for 2 s. How far does it fall?", {"category": "physics", "level": 1}),
    "s2": ("A car drives 60 km in 1 h. Speed?", {"category": "physics", "difficulty": "easy"}),
    "s3": ("What is the capital of France?", {"category": "geography", "difficulty": "hard"}),
    "s4": ("Add 3 and 4.", {}),
    "s5": ("Multiply 6 by 7.", {}),
    "s6": ("Name a prime number.", {}),
}
SAMPLES = {
    name: Sample(fields={"problem": text}, reference=f"ref {name}", meta=meta)
    for name, (text, meta) in PROBLEMS.items()
}

# (model, relation, side, sample, repeat, followup_index, verdict, reason, delta, similarity,
#  source_answer, followup_answer)
ROWS: list[tuple] = [
    # model A, si.identity on s1 (4 repeats): 3 PASS 1 FAIL → noise floor 1/4; cell Δ = 0.01
    ("A", "si.identity", None, "s1", 0, 0, "PASS", "same", 0.02, 0.99, "4", "4"),
    ("A", "si.identity", None, "s1", 1, 0, "PASS", "same", -0.02, 0.98, "4", "4"),
    ("A", "si.identity", None, "s1", 2, 0, "PASS", "same", 0.0, 0.97, "4", "4"),
    ("A", "si.identity", None, "s1", 3, 0, "FAIL", "differs", 0.04, 0.60, "4", "5"),
    # model A, si.paraphrase: cells s1 (−0.1 = mean of 0.1, −0.3), s2 (−0.2), s3 (0.03)
    ("A", "si.paraphrase", None, "s1", 0, 0, "PASS", "same", 0.1, 0.9, "4", "4"),
    ("A", "si.paraphrase", None, "s1", 1, 0, "FAIL", "differs", -0.3, 0.5, "4", "5"),
    ("A", "si.paraphrase", None, "s2", 0, 0, "FAIL", "differs", -0.2, 0.7, "7", None),
    ("A", "si.paraphrase", None, "s3", 0, 0, "PASS", "same", 0.03, 0.95, "3", "3"),
    ("A", "si.paraphrase", None, "s4", 0, 0, "SKIP", "invalid_followup: dropped 7", *[None] * 4),
    ("A", "si.paraphrase", None, "s5", 0, 0, "ERROR", "call failed", *[None] * 4),
    ("A", "si.paraphrase", None, "s6", 0, 0, "SKIP", "precondition: one sentence", *[None] * 4),
    # model A, AgentDiff: per original meaning − presentation inconsistency
    # s1: meaning 1/2 changed, presentation 0/1 → +0.5; s2: 1/1 vs 2/2 → 0; s3: meaning only.
    ("A", "ad.paraphrase", "meaning", "s1", 0, 0, "FAIL", "differs", None, None, "4", "5"),
    ("A", "ad.paraphrase", "meaning", "s1", 0, 1, "PASS", "same", None, None, "4", "4"),
    ("A", "ad.paraphrase", "meaning", "s2", 0, 0, "FAIL", "differs", None, None, "x", "y"),
    ("A", "ad.paraphrase", "meaning", "s3", 0, 0, "PASS", "same", None, None, "Paris", "paris"),
    ("A", "ad.format", "presentation", "s1", 0, 0, "PASS", "same", None, None, "4", "4"),
    ("A", "ad.format", "presentation", "s2", 0, 0, "FAIL", "differs", None, None, "x", "z"),
    ("A", "ad.format", "presentation", "s2", 0, 1, "FAIL", "differs", None, None, "x", "w"),
    # model B (second run): no identity; si.paraphrase cells 0.01, −0.01, −0.5
    ("B", "si.paraphrase", None, "s1", 0, 0, "PASS", "same", 0.01, 0.9, "4", "4"),
    ("B", "si.paraphrase", None, "s2", 0, 0, "PASS", "same", -0.01, 0.8, "7", "7"),
    ("B", "si.paraphrase", None, "s3", 0, 0, "FAIL", "differs", -0.5, 0.3, "3", "9"),
]
RUN_OF = {"A": "run-a", "B": "run-b"}


def seed_cases() -> list[Case]:
    """The rows above as recorded cases."""
    out = []
    for i, row in enumerate(ROWS):
        (model, relation_id, side, sample, repeat, followup, verdict, reason, delta, similarity,
         source_answer, followup_answer) = row  # fmt: skip
        text = SAMPLES[sample].fields["problem"]
        scored = verdict in ("PASS", "FAIL")
        out.append(
            Case.from_row(
                {
                    "id": f"case-{i:03d}",
                    "run_id": RUN_OF[model],
                    "sample_id": SAMPLES[sample].id,
                    "relation_id": relation_id,
                    "family": relation_id.split(".")[0],
                    "side": side,
                    "target": "problem",
                    "followup_index": followup,
                    "repeat_index": repeat,
                    "model": model,
                    "task_id": "reasoning",
                    "source_input": {"problem": text},
                    "followup_input": {"problem": text + " Please answer."} if scored else None,
                    "source_prompt": f"Solve: {text}",
                    "followup_prompt": f"Solve: {text} Please answer." if scored else None,
                    "source_output": f"Answer: {source_answer}" if source_answer else None,
                    "followup_output": f"Answer: {followup_answer}" if followup_answer else None,
                    "source_answer": source_answer,
                    "followup_answer": followup_answer,
                    "verdict": verdict,
                    "oracle": "equal_label",
                    "value": 1.0 if verdict == "PASS" else 0.0 if verdict == "FAIL" else None,
                    "reason": reason,
                    "details": {"input_similarity": 0.75} if i == 4 else {},
                    "score_source": 0.5 if delta is not None else None,
                    "score_followup": 0.5 + delta if delta is not None else None,
                    "delta": delta,
                    "output_similarity": similarity,
                    "created_at": "2026-11-02T10:00:00+00:00",
                }
            )
        )
    return out


RUN_STARTED = {"run-a": "2026-11-02T09:00:00+00:00", "run-b": "2026-11-05T09:00:00+00:00"}


def seed_dataset(store) -> None:
    """Two runs (model A on 2026-11-02, model B on 2026-11-05) with the cases above."""
    for model, run_id in RUN_OF.items():
        store.save_run(
            RunDefinition(
                run_id,
                endpoint=Endpoint(
                    name=f"ep-{model}", base_url="http://127.0.0.1:9/v1", model=model
                ),
                task_id="reasoning",
                config={"relations": ["si.paraphrase"]},
                samples=list(SAMPLES.values()),
            ),
            created_at=RUN_STARTED[run_id],
        )
        store.finish_run(run_id, "done")
    store.record_cases(seed_cases())


@pytest.fixture
def seeded(store):
    seed_dataset(store)
    return store


def by_key(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_verdict_counts_per_model_relation(seeded):
    rows = by_key(seeded.verdict_counts(CaseFilter()), "model", "relation_id")
    para = rows[("A", "si.paraphrase")]
    assert (para["n"], para["n_pass"], para["n_fail"], para["n_skip"], para["n_error"]) == (
        7,
        2,
        2,
        2,
        1,
    )
    assert para["n_invalid_followup"] == 1  # only the "invalid_followup: …" SKIP
    # answers: s1r0 same, s1r1 changed, s2 has no follow-up answer, s3 same → 3 answered
    assert para["n_answered"] == 3
    assert para["n_similarity"] == 4
    assert para["sum_similarity"] == pytest.approx(0.9 + 0.5 + 0.7 + 0.95)
    identity = rows[("A", "si.identity")]
    assert (identity["n_pass"], identity["n_fail"]) == (3, 1)
    assert "n_changed" not in para  # counted only given the pairs that are one answer

    assert set(rows) == {
        ("A", "si.identity"),
        ("A", "si.paraphrase"),
        ("A", "ad.paraphrase"),
        ("A", "ad.format"),
        ("B", "si.paraphrase"),
    }


def test_differing_answer_pairs_are_distinct_and_judged_only(seeded):
    """Judged cases whose answers differ as strings, once per (task, pair): 4 → 5 occurs three
    times (A identity r3, A paraphrase s1 r1, A ad.paraphrase s1) and is listed once; the
    paraphrase with no follow-up answer (A s2) is not a pair."""
    assert sorted(seeded.differing_answer_pairs()) == [
        ("reasoning", "3", "9"),
        ("reasoning", "4", "5"),
        ("reasoning", "Paris", "paris"),
        ("reasoning", "x", "w"),
        ("reasoning", "x", "y"),
        ("reasoning", "x", "z"),
    ]


def test_n_changed_counts_differing_answers_less_the_same_answers(seeded):
    """ad.format of A: x → z and x → w both differ (2 changed); told that (x, z) is one answer,
    1 is left. A's si.paraphrase: only s1 r1 (4 → 5) differs."""
    plain = by_key(
        seeded.verdict_counts(CaseFilter(), same_answers=SameAnswers()), "model", "relation_id"
    )
    assert plain[("A", "ad.format")]["n_changed"] == 2
    assert plain[("A", "si.paraphrase")]["n_changed"] == 1
    assert list(plain[("A", "ad.format")])[-1] == "n_changed"  # pooled after the counts
    same = SameAnswers(frozenset({("reasoning", "x", "z")}))
    told = by_key(seeded.verdict_counts(CaseFilter(), same_answers=same), "model", "relation_id")
    assert told[("A", "ad.format")]["n_changed"] == 1
    assert told[("A", "si.paraphrase")]["n_changed"] == 1
    # A pair of another task, or whose parts only concatenate alike, is another pair.
    for other in (("qa", "x", "z"), ("reasoning", "xz", ""), ("reasoning", "", "xz")):
        rows = seeded.verdict_counts(CaseFilter(), same_answers=SameAnswers(frozenset({other})))
        assert by_key(rows, "model", "relation_id")[("A", "ad.format")]["n_changed"] == 2


def test_noise_floor_and_breakdown_count_changed_answers(seeded):
    """The floor of A counts identity r3 (4 → 5) as its one change of 4 observations; the
    physics breakdown of A (s1, s2) has 4 → 5 three times, x → y, x → z, x → w: 6 changed, or
    3 when 4 → 5 is declared one answer."""
    (floor,) = seeded.noise_floor_counts(CaseFilter(), ["si.identity"], same_answers=SameAnswers())
    assert (floor["n"], floor["n_changed"]) == (4, 1)
    same = SameAnswers(frozenset({("reasoning", "4", "5")}))
    for answers, changed in ((SameAnswers(), 6), (same, 3)):
        rows = seeded.meta_breakdown("category", CaseFilter(), same_answers=answers)
        assert by_key(rows, "model", "value")[("A", "physics")]["n_changed"] == changed


SI_PAPER = ("si.identity", "si.paraphrase")  # the SI transformations the seed data uses


def test_cell_stats_mean_delta_per_cell_mad_and_stability_per_observation(seeded):
    """Mean Δ averages repeats per cell; MAD and stability count each observation (SI paper §3.1,
    eq. 6: |Δ_τ(p)| per inference — repeats are not averaged before the absolute value)."""
    rows = by_key(seeded.cell_stats(CaseFilter(), paper=SI_PAPER), "model", "relation_id")
    para = rows[("A", "si.paraphrase")]
    # cells: s1 = (0.1 − 0.3)/2 = −0.1, s2 = −0.2, s3 = 0.03
    assert para["n_cells"] == 3
    assert para["mean_delta"] == pytest.approx((-0.1 - 0.2 + 0.03) / 3)
    # observations: |0.1|, |−0.3|, |−0.2|, |0.03| → 0.63 / 4 (the old cell mean gave 0.11)
    assert para["n_observations"] == 4
    assert para["mean_abs_delta"] == pytest.approx(0.63 / 4)
    assert para["mad"] == pytest.approx(0.63 / 4)
    assert para["stability"] == pytest.approx(1 / 4)
    identity = rows[("A", "si.identity")]
    assert identity["n_cells"] == 1 and identity["n_observations"] == 4
    assert identity["mean_delta"] == pytest.approx(0.01)
    assert identity["mad"] is None  # MAD leaves identity out
    assert identity["stability"] == 1.0
    per_model = by_key(seeded.cell_stats(CaseFilter(), by=("model",), paper=SI_PAPER), "model")
    assert per_model[("A",)]["mad"] == pytest.approx(0.63 / 4)
    assert per_model[("A",)]["stability"] == pytest.approx(5 / 8)  # 4 identity + 1 of 4
    assert per_model[("A",)]["stability_excl_identity"] == pytest.approx(1 / 4)
    assert per_model[("B",)]["mad"] == pytest.approx((0.01 + 0.01 + 0.5) / 3)


def test_cell_stats_count_only_the_paper_relations_in_mad_and_stability(seeded):
    """SI §3.1 / Table 3: MAD and stability are over the paper's transformations only; a relation
    outside ``paper`` keeps its mean Δ and mean |Δ| but enters neither."""
    rows = by_key(seeded.cell_stats(CaseFilter(), paper=["si.identity"]), "model", "relation_id")
    para = rows[("A", "si.paraphrase")]
    assert para["mean_delta"] == pytest.approx((-0.1 - 0.2 + 0.03) / 3)  # Δ itself still shown
    assert para["mean_abs_delta"] == pytest.approx(0.63 / 4)
    assert para["mad"] is None and para["stability"] is None and para["n_paper"] == 0
    per_model = by_key(
        seeded.cell_stats(CaseFilter(), by=("model",), paper=["si.identity"]), "model"
    )
    assert per_model[("A",)]["stability"] == 1.0  # identity's 4 observations only
    assert per_model[("A",)]["mad"] is None
    # the wider stability over the invariance relations named: 4 identity + 1 of 4 paraphrases
    wide = seeded.cell_stats(CaseFilter(), by=("model",), invariance=SI_PAPER)
    assert by_key(wide, "model")[("A",)]["invariance_stability"] == pytest.approx(5 / 8)


def test_side_gap_per_relation_over_its_originals(seeded):
    """AgentDiff §3.2: IR per operator over its originals; gap = mean IR(meaning) − mean IR(pres.).

    ad.paraphrase: s1 1/2, s2 1/1, s3 0/1 → IR (0.5 + 1 + 0) / 3 = 0.5; ad.format: s1 0/1,
    s2 2/2 → IR 0.5; gap 0. s3 (meaning only) still counts toward ad.paraphrase.
    """
    rows = by_key(seeded.side_gap(CaseFilter()), "model")
    gap = rows[("A",)]
    assert (gap["n_originals"], gap["n_cells"]) == (3, 1)
    assert gap["gap"] == pytest.approx(0.0)
    assert gap["sd_gap"] is None  # one (model, task) cell
    assert gap["meaning_rate"] == pytest.approx(0.5)
    assert gap["presentation_rate"] == pytest.approx(0.5)
    assert (gap["n_meaning"], gap["n_presentation"]) == (4, 3)
    assert ("B",) not in rows


def test_meta_breakdown_by_category(seeded):
    rows = by_key(seeded.meta_breakdown("category", CaseFilter()), "model", "value")
    physics = rows[("A", "physics")]  # every case of model A on s1 and s2
    expected = Counter(r[6] for r in ROWS if r[0] == "A" and r[3] in ("s1", "s2"))
    assert (physics["n_pass"], physics["n_fail"]) == (expected["PASS"], expected["FAIL"])
    assert physics["n_samples"] == 2
    assert rows[("A", "geography")]["n"] == 2
    assert rows[("A", None)]["n"] == 3  # s4–s6 have no category
    assert rows[("B", "physics")]["n_pass"] == 2
    with pytest.raises(ValueError):
        seeded.meta_breakdown("category'; DROP TABLE cases; --", CaseFilter())


def test_meta_keys(seeded):
    assert seeded.meta_keys()[:1] == ["category"]
    assert set(seeded.meta_keys()) == {"category", "difficulty", "level"}


def test_filters_runs_models_relations_dates(seeded):
    assert seeded.count_cases(CaseFilter()) == len(ROWS)
    assert seeded.count_cases(CaseFilter.make(run_ids=["run-b"])) == 3
    assert seeded.count_cases(CaseFilter.make(models=["A"], relations=["si.identity"])) == 4
    assert seeded.count_cases(CaseFilter.make(tasks=["math"])) == 0
    assert seeded.count_cases(CaseFilter.make(models=[])) == 0
    # dates are on the run's start (run-a 2026-11-02, run-b 2026-11-05), inclusive
    assert seeded.count_cases(CaseFilter.make(date_from="2026-11-03")) == 3
    assert seeded.count_cases(CaseFilter.make(date_to="2026-11-02")) == len(ROWS) - 3
    assert seeded.count_cases(CaseFilter.make(date_from="2026-11-02", date_to="2026-11-05")) == 21
    with pytest.raises(ValueError, match="not a date"):
        case_where(CaseFilter.make(date_from="yesterday"))


def test_cell_cases_fail_first(seeded):
    rows = seeded.cell_cases(CaseFilter(), model="A", relation_id="si.paraphrase")
    assert [r.verdict for r in rows] == ["FAIL", "FAIL", "ERROR", "SKIP", "SKIP", "PASS", "PASS"]
    only_fail = seeded.cell_cases(
        CaseFilter.make(run_ids=["run-a"]),
        model="A",
        relation_id="si.paraphrase",
        verdicts=["FAIL"],
    )
    assert {r.id for r in only_fail} == {"case-005", "case-006"}
    assert (
        seeded.cell_cases(CaseFilter(), model="A", relation_id="si.paraphrase", verdicts=[]) == []
    )


def test_value_sample_stride(seeded):
    values, stride = seeded.value_sample(CaseFilter(), column="delta")
    assert stride == 1
    assert len(values) == sum(1 for r in ROWS if r[8] is not None)
    few, stride = seeded.value_sample(CaseFilter(), column="delta", max_rows=5)
    assert stride == 3  # 14 values / 5 → every 3rd rowid
    assert 0 < len(few) <= 5
    with pytest.raises(ValueError):
        seeded.value_sample(CaseFilter(), column="reason")


def test_filter_options(seeded):
    options = seeded.filter_options()
    assert options["models"] == ["A", "B"]
    assert options["relations"] == ["ad.format", "ad.paraphrase", "si.identity", "si.paraphrase"]
    assert options["tasks"] == ["reasoning"]
    assert [r["id"] for r in options["runs"]] == ["run-b", "run-a"]
    assert (options["date_min"], options["date_max"]) == ("2026-11-02", "2026-11-05")


def test_iter_cases_streams_everything(seeded):
    rows = list(seeded.iter_cases(CaseFilter.make(models=["B"]), batch=2))
    assert sorted(r["id"] for r in rows) == ["case-018", "case-019", "case-020"]
    assert [r["sample_id"] for r in rows] == sorted(r["sample_id"] for r in rows)


def test_group_columns_are_validated(seeded):
    with pytest.raises(ValueError):
        seeded.verdict_counts(CaseFilter(), by=("model; DROP TABLE cases",))
    with pytest.raises(ValueError):
        seeded.cell_stats(CaseFilter(), by=("side",))


def test_aggregations_use_the_covering_index(seeded):
    """Regression for the 500k-case bench: the group-bys must not read the wide case rows."""
    for sql in (
        "SELECT model, relation_id, count(*), sum(verdict = 'PASS'), total(output_similarity), "
        "total(source_answer <> followup_answer COLLATE NOCASE) FROM cases "
        "GROUP BY model, relation_id",
        "SELECT model, relation_id, task_id, sample_id, avg(delta) FROM cases "
        "WHERE delta IS NOT NULL GROUP BY model, relation_id, task_id, sample_id",
    ):
        plan = " ".join(str(row) for row in seeded._db.execute("EXPLAIN QUERY PLAN " + sql))
        assert "COVERING INDEX idx_cases_analysis" in plan, plan
