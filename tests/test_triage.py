"""Triage engine: threshold suggestion and application, feedback table, kappa, label exchange."""

from __future__ import annotations

import json
import math
import random
import socket
import subprocess
import sys
from dataclasses import replace

import pytest
from sklearn.metrics import cohen_kappa_score

from app.analysis.triage.agreement import agreement, agreement_table, cohen_kappa
from app.analysis.triage.false_positives import feedback_table
from app.analysis.triage.label_exchange import LabelImportError, export_labels, import_labels
from app.analysis.triage.thresholds import (
    apply_threshold,
    best_threshold,
    suggest_thresholds,
    threshold_verdict,
)
from storage import Store
from tests.triage_data import make_case, save_runs

# ---------------------------------------------------------------- fixtures

CONFIRMED_VALUES = [0.2, 0.3, 0.4]  # real violations: low similarity
FP_ORACLE_VALUES = [0.6, 0.7]  # equivalent outputs the 0.8 threshold wrongly failed


@pytest.fixture
def labeled_store() -> Store:
    """si.paraphrase (semantic_similar, θ 0.8): 5 labeled FAILs, 2 unlabeled cases, 1 PASS."""
    store = Store(":memory:")
    cases = [make_case(f"c{i}", index=i, value=v) for i, v in enumerate(CONFIRMED_VALUES)]
    cases += [make_case(f"f{i}", index=10 + i, value=v) for i, v in enumerate(FP_ORACLE_VALUES)]
    cases += [
        make_case("u-low", index=20, value=0.45),
        make_case("u-high", index=21, value=0.55),
        make_case("pass", index=22, verdict="PASS", value=0.9),
        make_case("skip", index=23, verdict="SKIP", value=None),
        make_case("other", index=24, relation_id="word.synonym", value=0.6),
    ]
    save_runs(store, cases)
    for i in range(len(CONFIRMED_VALUES)):
        store.add_label(f"c{i}", "confirmed", "", "ann")
    for i in range(len(FP_ORACLE_VALUES)):
        store.add_label(f"f{i}", "fp_oracle", "", "ann")
    return store


def verdicts(store: Store) -> dict[str, str]:
    return {row["id"]: row["verdict"] for row in store._query("SELECT id, verdict FROM cases")}


# ---------------------------------------------------------------- the oracle rule


def test_threshold_verdict_follows_each_oracle_boundary() -> None:
    assert threshold_verdict("semantic_similar", 0.8, 0.8) == "PASS"
    assert threshold_verdict("semantic_similar", 0.79, 0.8) == "FAIL"
    assert threshold_verdict("semantic_different", 0.8, 0.8) == "FAIL"
    assert threshold_verdict("semantic_different", 0.79, 0.8) == "PASS"
    assert threshold_verdict("numeric_within", 0.1, 0.1) == "PASS"
    assert threshold_verdict("numeric_within", 0.11, 0.1) == "FAIL"
    assert threshold_verdict("numeric_within", 0.8 - 0.7, 0.1) == "PASS"  # float slack
    with pytest.raises(ValueError, match="has no threshold"):
        threshold_verdict("equal_label", 1.0, 0.5)


@pytest.mark.parametrize("oracle", ["semantic_similar", "semantic_different", "numeric_within"])
def test_sql_flip_count_agrees_with_the_python_rule(oracle: str) -> None:
    threshold = 0.5
    values = [0.2, 0.5 - 1e-9, 0.5, 0.5 + 1e-13, 0.5 + 1e-9, 0.8 - 0.7 + 0.4, 0.9]
    store = Store(":memory:")
    cases = [
        make_case(
            f"{verdict}{i}",
            index=10 * i + (verdict == "PASS"),
            verdict=verdict,
            oracle=oracle,
            value=value,
            task_id="sentiment_score",
        )
        for i, value in enumerate(values)
        for verdict in ("PASS", "FAIL")
    ]
    save_runs(store, cases)
    expected = sum(threshold_verdict(oracle, c.value, threshold) != c.verdict for c in cases)
    assert store.count_threshold_flips("si.paraphrase", oracle, threshold) == expected
    assert expected == len(values)  # each value flips exactly one of its PASS / FAIL twins


# ---------------------------------------------------------------- best threshold


def test_best_threshold_is_the_midpoint_of_the_separating_gap() -> None:
    values = CONFIRMED_VALUES + FP_ORACLE_VALUES
    confirmed = [True] * 3 + [False] * 2
    threshold, correct = best_threshold("semantic_similar", values, confirmed, current=0.8)
    assert threshold == pytest.approx(0.5)  # midway between 0.4 and 0.6
    assert correct == 5


def test_best_threshold_other_directions() -> None:
    # semantic_different: a violation is a *high* cosine; the checker wrongly failed 0.82, 0.85.
    threshold, correct = best_threshold(
        "semantic_different", [0.9, 0.95, 0.82, 0.85], [True, True, False, False], current=0.8
    )
    assert (threshold, correct) == (pytest.approx(0.875), 4)
    # numeric_within: |Δ| above ε is a violation; 0.12 and 0.15 were judged too strictly.
    threshold, correct = best_threshold(
        "numeric_within", [0.5, 0.4, 0.12, 0.15], [True, True, False, False], current=0.1
    )
    assert (threshold, correct) == (pytest.approx(0.275), 4)


def test_best_threshold_ties_keep_the_current_threshold() -> None:
    # 0.65 is confirmed although above an fp at 0.6: θ 0.4 and θ 0.8 both get 2 of 3 right.
    threshold, correct = best_threshold(
        "semantic_similar", [0.2, 0.6, 0.65], [True, False, True], current=0.8
    )
    assert (threshold, correct) == (0.8, 2)
    # Without a current threshold the lowest of the tied candidates wins.
    threshold, _ = best_threshold("semantic_similar", [0.2, 0.6, 0.65], [True, False, True])
    assert threshold == pytest.approx(0.4)


# ---------------------------------------------------------------- suggestions from stored labels


def test_suggest_thresholds_from_labeled_cases(labeled_store: Store) -> None:
    (suggestion,) = suggest_thresholds(labeled_store)
    assert suggestion.relation_id == "si.paraphrase"
    assert suggestion.oracle == "semantic_similar"
    assert (suggestion.n, suggestion.n_confirmed, suggestion.n_fp_oracle) == (5, 3, 2)
    assert suggestion.current_threshold == 0.8  # the default: nothing recorded, no override
    assert suggestion.suggested_threshold == pytest.approx(0.5)
    assert suggestion.accuracy_before == pytest.approx(0.6)
    assert suggestion.accuracy_after == pytest.approx(1.0)
    assert suggestion.would_change == 3  # f0, f1 and the unlabeled 0.55 become PASS
    assert suggestion.changes_threshold


def test_suggest_thresholds_needs_both_kinds_of_label() -> None:
    store = Store(":memory:")
    save_runs(store, [make_case(f"c{i}", index=i, value=0.1 * i) for i in range(5)])
    for i in range(5):
        store.add_label(f"c{i}", "confirmed", "", "ann")
    (suggestion,) = suggest_thresholds(store)
    assert suggestion.suggested_threshold is None
    assert "5 confirmed, 0 fp_oracle" in suggestion.note
    assert suggestion.accuracy_before == 1.0


def test_suggestion_uses_recorded_threshold_when_no_override() -> None:
    store = Store(":memory:")
    # details: what the semantic oracle records
    cases = [
        replace(make_case(f"c{i}", index=i, value=0.3 + 0.1 * i), details={"theta": 0.85})
        for i in range(4)
    ]
    save_runs(store, cases)
    store.add_label("c0", "confirmed", "", "ann")
    store.add_label("c3", "fp_oracle", "", "ann")
    (suggestion,) = suggest_thresholds(store, min_labels=1)
    assert suggestion.current_threshold == 0.85


# ---------------------------------------------------------------- applying a threshold


def test_apply_threshold_recomputes_from_stored_values(
    labeled_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("apply_threshold must not open a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    before = verdicts(labeled_store)
    result = apply_threshold(labeled_store, "si.paraphrase", 0.5)
    assert result == {
        "relation_id": "si.paraphrase",
        "oracle": "semantic_similar",
        "threshold": 0.5,
        "considered": 8,  # PASS/FAIL cases of the relation; the SKIP is never touched
        "changed": 3,
        "to_pass": 3,
        "to_fail": 0,
    }
    after = verdicts(labeled_store)
    changed = {case for case in after if after[case] != before[case]}
    assert changed == {"f0", "f1", "u-high"}
    assert after["skip"] == "SKIP" and after["other"] == "FAIL"

    case = labeled_store.case("f0")
    assert case.original_verdict == "FAIL"
    assert case.reason == "cosine 0.600 ≥ θ 0.500 (threshold set in Triage)"
    assert labeled_store.case("c0").original_verdict is None  # unchanged cases untouched
    assert labeled_store.threshold_overrides() == {"si.paraphrase": 0.5}
    history_sql = "SELECT * FROM verdict_history WHERE case_id = 'f0' ORDER BY id"
    (history,) = labeled_store._query(history_sql)
    assert (history["old_verdict"], history["new_verdict"], history["old_reason"]) == (
        "FAIL",
        "PASS",
        "automatic",
    )

    # A second threshold moves verdicts back but the first automatic verdict stays.
    second = apply_threshold(labeled_store, "si.paraphrase", 0.8)
    assert second["changed"] == 3 and second["to_fail"] == 3
    assert labeled_store.case("f0").verdict == "FAIL"
    assert labeled_store.case("f0").original_verdict == "FAIL"
    assert len(labeled_store._query(history_sql)) == 2
    assert labeled_store.threshold_overrides() == {"si.paraphrase": 0.8}
    # With the override in place, the next suggestion starts from it.
    assert suggest_thresholds(labeled_store)[0].current_threshold == 0.8


def test_apply_threshold_is_atomic(labeled_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Store, "set_threshold_override", broken)
    before = verdicts(labeled_store)
    with pytest.raises(RuntimeError, match="disk full"):
        apply_threshold(labeled_store, "si.paraphrase", 0.5)
    assert verdicts(labeled_store) == before
    assert labeled_store._query("SELECT count(*) AS n FROM verdict_history")[0]["n"] == 0
    assert labeled_store._query("SELECT original_verdict FROM cases WHERE id = 'f0'") == [
        {"original_verdict": None}
    ]


def test_apply_threshold_validation() -> None:
    store = Store(":memory:")
    save_runs(
        store,
        [
            make_case("s", index=1, value=0.7),
            make_case("n", index=2, oracle="numeric_within", value=0.3, task_id="sentiment_score"),
            # A relative ε (numbers that are not scores) cannot be re-checked from |Δ| alone.
            make_case("rel", index=3, oracle="numeric_within", value=5.0, task_id="reasoning"),
        ],
    )
    with pytest.raises(ValueError, match="several threshold oracles"):
        apply_threshold(store, "si.paraphrase", 0.5)
    with pytest.raises(ValueError, match="finite"):
        apply_threshold(store, "si.paraphrase", math.nan)
    result = apply_threshold(store, "si.paraphrase", 0.5, oracle="numeric_within")
    assert (result["considered"], result["changed"]) == (1, 1)
    assert store.case("n").verdict == "PASS" and store.case("s").verdict == "FAIL"
    assert store.case("rel").verdict == "FAIL"


def test_triage_engine_imports_no_network_client() -> None:
    code = (
        "import sys, app.analysis.triage.agreement, app.analysis.triage.false_positives, "
        "app.analysis.triage.label_exchange, app.analysis.triage.thresholds; "
        "print(sorted(m for m in ('openai', 'httpx', 'app.clients') if m in sys.modules))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "[]"


# ---------------------------------------------------------------- feedback for Analysis


def test_feedback_table_flows_from_labels_and_thresholds(labeled_store: Store) -> None:
    table = feedback_table(labeled_store)
    assert list(table.columns[:2]) == ["relation", "model"]
    row = table.set_index("relation").loc["si.paraphrase"]
    assert (row["labeled"], row["n_fail"], row["n_pass"]) == (5, 7, 1)
    assert row["fp_rate"] == pytest.approx(0.4)
    assert row["fp_ci_low"] < 0.4 < row["fp_ci_high"]
    assert row["violation_rate"] == pytest.approx(7 / 8)
    assert row["confirmed_violation_rate"] == pytest.approx(7 / 8 * 0.6)
    assert math.isnan(table.set_index("relation").loc["word.synonym", "fp_rate"])

    apply_threshold(labeled_store, "si.paraphrase", 0.5)
    row = feedback_table(labeled_store).set_index("relation").loc["si.paraphrase"]
    # The fp_oracle cases are PASS now: every labeled FAIL left is confirmed.
    assert (row["labeled"], row["fp_rate"], row["violation_rate"]) == (3, 0.0, 0.5)


# ---------------------------------------------------------------- agreement


def test_cohen_kappa_hand_example() -> None:
    # 50 items: both yes 20, only A yes 5, only B yes 10, both no 15.
    first = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    second = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    # p_o = 35/50 = 0.7; p_e = 0.5·0.6 + 0.5·0.4 = 0.5; κ = (0.7 − 0.5) / 0.5 = 0.4.
    assert cohen_kappa(first, second) == pytest.approx(0.4)
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["unsure"] * 3, ["unsure"] * 3) is None
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["a"], [])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cohen_kappa_matches_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    labels = ["confirmed", "fp_invalid_followup", "fp_oracle", "unsure"]
    first = [rng.choice(labels) for _ in range(40)]
    second = [label if rng.random() < 0.6 else rng.choice(labels) for label in first]
    assert cohen_kappa(first, second) == pytest.approx(cohen_kappa_score(first, second))


def test_agreement_between_stored_labelers() -> None:
    store = Store(":memory:")
    save_runs(store, [make_case(f"c{i}", index=i) for i in range(5)])
    for case, label in zip(
        ["c0", "c1", "c2", "c3"], ["confirmed", "confirmed", "fp_oracle", "unsure"], strict=True
    ):
        store.add_label(case, label, "", "ann")
    for case, label in zip(
        ["c0", "c1", "c2", "c4"], ["confirmed", "fp_oracle", "fp_oracle", "unsure"], strict=True
    ):
        store.add_label(case, label, "", "bob")
    result = agreement(store, "ann", "bob")
    assert result.n == 3 and result.disagreements == ["c1"]
    assert result.observed == pytest.approx(2 / 3)
    expected = cohen_kappa_score(
        ["confirmed", "confirmed", "fp_oracle"], ["confirmed", "fp_oracle", "fp_oracle"]
    )
    assert result.kappa == pytest.approx(expected)
    table = agreement_table(store)
    assert table.to_dict("records") == [
        {
            "labeler_a": "ann",
            "labeler_b": "bob",
            "n": 3,
            "observed_agreement": pytest.approx(2 / 3),
            "kappa": pytest.approx(expected),
        }
    ]


# ---------------------------------------------------------------- export / import


def two_stores() -> tuple[Store, Store]:
    cases = [make_case(f"c{i}", index=i) for i in range(4)]
    first, second = Store(":memory:"), Store(":memory:")
    save_runs(first, cases)
    save_runs(second, cases)
    first.add_label("c0", "confirmed", "clear flip", "ann")
    first.add_label("c1", "fp_oracle", 'said "rug", same thing', "ann")
    first.add_label("c1", "unsure", "", "ann")
    first.undo_label("c1", "ann")
    first.add_label("c2", "fp_invalid_followup", "meaning, changed", "bob")
    return first, second


def history(store: Store) -> list[tuple]:
    return [
        (
            r["case_id"],
            r["labeler"],
            r["label"],
            r["note"],
            r["created_at"],
            r["retracts_created_at"],
        )
        for r in store.all_labels()
    ]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_import_round_trip_and_reimport(fmt: str) -> None:
    first, second = two_stores()
    text = export_labels(first, fmt)
    result = import_labels(second, text, fmt)
    assert result == {"added": 5, "duplicates": 0, "rows": 5}
    assert history(second) == history(first)
    assert {r["case_id"]: r["label"] for r in second.current_labels()} == {
        "c0": "confirmed",
        "c1": "fp_oracle",  # the undo travelled with the history
        "c2": "fp_invalid_followup",
    }
    again = import_labels(second, text, fmt)
    assert again == {"added": 0, "duplicates": 5, "rows": 5}
    assert len(second.all_labels()) == 5


def test_export_formats_are_readable() -> None:
    first, _ = two_stores()
    lines = export_labels(first, "csv").splitlines()
    assert (
        lines[0]
        == "case_id,labeler,label,note,created_at,retracts_created_at,run_id,model,relation_id"
    )
    assert lines[1].startswith("c0,ann,confirmed,clear flip,")
    rows = [json.loads(line) for line in export_labels(first, "jsonl").splitlines()]
    assert [row["label"] for row in rows] == [
        "confirmed",
        "fp_oracle",
        "unsure",
        "retracted",
        "fp_invalid_followup",
    ]
    assert rows[3]["retracts_created_at"] == rows[2]["created_at"]
    assert rows[0]["relation_id"] == "si.paraphrase"
    with pytest.raises(ValueError, match="unknown export format"):
        export_labels(first, "xml")


def test_import_is_all_or_nothing() -> None:
    first, second = two_stores()
    rows = [json.loads(line) for line in export_labels(first, "jsonl").splitlines()]
    rows.append({**rows[0], "case_id": "ghost-case"})
    text = "".join(json.dumps(row) + "\n" for row in rows)
    with pytest.raises(LabelImportError, match=r"unknown case id.*ghost-case") as caught:
        import_labels(second, text, "jsonl")
    assert caught.value.errors == ["1 unknown case id(s) (not in this database): ghost-case"]
    assert second.all_labels() == []


def test_import_reports_every_problem() -> None:
    _, second = two_stores()
    text = (
        '{"case_id": "c0", "label": "maybe", "labeler": "x", "created_at": "2026-01-01T00:00:00"}\n'
        "not json\n"
        '{"case_id": "c1", "label": "confirmed", "labeler": "x", "created_at": "yesterday"}\n'
        '{"case_id": "c2", "label": "retracted", "labeler": "x", '
        '"created_at": "2026-01-01T00:00:00"}\n'
    )
    with pytest.raises(LabelImportError) as caught:
        import_labels(second, text, "jsonl")
    assert caught.value.errors == [
        "line 2: not valid JSON (Expecting value)",
        "line 1: unknown label 'maybe'",
        "line 3: created_at 'yesterday' is not an ISO time",
        "line 4: a 'retracted' row needs retracts_created_at (ISO time)",
    ]
    with pytest.raises(LabelImportError, match="CSV header lacks column"):
        import_labels(second, "id,what\n1,2\n", "csv")
    # A retraction whose label is in neither the file nor the database: refused, nothing written.
    orphan = (
        "case_id,labeler,label,note,created_at,retracts_created_at\n"
        "c0,x,confirmed,,2026-01-01T00:00:00+00:00,\n"
        "c1,x,retracted,,2026-01-02T00:00:00+00:00,2025-12-31T00:00:00+00:00\n"
    )
    with pytest.raises(LabelImportError, match="does not exist"):
        import_labels(second, orphan, "csv")
    assert second.all_labels() == []
