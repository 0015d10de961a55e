"""Store label verbs: append-only labels, undo, the queue, progress and false-positive counts
(the rates built on them are app.analysis.triage.false_positives')."""

from __future__ import annotations

import pytest

from app.analysis.proportions import wilson_interval
from app.analysis.triage.false_positives import false_positive_rates
from core.case_filter import CaseFilter
from storage import Store
from tests.triage_data import make_case, save_runs


@pytest.fixture
def store() -> Store:
    store = Store(":memory:")
    save_runs(
        store,
        [
            make_case("a1", index=1),
            make_case("a2", index=2),
            make_case("a3", index=3, relation_id="word.synonym"),
            make_case("a4", index=4, verdict="PASS", value=0.9),
            make_case("b1", index=1, run_id="run-b", model="model-b", task_id="nli"),
            make_case("b2", index=2, run_id="run-b", model="model-b", task_id="nli"),
            make_case(
                "b3", index=3, run_id="run-b", model="model-b", task_id="nli", verdict="SKIP"
            ),
        ],
    )
    return store


def labels_of(case_id: str, store: Store) -> dict[str, str]:
    """The case's current label of each labeler."""
    rows = store.current_labels(per_labeler=True, case_ids=[case_id])
    return {row["labeler"]: row["label"] for row in rows}


def test_add_label_appends_and_validates(store: Store) -> None:
    first = store.add_label("a1", "confirmed", " looks real ", "ann")
    second = store.add_label("a1", "fp_oracle", "", "ann")
    assert second > first
    history = store.label_history("a1")
    assert [(row["label"], row["note"], row["labeler"]) for row in history] == [
        ("confirmed", "looks real", "ann"),
        ("fp_oracle", "", "ann"),
    ]
    assert [row["label"] for row in store.current_labels(case_ids=["a1"])] == ["fp_oracle"]
    with pytest.raises(ValueError, match="unknown label 'wrong'"):
        store.add_label("a1", "wrong", "", "ann")
    with pytest.raises(ValueError, match="unknown label 'retracted'"):
        store.add_label("a1", "retracted", "", "ann")
    with pytest.raises(ValueError, match="unknown case 'nope'"):
        store.add_label("nope", "confirmed", "", "ann")
    with pytest.raises(ValueError, match="only FAILs are labeled"):
        store.add_label("a4", "confirmed", "", "ann")
    assert store._query("SELECT count(*) AS n FROM labels")[0]["n"] == 2


def test_undo_is_a_stack_and_keeps_history(store: Store) -> None:
    store.add_label("a1", "confirmed", "", "ann")
    store.add_label("a1", "fp_oracle", "", "ann")
    store.add_label("a1", "unsure", "", "bob")

    undone = store.undo_label("a1", "ann")
    assert undone is not None and undone["label"] == "fp_oracle"
    assert labels_of("a1", store) == {"ann": "confirmed", "bob": "unsure"}  # bob's is untouched

    store.undo_label("a1", "ann")
    assert labels_of("a1", store) == {"bob": "unsure"}
    assert store.undo_label("a1", "ann") is None  # nothing left to undo: nothing appended

    history = store.label_history("a1")
    assert [row["label"] for row in history] == [
        "confirmed",
        "fp_oracle",
        "unsure",
        "retracted",
        "retracted",
    ]
    assert [row["cancelled"] for row in history] == [True, True, False, False, False]
    assert history[3]["retracts"] == history[1]["id"]
    assert history[4]["retracts"] == history[0]["id"]

    # A new label after the undos is the current one again.
    store.add_label("a1", "fp_invalid_followup", "", "ann")
    assert labels_of("a1", store)["ann"] == "fp_invalid_followup"


def test_current_labels_latest_over_labelers_and_per_labeler(store: Store) -> None:
    store.add_label("a1", "confirmed", "", "ann")
    store.add_label("a1", "fp_oracle", "", "bob")
    store.add_label("a2", "unsure", "", "bob")
    per_case = {row["case_id"]: row["label"] for row in store.current_labels()}
    assert per_case == {"a1": "fp_oracle", "a2": "unsure"}
    per_labeler = {
        (row["case_id"], row["labeler"]): row["label"]
        for row in store.current_labels(per_labeler=True)
    }
    assert per_labeler == {
        ("a1", "ann"): "confirmed",
        ("a1", "bob"): "fp_oracle",
        ("a2", "bob"): "unsure",
    }
    assert [row["case_id"] for row in store.current_labels("ann")] == ["a1"]
    assert store.current_labels(run_ids=["run-b"]) == []
    store.undo_label("a1", "bob")
    # bob's undo reveals ann's label
    assert [row["label"] for row in store.current_labels(case_ids=["a1"])] == ["confirmed"]
    assert store.labelers() == ["ann", "bob"]


def test_triage_queue_filters_and_order(store: Store) -> None:
    assert store.triage_queue() == ["a1", "a2", "a3", "b1", "b2"]  # FAILs only, stable order
    assert store.triage_queue(run_ids=["run-b"]) == ["b1", "b2"]
    assert store.triage_queue(models=["model-a"]) == ["a1", "a2", "a3"]
    assert store.triage_queue(tasks=["nli"]) == ["b1", "b2"]
    assert store.triage_queue(relation_ids=["word.synonym"]) == ["a3"]
    assert store.triage_queue(relation_ids=[]) == []  # an empty selection selects nothing

    store.add_label("a1", "confirmed", "", "ann")
    store.add_label("a2", "confirmed", "", "bob")
    assert store.triage_queue(unlabeled_only=True) == ["a3", "b1", "b2"]
    assert store.triage_queue(unlabeled_only=True, labeler="ann") == ["a2", "a3", "b1", "b2"]
    assert store.triage_queue(labeled_by="bob") == ["a2"]
    store.undo_label("a1", "ann")
    assert store.triage_queue(unlabeled_only=True) == ["a1", "a3", "b1", "b2"]


def test_label_progress_per_relation(store: Store) -> None:
    store.add_label("a1", "confirmed", "", "ann")
    store.add_label("a2", "fp_oracle", "", "ann")
    store.add_label("b1", "unsure", "", "bob")
    progress = store.label_progress()
    assert (progress["total"], progress["labeled"]) == (5, 3)
    by_relation = {row["relation_id"]: row for row in progress["by_relation"]}
    paraphrase = by_relation["si.paraphrase"]
    assert (paraphrase["total"], paraphrase["labeled"]) == (4, 3)
    assert (paraphrase["confirmed"], paraphrase["fp_oracle"], paraphrase["unsure"]) == (1, 1, 1)
    assert (by_relation["word.synonym"]["total"], by_relation["word.synonym"]["labeled"]) == (1, 0)
    assert store.label_progress(labeler="bob")["labeled"] == 1
    assert store.label_progress(run_ids=["run-b"])["total"] == 2


def test_wilson_interval_matches_hand_computation() -> None:
    low, high = wilson_interval(1, 4)
    assert low == pytest.approx(0.04558, abs=1e-4)
    assert high == pytest.approx(0.69936, abs=1e-4)
    assert wilson_interval(0, 0) == (None, None)
    low, high = wilson_interval(5, 5)
    assert high == 1.0 and low == pytest.approx(0.56551, abs=1e-4)


def test_false_positive_rates_and_confirmed_violation_rate() -> None:
    store = Store(":memory:")
    cases = [make_case(f"f{i}", index=i) for i in range(6)]  # 6 FAIL
    cases += [make_case(f"p{i}", index=10 + i, verdict="PASS", value=0.95) for i in range(4)]
    cases.append(make_case("other", index=30, model="model-b"))
    save_runs(store, cases)
    store.add_label("f0", "confirmed", "", "ann")
    store.add_label("f1", "confirmed", "", "ann")
    store.add_label("f2", "confirmed", "", "ann")
    store.add_label("f3", "fp_oracle", "", "ann")
    store.add_label("f4", "unsure", "", "ann")  # excluded from the rate

    counts = store.false_positive_counts(CaseFilter())
    assert counts[0] == {
        "relation_id": "si.paraphrase",
        "model": "model-a",
        "n_pass": 4,
        "n_fail": 6,
        "confirmed": 3,
        "fp_invalid_followup": 0,
        "fp_oracle": 1,
        "unsure": 1,
    }
    rows = {
        (row["model"], row["relation_id"]): row for row in false_positive_rates(store, CaseFilter())
    }
    row = rows[("model-a", "si.paraphrase")]
    assert (row["n_pass"], row["n_fail"], row["labeled"], row["false_positives"]) == (4, 6, 4, 1)
    assert row["fp_rate"] == pytest.approx(0.25)
    assert row["fp_ci_low"] == pytest.approx(0.04558, abs=1e-4)
    assert row["fp_ci_high"] == pytest.approx(0.69936, abs=1e-4)
    assert row["violation_rate"] == pytest.approx(0.6)
    assert row["confirmed_violation_rate"] == pytest.approx(0.6 * 0.75)

    unlabeled = rows[("model-b", "si.paraphrase")]
    assert unlabeled["labeled"] == 0
    assert unlabeled["fp_rate"] is None and unlabeled["confirmed_violation_rate"] is None
    assert unlabeled["violation_rate"] == 1.0

    pooled = false_positive_rates(store, CaseFilter(), by_model=False)
    assert len(pooled) == 1 and pooled[0]["model"] is None and pooled[0]["n_fail"] == 7
    assert false_positive_rates(store, CaseFilter.make(run_ids=[])) == []


def test_migration_adds_triage_columns() -> None:
    store = Store(":memory:")
    assert "original_verdict" in store._db["cases"].columns_dict
    assert "retracts" in store._db["labels"].columns_dict
    assert store._db["verdict_history"].exists()
