"""Analysis page through the entrypoint: empty DB, render, filters, drill-down, comparison."""

from __future__ import annotations

import re

import pytest

from app.ui.analysis_tabs import case_choice_key
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import open_page
from tests.test_analysis_queries import PROBLEMS, seed_dataset


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    """The severity proxies embed inputs: the bag-of-words stand-in instead of MiniLM."""
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


PAGE = "pages/analysis.py"


def seed(path) -> None:
    store = Store(path)
    seed_dataset(store)
    store.close()


def texts(at) -> str:
    return " ".join(
        [e.value for e in at.markdown]
        + [e.value for e in at.text]
        + [e.value for e in at.caption]
        + [e.value for e in at.info]
        + [e.value for e in at.warning]
    )


def dataframe_with(at, column: str):
    for element in at.dataframe:
        if column in element.value.columns:
            return element.value
    raise AssertionError(f"no table with a {column!r} column")


def test_empty_database_shows_a_friendly_message(app_db) -> None:
    at = open_page(PAGE)
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "No runs yet" in text and "Probe" in text
    # the one-click demo is offered where the page would otherwise be empty
    assert any(b.label == "Run the demo" for b in at.button)


def open_tab(at, name: str):
    """Lazy tabs: select one through its session-state key, as a click would."""
    at.session_state["analysis_tab"] = name
    at.run()
    assert not at.exception, at.exception
    return at


def test_renders_metrics_tables_and_statistics(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Cases"] == "21"
    assert metrics["Models"] == "2"
    assert metrics["Violation rate (non-identity)"] == f"{7 / 14:.1%}"  # A 6/11 + B 1/3
    # only the open tab (the heatmap, drawn with Vega-Lite: no plotly.js on first paint) is computed
    assert len(at.get("vega_lite_chart")) == 1 and not at.get("plotly_chart")
    open_tab(at, "Robustness")
    models = dataframe_with(at, "stability excl. identity %")
    a = models[models["model"] == "A"].iloc[0]
    assert abs(a["MAD"] - round(0.63 / 4, 3)) < 1e-9  # per observation (SI paper eq. 6)
    assert a["noise floor %"] == "25.0%"  # B has no floor: the column shows text, "—" for B
    assert a["stability %"] == 62.5 and a["stability excl. identity %"] == 25.0
    gap = dataframe_with(at, "gap")
    assert list(gap["originals"]) == [3]  # s3 has meaning cases only: it still counts
    floor = dataframe_with(at, "observations")
    assert list(floor["task"]) == ["reasoning"] and list(floor["observations"]) == [4]
    open_tab(at, "Statistics")
    readings = texts(at)
    assert "A vs B" in readings or "between A and B" in readings
    assert "could be chance" in readings or "unlikely to be chance" in readings


def test_drilldown_selectbox_shows_the_cells_cases(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    cell = at.selectbox(key="analysis_cell")
    # cells are offered worst first: A × ad.format has 2 FAIL of 3
    assert cell.options[0] == "A × ad.format"
    # none is open before a click or a pick: the first paint is the heatmap alone
    assert cell.value is None and not at.dataframe
    assert "Click a cell above" in cell.placeholder
    cell.set_value("A × si.paraphrase").run()
    assert not at.exception, at.exception
    cases = dataframe_with(at, "edit distance")
    assert list(cases["verdict"]) == ["FAIL", "FAIL", "ERROR", "SKIP", "SKIP", "PASS", "PASS"]
    assert "invalid follow-up 1" in texts(at)
    at.selectbox(key=case_choice_key("A × si.paraphrase")).set_value("case-005").run()
    shown = texts(at)
    assert "Reason: differs" in shown
    assert "A ball falls for 2 s. How far does it fall?" in shown  # side-by-side input
    # follow-up output, with the changed answer highlighted by the side-by-side diff
    assert re.search(r"Answer: <span[^>]*>5</span>", shown)
    at.multiselect(key="analysis_drill_verdicts").set_value(["SKIP"]).run()
    cases = dataframe_with(at, "edit distance")
    assert set(cases["case"]) == {"case-008", "case-010"}


def test_another_cell_shows_its_own_case_to_compare(app_db) -> None:
    """Issue 12 item 5: after a case is picked in one cell, picking another cell (by click or
    list) shows that cell's cases in "Case to compare", never the previous cell's case. Each
    cell has its own case box (its own session-state key), so no stale choice can carry over."""
    seed(app_db)
    at = open_page(PAGE)
    at.selectbox(key="analysis_cell").set_value("A × si.paraphrase").run()
    at.selectbox(key=case_choice_key("A × si.paraphrase")).set_value("case-005").run()
    assert "Reason: differs" in texts(at)
    at.selectbox(key="analysis_cell").set_value("B × si.paraphrase").run()
    assert not at.exception, at.exception
    boxes = [box for box in at.selectbox if box.label == "Case to compare side by side"]
    assert [box.key for box in boxes] == [case_choice_key("B × si.paraphrase")]
    assert boxes[0].value in {"case-019", "case-020", "case-021"}  # model B's cases
    snippet = boxes[0].format_func(boxes[0].value).split(" · ")[1]
    assert snippet in {text for text, _ in PROBLEMS.values()}  # the case's input, not its id


def test_filters_narrow_everything(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    at.multiselect(key="analysis_models").set_value(["B"]).run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Cases"] == "3"
    assert at.selectbox(key="analysis_cell").options == ["B × si.paraphrase"]
    at.multiselect(key="analysis_models").set_value([]).run()
    at.multiselect(key="analysis_relations").set_value(["si.identity"]).run()
    assert {m.label: m.value for m in at.metric}["Cases"] == "4"
    at.multiselect(key="analysis_relations").set_value([]).run()
    at.toggle(key="analysis_by_date").set_value(True).run()
    assert not at.exception, at.exception
    at.date_input(key="analysis_dates").set_value(("2026-11-04", "2026-11-05")).run()
    assert {m.label: m.value for m in at.metric}["Cases"] == "3"  # only run-b started then


def test_breakdown_and_run_comparison(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    open_tab(at, "Breakdown")
    breakdown = dataframe_with(at, "category")
    assert set(breakdown["category"]) >= {"physics", "geography", "(none)"}
    at.selectbox(key="analysis_meta_key").set_value("difficulty").run()
    assert set(dataframe_with(at, "difficulty")["difficulty"]) >= {"easy", "hard"}
    open_tab(at, "Compare runs")
    compared = dataframe_with(at, "B − A %")
    para = compared[compared["relation"] == "si.paraphrase"].iloc[0]
    # two runs of the same task, older first: run A is run-a (A: 2/4), run B is run-b (B: 1/3)
    assert para["A violation %"] == 50.0  # run A has every relation: numbers
    assert para["B violation %"] == "33.3%"  # run B lacks some ("—"): text


def test_other_tabs_render(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    open_tab(at, "Distributions")
    assert len(at.get("plotly_chart")) == 1
    at.radio(key="analysis_box_column").set_value("output_similarity").run()
    assert not at.exception, at.exception
    open_tab(at, "Severity")
    assert "18 cases" in texts(at)  # every case with a follow-up input (PASS or FAIL here)
    at.selectbox(key="analysis_proxy").set_value("jaccard").run()
    assert not at.exception, at.exception
    open_tab(at, "Downloads")
    assert len(at.get("download_button")) == 5


def test_heatmap_click_maps_to_a_cell() -> None:
    from app.ui.analysis_view import clicked_cell

    # a plotly chart's points are not the page's heatmap: they select nothing
    event = {"selection": {"points": [{"x": "si.paraphrase", "y": "A", "z": 0.5}]}}
    assert clicked_cell(event) is None
    # the Vega-Lite heatmap's point selection: one dict of the selection's fields per cell
    vega = {"selection": {"cell": [{"model": "B", "relation_id": "si.identity"}]}}
    assert clicked_cell(vega) == "B × si.identity"
    assert clicked_cell({"selection": {"cell": []}}) is None
    assert clicked_cell(None) is None


def test_a_run_judged_by_a_defective_engine_is_flagged_with_a_way_to_repair_it(app_db) -> None:
    """A database judged by engine 1 (a mixed run, defect and all): the page says its numbers
    are wrong until it is rerun, names the run, and offers the rerun."""
    import shutil
    from pathlib import Path

    from tests.golden import build_engine1_fixture as engine1

    shutil.copyfile(Path(engine1.__file__).with_name("engine1_mixed.db"), app_db)
    run_id = engine1.config().run_id(engine1.samples())
    at = open_page(PAGE)
    assert not at.exception, at.exception
    banner = " ".join(w.value for w in at.warning)
    assert "judged by an engine with a known defect — rerun to repair" in banner
    assert run_id in banner
    assert any(b.label == f"Rerun `{run_id}` to repair it" for b in at.button)


def test_no_repair_banner_for_runs_of_todays_engine(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    assert not at.exception, at.exception
    assert "known defect" not in " ".join(w.value for w in at.warning)


def test_an_adaptive_run_is_marked_beside_the_heatmap(app_db) -> None:
    """Issue 27: a run that sampled part of its grid says so, with the calls it saved and the
    confidence-sequence interval that stopped each cell; a full-grid database shows nothing."""
    from core.sampling import RunSampling, SampledCell
    from tests.test_analysis_queries import RUN_OF

    seed(app_db)
    at = open_page(PAGE)
    assert "Adaptive runs" not in texts(at)
    store = Store(app_db)
    store.save_run_sampling(
        RUN_OF["A"],
        RunSampling(
            precision=0.1, budget=None, round_size=20, stop_reason="done (every cell reached "
            "its precision)", calls_sent=30, cache_hits=0, calls_used=30, full_grid_calls=90,
            cells=[SampledCell("A", "si.paraphrase", 40, 4, 0.02, 0.25, stopped=True)],
        ),
    )  # fmt: skip
    store.close()
    # A run stores its sampling before it finishes, and its finish changes the data version;
    # here nothing else changed, so the cached numbers are dropped by hand.
    import streamlit as st

    st.cache_data.clear()
    at = open_page(PAGE)
    assert not at.exception, at.exception
    # 90 - 30 = 60 calls saved.
    assert any("**Adaptive runs** (1)" in i.value and "60 calls saved" in i.value for i in at.info)
    cells = dataframe_with(at, "confidence sequence 95%")
    row = cells[cells["relation"] == "si.paraphrase"].iloc[0]
    assert (row["model"], row["sampling"]) == ("A", "adaptive")
    assert row["confidence sequence 95%"] == "2–25% over 40 inputs (stopped)"
    assert dataframe_with(at, "calls saved").iloc[0]["calls saved"] == "60"
