"""Inconsistency is answer equivalence, not string equality (issue 23, item 5).

AgentDiff §3.2 calls an answer inconsistent when the variant's answer is not the original's; the
SI paper (§3.1) scores answers through their meaning, not their spelling. "5.4 km" and "5.4" are
one answer. The rule is the oracles' (``relations.oracles.answers_equivalent``), and the
inconsistency rates (per model × relation, per model, the noise floor's, the metadata breakdown)
and severity's ``answer_changed`` all call it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.analysis import metrics, severity
from app.analysis.aggregates import fetch_aggregates
from app.analysis.consistency import answer_types, same_answers
from core.answers import AnswerType
from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Sample, Verdict
from relations.oracles import answers_equivalent
from storage.run_verbs import RunDefinition


@pytest.mark.parametrize(
    ("answer_type", "a", "b", "same"),
    [
        (AnswerType.REASONING, "5.4 km", "5.4", True),  # math-verify drops the unit
        (AnswerType.REASONING, "\\frac{1}{2}", "0.5", True),
        (AnswerType.REASONING, "12", "12.0", True),  # plain numbers, relative ε 1e-6
        (AnswerType.REASONING, "4", "5", False),
        (AnswerType.MATH, "x^2", "x*x", True),
        (AnswerType.LABEL, "Positive", " positive", True),
        (AnswerType.LABEL, "positive", "negative", False),
        (AnswerType.SCORE, "0.8", "0.85", True),  # |Δ| 0.05 ≤ ε 0.1
        (AnswerType.SCORE, "0.8", "0.95", False),  # |Δ| 0.15 > ε 0.1
        (AnswerType.NUMBER, "1,000", "1000", True),
        (AnswerType.TEXT, "The Eiffel Tower.", "eiffel tower", True),  # normalise_text
        (AnswerType.TEXT, "Paris", "Lyon", False),
    ],
)
def test_answers_equivalent_per_answer_type(answer_type, a, b, same):
    assert answers_equivalent(answer_type, a, b) is same


SAMPLES = [
    Sample(fields={"problem": f"How far, case {i}?"}, meta={"level": i % 2}) for i in range(6)
]
# (source answer, follow-up answer, verdict) of si.identity on six problems: one real change
# (4 → 5, the FAIL), three changes of notation only, two identical answers.
IDENTITY = [
    ("5.4 km", "5.4", Verdict.PASS),
    ("1/2", "0.5", Verdict.PASS),
    ("12", "12.0", Verdict.PASS),
    ("4", "5", Verdict.FAIL),
    ("7", "7", Verdict.PASS),
    ("3", "3", Verdict.PASS),
]


@pytest.fixture
def identity_store(store):
    store.save_run(
        RunDefinition(
            "run",
            endpoint=Endpoint(name="ep", base_url="http://127.0.0.1:9/v1", model="m"),
            task_id="reasoning",
            config={},
            samples=SAMPLES,
        )
    )
    cases = []
    for i, ((a, b, verdict), sample) in enumerate(zip(IDENTITY, SAMPLES, strict=True)):
        for target_index, target in enumerate(("problem", "context")):
            # A second field target re-sends the unchanged input: one re-sample, which the noise
            # floor counts once; its answer differs as text only on the first problem.
            followup = b if target_index == 0 else ("5.40 km" if i == 0 else b)
            cases.append(
                Case(
                    id=f"c{i}-{target}",
                    run_id="run",
                    sample_id=sample.id,
                    relation_id="si.identity",
                    family="si",
                    target=target,
                    followup_index=target_index,
                    repeat_index=0,
                    model="m",
                    task_id="reasoning",
                    source_input=dict(sample.fields),
                    followup_input=dict(sample.fields),
                    source_answer=a,
                    followup_answer=followup,
                    verdict=verdict,
                )
            )
    store.record_cases(cases)
    return store


def test_inconsistency_counts_changed_answers_not_changed_strings(identity_store):
    """Issue 23 item 5. Per model × relation: 12 judged cases (6 problems × 2 targets), changed
    answers 2 (4 → 5 on both targets) → 2/12 = 1/6, the same as the violation rate 2 FAIL / 12.
    Strings would say 8 of 12 changed (5.4 km/5.4, 5.4 km/5.40 km, 1/2/0.5 ×2, 12/12.0 ×2,
    4/5 ×2) = 0.667."""
    found = fetch_aggregates(identity_store, CaseFilter())
    (row,) = metrics.model_relation_rows(found)
    assert (row["n_answered"], row["inconsistency_rate"]) == (12, pytest.approx(2 / 12))
    assert row["violation_rate"] == pytest.approx(2 / 12)
    # The noise floor: one observation per sample × repeat (the first target), 1 changed of 6.
    floor = found.floors["m"]["reasoning"]
    assert (floor["n"], floor["n_answered"]) == (6, 6)
    assert floor["inconsistency_rate"] == pytest.approx(1 / 6)


def test_breakdown_inconsistency_uses_equivalence_too(identity_store):
    """Level 0 = problems 0, 2, 4 (5.4 km, 12, 7): no change of 6 cases; level 1 = problems
    1, 3, 5 (1/2, 4 → 5, 3): 2 changed of 6."""
    rows = {r["level"]: r for r in metrics.breakdown(identity_store, "level", CaseFilter())}
    assert rows[0]["inconsistency_rate"] == 0.0
    assert rows[1]["inconsistency_rate"] == pytest.approx(2 / 6)


def test_severity_answer_changed_uses_equivalence(identity_store):
    """The drill-down and the severity scatter say 'changed' for the two 4 → 5 cases only."""
    rows = severity.drilldown(identity_store, CaseFilter())
    changed = sorted(r.case.id for r in rows if r.answer_changed)
    assert changed == ["c3-context", "c3-problem"]
    table = severity.severity_table(identity_store, CaseFilter())
    assert sorted(r.id for r in table if r.answer_changed) == changed


def test_same_answers_judges_each_pair_once_per_data_version(identity_store, monkeypatch):
    """The notation-only pairs are the same answers (4 → 5 is a change); they are read and
    judged once while the database is unchanged, and again after a write adds a case."""
    types = answer_types(identity_store)
    reads = []
    real = identity_store.differing_answer_pairs

    def counted():
        reads.append(1)
        return real()

    monkeypatch.setattr(identity_store, "differing_answer_pairs", counted)
    same = same_answers(identity_store, types)
    assert same.pairs == {
        ("reasoning", "5.4 km", "5.4"),
        ("reasoning", "5.4 km", "5.40 km"),
        ("reasoning", "1/2", "0.5"),
        ("reasoning", "12", "12.0"),
    }
    assert same_answers(identity_store, types) is same
    assert len(reads) == 1
    (case, *_) = identity_store.severity_rows(CaseFilter())
    identity_store.record_cases([replace(case, id="c-new", followup_answer="5.4 kilometres")])
    assert same_answers(identity_store, types) is not same
    assert len(reads) == 2
