"""Runs and Analysis group by endpoint (name + model), not by model name alone.

Regression: a broken endpoint's ERROR run merged into a working endpoint's row when both served a
model of the same name. Now a model name served by two endpoints reads "endpoint · model" in every
analysis row and filter; a model name only one endpoint served keeps its plain name.
"""

from __future__ import annotations

from dataclasses import replace

from app.analysis import metrics
from core.case_filter import CaseFilter
from core.types import Endpoint, Verdict
from storage.run_verbs import RunDefinition
from tests.test_analysis_queries import SAMPLES, seed_cases, seed_dataset


def _add_broken_endpoint_run(store) -> None:
    """A third run: endpoint "ep-broken" serves a model also named "A"; every case an ERROR."""
    store.save_run(
        RunDefinition(
            "run-broken",
            endpoint=Endpoint(name="ep-broken", base_url="http://127.0.0.1:9/v1", model="A"),
            task_id="reasoning",
            config={"relations": ["si.paraphrase"]},
            samples=list(SAMPLES.values()),
        ),
        created_at="2026-11-06T09:00:00+00:00",
    )
    store.finish_run("run-broken", "done")
    store.record_cases(
        [
            replace(
                case,
                id=f"broken-{case.id}",
                run_id="run-broken",
                verdict=Verdict.ERROR,
                delta=None,
                output_similarity=None,
                value=None,
            )
            for case in seed_cases()
            if case.model == "A" and case.relation_id == "si.paraphrase"
        ]
    )


def test_a_broken_endpoint_does_not_merge_into_a_working_one(store):
    seed_dataset(store)
    _add_broken_endpoint_run(store)
    rows = {
        (r["model"], r["relation_id"]): r
        for r in store.verdict_counts(CaseFilter.make(relations=["si.paraphrase"]))
    }
    # 7 si.paraphrase cases each: ep-A's mix (1 ERROR) and ep-broken's 7 ERRORs stay apart.
    working, broken = rows[("ep-A · A", "si.paraphrase")], rows[("ep-broken · A", "si.paraphrase")]
    assert (working["n"], working["n_error"]) == (7, 1)
    assert (broken["n"], broken["n_error"]) == (7, 7)
    # Model B has one endpoint: its plain name, as before.
    assert ("B", "si.paraphrase") in rows
    assert store.filter_options()["models"] == ["B", "ep-A · A", "ep-broken · A"]


def test_an_endpoint_label_filters_analysis_and_the_summary(store):
    seed_dataset(store)
    _add_broken_endpoint_run(store)
    assert store.count_cases(CaseFilter.make(models=["ep-broken · A"])) == 7
    assert store.count_cases(CaseFilter.make(models=["B"])) == 3
    summary = metrics.summarize(store, CaseFilter())
    assert {m["model"] for m in summary["models"]} == {"ep-A · A", "ep-broken · A", "B"}


def test_unshared_model_names_stay_plain(store):
    seed_dataset(store)
    assert {r["model"] for r in store.verdict_counts()} == {"A", "B"}


def test_runs_are_listed_by_endpoint(store):
    seed_dataset(store)
    _add_broken_endpoint_run(store)
    listed = {run.id: run.endpoint for run in store.runs()}
    assert listed == {"run-a": "ep-A · A", "run-b": "ep-B · B", "run-broken": "ep-broken · A"}
    options = {run["id"]: run["endpoint"] for run in store.filter_options()["runs"]}
    assert options == listed


def test_triage_label_counts_use_the_same_endpoint_rows(store):
    """The labels' false-positive counts (which feed Analysis) are keyed like Analysis's rows."""
    seed_dataset(store)
    _add_broken_endpoint_run(store)
    rows = {(r["model"], r["relation_id"]): r for r in store.false_positive_counts()}
    assert ("ep-A · A", "si.paraphrase") in rows and ("A", "si.paraphrase") not in rows
    # The broken endpoint's cases are all ERRORs: no PASS/FAIL, so no row of its own.
    assert not any(model == "ep-broken · A" for model, _ in rows)
    assert (rows[("ep-A · A", "si.paraphrase")]["n_fail"]) == 2
