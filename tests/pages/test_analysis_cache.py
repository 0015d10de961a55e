"""The Analysis page's cache: keyed by the database's data version, so it refreshes by itself.

A run or a label written by another process (the CLI) or another browser session never calls
this session's ``data_changed()``: before, the page kept showing the cached numbers until the
user pressed "Refresh data". A rerun that changed nothing recomputes nothing.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.analysis import metrics
from core.types import Endpoint
from storage import Store
from storage.run_verbs import RunDefinition
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import open_page
from tests.test_analysis_queries import SAMPLES, seed_cases, seed_dataset

PAGE = "pages/analysis.py"


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


@pytest.fixture
def summaries(monkeypatch) -> list[object]:
    """Every filter the page's summary was computed for (cache misses only)."""
    computed: list[object] = []
    original = metrics.summarize

    def counting(store, flt=None):
        computed.append(flt)
        return original(store, flt)

    monkeypatch.setattr(metrics, "summarize", counting)
    return computed


def _cases_shown(at) -> str:
    assert not at.exception, at.exception
    return {m.label: m.value for m in at.metric}["Cases"]


def _seed(path) -> None:
    store = Store(path)
    seed_dataset(store)
    store.close()


def test_a_run_recorded_elsewhere_shows_on_the_next_rerun(app_db, summaries) -> None:
    _seed(app_db)
    at = open_page(PAGE)
    assert _cases_shown(at) == "21"
    # the CLI records a run in its own process: no data_changed() in this session
    cli = Store(app_db)
    cli.save_run(
        RunDefinition(
            "run-c",
            endpoint=Endpoint(name="ep-C", base_url="http://127.0.0.1:9/v1", model="C"),
            task_id="reasoning",
            config={},
            samples=list(SAMPLES.values()),
        ),
    )
    cli.record_cases(
        [replace(case, id=f"c-{case.id}", run_id="run-c", model="C") for case in seed_cases()[:3]]
    )
    cli.finish_run("run-c", "done")
    cli.close()
    at.run()
    assert _cases_shown(at) == "24"
    assert {m.label: m.value for m in at.metric}["Models"] == "3"


def test_a_label_added_elsewhere_shows_on_the_next_rerun(app_db) -> None:
    _seed(app_db)
    at = open_page(PAGE)
    at.session_state["analysis_tab"] = "Robustness"
    at.run()
    assert not any("false positives %" in df.value.columns for df in at.dataframe)
    other_session = Store(app_db)
    other_session.add_label("case-005", "fp_oracle", labeler="ann")
    other_session.close()
    at.run()
    assert not at.exception, at.exception
    assert any("false positives %" in df.value.columns for df in at.dataframe)


def test_reruns_that_change_nothing_recompute_nothing(app_db, summaries) -> None:
    _seed(app_db)
    at = open_page(PAGE)
    assert len(summaries) == 1
    at.radio(key="analysis_heatmap_metric").set_value("inconsistency_rate").run()
    at.run()
    assert len(summaries) == 1  # widget reruns: cached
    at.multiselect(key="analysis_models").set_value(["B"]).run()
    assert _cases_shown(at) == "3" and len(summaries) == 2
    at.multiselect(key="analysis_models").set_value([]).run()
    assert _cases_shown(at) == "21" and len(summaries) == 2  # back: cached


def test_a_chart_tab_shows_a_placeholder_until_its_numbers_exist() -> None:
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        from app.ui.analysis_tabs import open_tabs

        open_tabs(loading=True)

    at = AppTest.from_function(script)
    at.run()
    assert not at.exception, at.exception
    # the Heatmaps tab's placeholder, in Vega-Lite like the heatmap: the browser fetches the
    # Vega chunk, not plotly.js, while the numbers are counted
    assert len(at.get("vega_lite_chart")) == 1 and not at.get("plotly_chart")


def test_a_computed_summary_is_known_as_aggregated(tmp_path) -> None:
    from app.ui import analysis_view as view
    from core.case_filter import CaseFilter

    path = str(tmp_path / "agg.db")
    _seed(path)
    flt = CaseFilter.make(models=["A"])
    assert not view.is_aggregated(path, "v1", flt)
    view.summary(path, "v1", flt)
    assert view.is_aggregated(path, "v1", flt)
    assert not view.is_aggregated(path, "v2", flt)  # another data version: not yet


def _join_prefetch() -> None:
    import threading

    for thread in threading.enumerate():
        if thread.name == "analysis-prefetch":
            thread.join(timeout=30)


def test_prefetch_aggregates_the_unfiltered_view_in_the_background(tmp_path) -> None:
    """What a newly opened page shows first (no filter) is counted before the page asks for it,
    under the version the page will read; a database that does not exist is never created."""
    from app.ui import analysis_view as view
    from core.case_filter import CaseFilter

    path = str(tmp_path / "prefetch.db")
    _seed(path)
    store = Store(path)
    version = store.data_version()
    store.close()
    assert not view.is_aggregated(path, version, CaseFilter())
    view.prefetch(path)
    _join_prefetch()
    assert view.is_aggregated(path, version, CaseFilter())
    assert view.summary(path, version, CaseFilter())["n_cases"] == 21  # from the cache
    missing = tmp_path / "missing.db"
    view.prefetch(str(missing))
    _join_prefetch()
    assert not missing.exists()


def test_the_page_prefetches_once_per_session(app_db, monkeypatch) -> None:
    """The background prefetch starts on the first visit only: a widget rerun does not start
    another thread (it would merely find the numbers cached)."""
    from app.ui import analysis_view as view

    started: list[str] = []

    def prefetch_default(path: str) -> None:
        started.append(path)
        with view._PREFETCH_LOCK:
            view._PREFETCHING.discard(path)  # done at once: a second start would be allowed

    monkeypatch.setattr(view, "_prefetch_default", prefetch_default)
    _seed(app_db)
    at = open_page(PAGE)
    at.radio(key="analysis_heatmap_metric").set_value("inconsistency_rate").run()
    at.run()
    assert not at.exception, at.exception
    _join_prefetch()
    assert started == [str(app_db)]
