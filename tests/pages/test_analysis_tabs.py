"""Analysis tab renderers alone (AppTest.from_function), without the page around them."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.test_analysis_queries import seed_dataset


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    """The severity proxies embed inputs: the bag-of-words stand-in instead of MiniLM."""
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


def _seeded_db(tmp_path) -> str:
    path = str(tmp_path / "tabs.db")
    store = Store(path)
    seed_dataset(store)
    store.close()
    return path


def _tab_script(db_path: str, tab: str) -> None:
    """Renders one tab over every case of the DB, as the page would."""
    from app.ui import analysis_view as view
    from app.ui.analysis_tabs import TABS, AnalysisView
    from core.case_filter import CaseFilter

    flt = CaseFilter()
    opts = view.options(db_path, 0)
    data = AnalysisView(
        db_path,
        0,
        flt,
        view.summary(db_path, 0, flt),
        {run["id"]: run for run in opts["runs"]},
    )
    TABS[tab](data)


def _render(tmp_path, tab: str) -> AppTest:
    at = AppTest.from_function(_tab_script, args=(_seeded_db(tmp_path), tab), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def _table_with(at: AppTest, column: str):
    for element in at.dataframe:
        if column in element.value.columns:
            return element.value
    raise AssertionError(f"no table with a {column!r} column")


def test_robustness_tab_shows_model_table_floor_and_gap(tmp_path) -> None:
    at = _render(tmp_path, "Robustness")
    models = _table_with(at, "stability excl. identity %")
    a = models[models["model"] == "A"].iloc[0]
    assert abs(a["MAD"] - round(0.63 / 4, 3)) < 1e-9  # per observation (SI paper eq. 6)
    assert a["noise floor %"] == "25.0%"  # B has no floor: the column shows text, "—" for B
    assert list(_table_with(at, "gap")["originals"]) == [3]
    floor = _table_with(at, "observations")  # per model × task, one per sample × repeat
    assert (list(floor["task"]), list(floor["observations"])) == (["reasoning"], [4])
    # MAD, stability (a chart each: issue 28 item 8), noise floor
    assert [c.key for c in at.get("plotly_chart")] == [
        "analysis_mad",
        "analysis_stability",
        "analysis_floor",
    ]


def test_statistics_tab_reads_each_result(tmp_path) -> None:
    at = _render(tmp_path, "Statistics")
    tests = _table_with(at, "BH-adjusted p")
    assert list(tests.columns)[:3] == ["compared", "measure", "statistic"]
    readings = " ".join(m.value for m in at.markdown)
    assert "could be chance" in readings or "unlikely to be chance" in readings
    assert "badge[significant]" in readings or "badge[n.s.]" in readings


def test_compare_runs_tab_defaults_to_two_runs_of_the_same_task(tmp_path) -> None:
    """Issue 12 item 7: both runs are of task "reasoning"; A is the older (model A, 2 of 4 =
    50%), B the newer (model B, 1 of 3 = 33.3%), each listed by endpoint, task, date and
    relation set rather than a bare id."""
    at = _render(tmp_path, "Compare runs")
    compared = _table_with(at, "B − A %")
    para = compared[compared["relation"] == "si.paraphrase"].iloc[0]
    assert (para["A violation %"], para["B violation %"]) == (50.0, "33.3%")  # B has gaps
    run_a, run_b = at.selectbox(key="analysis_run_a"), at.selectbox(key="analysis_run_b")
    assert (run_a.value, run_b.value) == ("run-a", "run-b")
    shown = run_b.format_func(run_b.value)
    # issue 28 item 8: what tells runs apart comes first (the long names were cut)
    assert shown == "2026-11-05 09:00 · reasoning · T unknown · 1 relation · ep-B (B) · run-b"
    at.selectbox(key="analysis_run_b").set_value(at.selectbox(key="analysis_run_a").value).run()
    assert "Pick two different runs." in [w.value for w in at.warning]


def test_default_run_pair_prefers_two_runs_of_one_task() -> None:
    """Runs come newest first; the newest run with an older sibling of its task is B, that
    sibling A. Without any two runs of one task: the two newest runs."""
    from app.ui.analysis_view import default_run_pair

    runs = [
        {"id": "r4", "task_id": "qa"},
        {"id": "r3", "task_id": "reasoning"},
        {"id": "r2", "task_id": "sentiment"},
        {"id": "r1", "task_id": "reasoning"},
    ]
    assert default_run_pair(runs) == ("r1", "r3")
    assert default_run_pair(runs[:3]) == ("r3", "r4")
    assert default_run_pair(runs[:1]) is None
