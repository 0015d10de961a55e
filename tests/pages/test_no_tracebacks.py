"""No Analysis tab ever shows a traceback (issue 12, item 1).

The database holds runs of three tasks by two endpoints, and sample metadata whose "score" mixes
numbers, text and missing values (the demo's shape that made Breakdown raise
``TypeError: '<' not supported between 'str' and 'float'``). Every tab is opened through the
entrypoint; a failing tab shows a one-line message and the others still render.
"""

from __future__ import annotations

import pytest

from app.ui.analysis_tabs import TABS
from core.types import Case, Endpoint, Sample
from storage import Store
from storage.run_verbs import RunDefinition
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import open_page

PAGE = "pages/analysis.py"

ENDPOINTS = (
    Endpoint(name="local-small", base_url="http://127.0.0.1:9/v1", model="smol"),
    Endpoint(name="office-big", base_url="http://127.0.0.1:8/v1", model="big-7b"),
)
TASKS = {
    "reasoning": [
        Sample(fields={"problem": "Add 2 and 3."}, reference="5", meta={"score": 0.5}),
        Sample(fields={"problem": "Halve 10."}, reference="5", meta={"score": "high"}),
        Sample(fields={"problem": "Double 4."}, reference="8", meta={}),
    ],
    "sentiment": [
        Sample(fields={"text": "I love it."}, reference="positive", meta={"score": 2}),
        Sample(fields={"text": "Awful."}, reference="negative", meta={"score": "low"}),
    ],
    "qa": [
        Sample(fields={"question": "Capital of France?"}, reference="Paris", meta={"score": 1}),
        Sample(fields={"question": "Largest planet?"}, reference="Jupiter", meta={"score": None}),
    ],
}
RELATIONS = ("si.identity", "si.paraphrase", "ad.format")
VERDICTS = ("PASS", "FAIL", "PASS", "SKIP", "ERROR", "FAIL")


def seed_three_tasks_two_endpoints(path) -> None:
    """One run per endpoint × task (six runs), every relation on every sample."""
    store = Store(str(path))
    cases = []
    for e, endpoint in enumerate(ENDPOINTS):
        for t, (task_id, samples) in enumerate(TASKS.items()):
            run_id = f"run-{endpoint.name}-{task_id}"
            store.save_run(
                RunDefinition(
                    run_id,
                    endpoint=endpoint,
                    task_id=task_id,
                    config={"relation_ids": list(RELATIONS)},
                    samples=samples,
                ),
                created_at=f"2026-11-{10 + 3 * e + t:02d}T09:00:00+00:00",
            )
            store.finish_run(run_id, "done")
            for s, sample in enumerate(samples):
                for r, relation_id in enumerate(RELATIONS):
                    verdict = VERDICTS[(e + t + s + r) % len(VERDICTS)]
                    judged = verdict in ("PASS", "FAIL")
                    text = next(iter(sample.fields.values()))
                    cases.append(
                        Case.from_row(
                            {
                                "id": f"{run_id}-{s}-{r}",
                                "run_id": run_id,
                                "sample_id": sample.id,
                                "relation_id": relation_id,
                                "family": relation_id.split(".")[0],
                                "side": "presentation" if relation_id == "ad.format" else None,
                                "target": next(iter(sample.fields)),
                                "model": endpoint.model,
                                "followup_index": 0,
                                "repeat_index": 0,
                                "task_id": task_id,
                                "source_input": sample.fields,
                                "followup_input": {next(iter(sample.fields)): text + " Please."}
                                if judged
                                else None,
                                "source_output": f"Answer: {sample.reference}",
                                "followup_output": "Answer: ?" if verdict == "FAIL" else None,
                                "source_answer": sample.reference,
                                "followup_answer": "?" if verdict == "FAIL" else sample.reference,
                                "verdict": verdict,
                                "oracle": "equal_label",
                                "reason": "long reason " * 20 if verdict == "FAIL" else "ok",
                                "delta": (-0.2 if verdict == "FAIL" else 0.01) if judged else None,
                                "output_similarity": 0.9 if judged else None,
                                "created_at": "2026-11-10T10:00:00+00:00",
                            }
                        )
                    )
    store.record_cases(cases)
    store.close()


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    """The severity proxies embed inputs: the bag-of-words stand-in instead of MiniLM."""
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


def open_tab(at, name: str):
    at.session_state["analysis_tab"] = name
    at.run()
    return at


def assert_clean(at, where: str) -> None:
    assert not at.exception, f"{where}: {at.exception}"
    errors = [e.value for e in at.error]
    assert not errors, f"{where}: {errors}"


@pytest.fixture
def page(app_db):
    seed_three_tasks_two_endpoints(app_db)
    at = open_page(PAGE)
    assert_clean(at, "first load")
    return at


def test_every_analysis_tab_renders_without_an_exception(page) -> None:
    for name in TABS:
        assert_clean(open_tab(page, name), name)
    assert {m.label: m.value for m in page.metric}["Models"] == "2"


def test_breakdown_by_a_key_mixing_numbers_text_and_missing_values(page) -> None:
    """The demo's crash: meta "score" is 0.5, 1, 2, "high", "low", null or absent across
    samples. Numbers come first by value, then text, then the samples without a value."""
    open_tab(page, "Breakdown")
    page.selectbox(key="analysis_meta_key").set_value("score").run()
    assert_clean(page, "Breakdown by score")
    table = next(df.value for df in page.dataframe if "score" in df.value.columns)
    smol = list(table[table["model"] == "smol"]["score"])
    assert smol == ["0.5", "1", "2", "high", "low", "(none)"]
    for metric in ("inconsistency_rate", "mean_delta"):
        page.radio(key="analysis_meta_metric").set_value(metric).run()
        assert_clean(page, f"Breakdown {metric}")


def test_compare_runs_lists_runs_by_endpoint_task_date_and_relations(page) -> None:
    open_tab(page, "Compare runs")
    assert_clean(page, "Compare runs")
    run_a, run_b = page.selectbox(key="analysis_run_a"), page.selectbox(key="analysis_run_b")
    # the newest run is office-big × qa; its older sibling of the same task is local-small × qa
    assert (run_a.value, run_b.value) == ("run-local-small-qa", "run-office-big-qa")
    # issue 28 item 8: time, task, temperature and relation count first (long names were cut)
    shown = run_b.format_func(run_b.value)
    assert shown.startswith("2026-11-15 09:00 · qa · T")
    assert " relations · office-big (big-7b) · " in shown


def test_a_failing_tab_shows_one_line_and_the_page_goes_on(page, monkeypatch) -> None:
    def broken(data) -> None:
        raise TypeError("'<' not supported between instances of 'str' and 'float'\nmore detail")

    monkeypatch.setitem(TABS, "Statistics", broken)
    open_tab(page, "Statistics")
    assert not page.exception
    (message,) = [e.value for e in page.error]
    assert "Statistics tab could not be shown" in message and "more detail" not in message
    assert page.metric  # the headline above the tabs still rendered
    assert_clean(open_tab(page, "Heatmaps"), "Heatmaps after a broken tab")


@pytest.mark.parametrize(
    "other_page",
    ["pages/probe.py", "pages/relations.py", "pages/endpoints.py", "pages/triage.py"],
)
def test_every_other_page_renders_on_the_same_database(app_db, other_page) -> None:
    """The issue's must-show, beyond Analysis: runs of three tasks by two endpoints, and every
    page opens with no exception and no error box."""
    seed_three_tasks_two_endpoints(app_db)
    assert_clean(open_page(other_page), other_page)
