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
    assert {r["model"] for r in store.verdict_counts(CaseFilter())} == {"A", "B"}


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
    rows = {(r["model"], r["relation_id"]): r for r in store.false_positive_counts(CaseFilter())}
    assert ("ep-A · A", "si.paraphrase") in rows and ("A", "si.paraphrase") not in rows
    # The broken endpoint's cases are all ERRORs: no PASS/FAIL, so no row of its own.
    assert not any(model == "ep-broken · A" for model, _ in rows)
    assert (rows[("ep-A · A", "si.paraphrase")]["n_fail"]) == 2


def _add_run_at(store, run_id: str, endpoint: Endpoint) -> None:
    """A run whose stored config names its endpoint (as the engine stores it), with A's cases."""
    store.save_run(
        RunDefinition(
            run_id,
            endpoint=endpoint,
            task_id="reasoning",
            config={"endpoint": endpoint.to_dict(), "relations": ["si.paraphrase"]},
            samples=list(SAMPLES.values()),
        ),
        created_at="2026-11-07T09:00:00+00:00",
    )
    store.record_cases(
        [
            replace(case, id=f"{run_id}-{case.id}", run_id=run_id)
            for case in seed_cases()
            if case.model == "A"
        ]
    )


def test_online_and_batch_endpoints_at_one_address_are_one_row(store):
    """Issue 28 item 5: a batch endpoint and an online endpoint for the same URL and model
    share the cache and the run id, so they are one model row, not two."""
    online = Endpoint(name="vllm", base_url="http://gpu:8000/v1", model="A")
    batch = Endpoint(name="vllm files", base_url="http://gpu:8000/v1/", model="A", kind="batch")
    _add_run_at(store, "run-online", online)
    _add_run_at(store, "run-batch", batch)
    assert {r["model"] for r in store.verdict_counts(CaseFilter())} == {"A"}
    assert store.filter_options()["models"] == ["A"]
    # Another address serving a model of the same name is still its own row.
    _add_run_at(store, "run-other", replace(online, name="cpu box", base_url="http://cpu:8000/v1"))
    models = {r["model"]: r["n"] for r in store.verdict_counts(CaseFilter(), by=("model",))}
    n_a = sum(1 for case in seed_cases() if case.model == "A")
    assert "A" not in models and models["cpu box · A"] == n_a  # its own row, A's cases alone
