"""The Analysis page's tabs: one render function each, taking the page's :class:`AnalysisView`.

Each renderer lays out one tab's widgets; the data comes from the cached readers in
``app.ui.analysis_view``, names and table layouts from ``app.analysis.catalogue``, charts from
``app.analysis.heatmaps`` and ``app.analysis.figures``.
Widget keys are prefixed ``analysis_`` (they are the page's session state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.analysis import figures, heatmaps
from app.analysis.catalogue import definitions, tables
from app.analysis.catalogue.formats import MISSING_META
from app.analysis.heatmap_grid import (
    FEW_CASES,
    WIDE_INTERVAL,
    heatmap_cell_text,
    heatmap_grid,
    heatmap_legend,
)
from app.analysis.noise_floor import floor_rows
from app.analysis.stats import shown_tests
from app.reports.formats import FORMATS
from app.ui import analysis_gate
from app.ui import analysis_view as view
from app.ui.analysis_definitions import render_definitions
from app.ui.compare_runs_text import Sampling, run_choice_text, run_samplings, sampling_note
from app.ui.components import error_boundary, inert, shorten, show_table
from app.ui.heatmap_legend import legend_html
from app.ui.rewrite_yield import render_rewrite_yield
from app.ui.sampling_note import render_sampling_note
from app.ui.shrunk_edits_view import render_shrunk_edits
from core.case_filter import CaseFilter
from core.types import Case

DRILLDOWN_LIMIT = 500  # the case query's own limit (severity.drilldown)


@dataclass(frozen=True)
class AnalysisView:
    """What every tab needs: the DB (path + data version), the filter and its summary."""

    path: str
    version: str | int
    flt: CaseFilter
    summary: dict[str, Any]
    runs_by_id: dict[str, dict[str, Any]] = field(default_factory=dict)


# ---------------------------------------------------------------- heatmaps + drill-down


def render_heatmaps(data: AnalysisView) -> None:
    """Model × relation heatmap; clicking a cell (or picking it) lists and shows its cases."""
    state = st.session_state
    rows = data.summary["rows"]
    metric = st.radio(
        "Colour by",
        list(definitions.HEATMAP_CHOICES),
        format_func=definitions.heatmap_title,
        horizontal=True,
        key="analysis_heatmap_metric",
    )
    # Vega-Lite, not plotly: Streamlit's Vega chunk parses and draws far sooner than plotly.js,
    # and this is the page's first chart.
    st.html(heatmap_box_css(heatmaps.heatmap_min_width(len({r["relation_id"] for r in rows}))))
    st.html(legend_html(heatmap_legend(heatmap_grid(rows, metric))))
    with st.container(key=HEATMAP_BOX), st.container(key=HEATMAP_BOX + "_inner"):
        event = st.vega_lite_chart(
            heatmaps.heatmap_spec(rows, metric),
            on_select="rerun",
            selection_mode=heatmaps.HEATMAP_SELECTION,
            key="analysis_heatmap",
            width="stretch",
        )
    st.caption(
        f"{_cell_text_note(rows)} "
        "The colour follows the value alone; a dashed outline marks a cell resting on few cases "
        f"(interval wider than {WIDE_INTERVAL:.0%} or, without an interval, fewer than "
        f"{FEW_CASES} cases): read it with care. "
        "Click a cell (or pick it below) to see its cases."
    )
    render_sampling_note(data.path, data.version, data.flt, rows)
    worst = definitions.VIOLATION_RATE
    cells = sorted(rows, key=lambda r: (-(r[worst] or 0), r["model"], r["relation_id"]))
    labels = {view.cell_label(r["model"], r["relation_id"]): r for r in cells}
    clicked = view.clicked_cell(event)
    if clicked in labels and clicked != state.get("analysis_last_click"):
        state["analysis_cell"] = clicked
    state["analysis_last_click"] = clicked
    if state.get("analysis_cell") not in labels:
        state.pop("analysis_cell", None)
    # No cell is open until one is clicked or picked: the page's first paint is the heatmap
    # alone (a 500-row case table on top of it held back the first chart of a fresh visit).
    cell = st.selectbox(
        "Drill down into model × relation",
        list(labels),
        index=None,
        placeholder="Click a cell above, or pick one here (worst first)",
        key="analysis_cell",
    )
    if cell is not None:
        _render_drilldown(data, labels[cell], cell)


HEATMAP_BOX = "analysis_heatmap_box"


def heatmap_box_css(min_width_px: int) -> str:
    """The heatmap's box scrolls sideways, and the box inside it (whose width the chart
    stretches to) is never narrower than ``min_width_px``: on a phone the cells keep a
    readable width instead of ~20 px."""
    box = f".st-key-{HEATMAP_BOX}"
    return (
        f"<style>{box}{{overflow-x:auto;overflow-y:hidden}}"
        f"{box}_inner{{min-width:{min_width_px}px}}</style>"
    )


def _cell_text_note(rows: list[dict[str, Any]]) -> str:
    n = "n (the PASS + FAIL cases behind it)"
    printed = heatmap_cell_text(len({r["relation_id"] for r in rows}))
    if printed == "value":
        return f"Each cell prints its value; hover it for {n} and the 95% interval."
    if not printed:
        return f"Hover a cell for its value, {n} and the 95% interval."
    return f"Each cell: the value, {n} and the 95% interval."


def case_choice_key(cell: str) -> str:
    """The "Case to compare" box's session-state key: one per cell, so picking another cell
    (click or list) always shows that cell's cases, never the case picked in the previous one."""
    return f"analysis_case::{cell}"


def case_choice_text(case: Case) -> str:
    """A case in the "Case to compare" list: verdict · input snippet · reason snippet."""
    snippet = shorten(view.fields_text(case.source_input), 50)
    return f"{case.verdict} · {snippet} · {shorten(case.reason, 40)}"


def _render_drilldown(data: AnalysisView, row: dict[str, Any], cell: str) -> None:
    state = st.session_state
    st.markdown(
        f"**{row['n']:,}** cases · pass {row['pass']:,} · fail {row['fail']:,} · skip "
        f"{row['skip']:,} (invalid follow-up {row['invalid_followup']:,}) · error {row['error']:,}"
    )
    verdicts = st.multiselect(
        "Verdicts", view.ALL_VERDICTS, default=view.ALL_VERDICTS, key="analysis_drill_verdicts"
    )
    cases = view.drilldown(
        data.path, data.version, data.flt, row["model"], row["relation_id"], tuple(verdicts)
    )
    if not cases:
        st.info("No cases with these verdicts in this cell.")
        return
    if len(cases) >= DRILLDOWN_LIMIT:
        st.caption(f"Showing the first {DRILLDOWN_LIMIT} cases (FAILs first).")
    rows = [case.table_row() for case in cases]
    show_table(view.frame(rows, tables.CASE_TABLE), tables.CASE_TABLE)
    st.caption("Long text is cut with …: pick the case below to read it whole.")
    by_id = {shown.case.id: shown.case for shown in cases}
    key = case_choice_key(cell)
    if state.get(key) not in by_id:
        state.pop(key, None)
    case_id = st.selectbox(
        "Case to compare side by side",
        list(by_id),
        format_func=lambda cid: case_choice_text(by_id[cid]),
        key=key,
    )
    view.render_case(by_id[case_id])


# ---------------------------------------------------------------- distributions

# per-case column → (choice label, axis label)
DISTRIBUTIONS = {
    "delta": ("Δ (score change)", "Δ"),
    "output_similarity": ("similarity", "output similarity"),
}


def render_distributions(data: AnalysisView) -> None:
    """Box plots of Δ or output similarity by relation and model."""
    column = st.radio(
        "Distribution of",
        list(DISTRIBUTIONS),
        format_func=lambda c: DISTRIBUTIONS[c][0],
        horizontal=True,
        key="analysis_box_column",
    )
    box_rows, stride = view.box(data.path, data.version, data.flt, column)
    if not box_rows:
        st.info(
            "No values yet: Δ needs samples with a reference answer; similarity needs the "
            "embedding model."
        )
        return
    label = DISTRIBUTIONS[column][1]
    st.plotly_chart(figures.box_plot(box_rows, measure_label=label), key="analysis_box")
    note = "Whiskers at 1.5 IQR; outliers not drawn."
    if stride > 1:
        note += f" Based on every {stride}th case."
    st.caption(note)


# ---------------------------------------------------------------- robustness


def render_robustness(data: AnalysisView) -> None:
    """Per-model summary, MAD / stability, noise floor, AgentDiff gap and Triage feedback."""
    summary = data.summary
    model_rows = summary["models"]
    st.subheader("Per model")
    show_table(view.frame(model_rows, tables.MODEL_TABLE), tables.MODEL_TABLE)
    if any(m["mad"] is not None for m in model_rows):
        # two charts, each on its own axis (on twin axes, bars were read on the wrong scale)
        st.plotly_chart(figures.mad_bars(model_rows), key="analysis_mad")
        st.plotly_chart(figures.stability_bars(model_rows), key="analysis_stability")
    st.subheader("Noise floor")
    floors = summary["noise_floor"]
    if floors:
        st.caption(
            "The noise floor is the violation rate of si.identity (the same input, sampled "
            "again), per model × task: one observation per sample × repeat. Net rate = "
            "max(0, rate − floor), for invariance relations only; the line is each model's "
            "floor weighted by its tasks' cases."
        )
        show_table(view.frame(floor_rows(floors), tables.FLOOR_TABLE), tables.FLOOR_TABLE)
        st.plotly_chart(
            figures.violation_with_floor(
                summary["rows"], {m["model"]: m["noise_floor"] for m in model_rows}
            ),
            key="analysis_floor",
        )
    else:
        st.info("No si.identity cases: add the identity relation with repeats to measure noise.")
    if summary.get("step_scores"):
        st.subheader("StepScore (reasoning steps against the reference steps)")
        show_table(
            view.frame(summary["step_scores"], tables.STEP_SCORE_TABLE), tables.STEP_SCORE_TABLE
        )
    if summary["gap"]:
        st.subheader("AgentDiff gap (meaning-bearing − presentation)")
        show_table(view.frame(summary["gap"], tables.GAP_TABLE), tables.GAP_TABLE)
    feedback = view.triage_feedback(data.path, data.version, data.flt)
    if feedback:
        st.subheader("From Triage labels")
        show_table(view.frame(feedback, tables.TRIAGE_FEEDBACK_TABLE), tables.TRIAGE_FEEDBACK_TABLE)
    with st.expander("Model × relation table"):
        show_table(
            view.frame(summary["rows"], tables.MODEL_RELATION_TABLE), tables.MODEL_RELATION_TABLE
        )
    render_rewrite_yield(view.rewrite_yield(data.path, data.version, data.flt))


# ---------------------------------------------------------------- severity

OUTCOMES = {"abs_delta": "|Δ|", "answer_changed": "answer changed"}


def render_severity(data: AnalysisView) -> None:
    """How far each follow-up moved its input (four proxies) against how much the output moved."""
    severity = view.severity(data.path, data.version, data.flt)
    if not severity:
        st.info("No follow-up inputs to measure.")
        return
    controls = st.columns(3)
    proxy = controls[0].selectbox(
        "Severity proxy",
        list(definitions.SEVERITY_PROXIES),
        format_func=definitions.SEVERITY_PROXIES.get,
        key="analysis_proxy",
    )
    outcome = controls[1].radio(
        "Outcome", list(OUTCOMES), format_func=OUTCOMES.get, key="analysis_outcome"
    )
    colour = controls[2].radio(
        "Colour by",
        ["relation_id", "side", "model"],
        format_func=definitions.metric_label,
        key="analysis_colour",
    )
    points = pd.DataFrame(severity)
    points["answer_changed"] = points["answer_changed"].astype("float")
    st.plotly_chart(
        figures.severity_scatter(points, proxy, outcome=outcome, colour_by=colour),
        key="analysis_severity",
    )
    st.caption(f"{len(points)} cases (a fixed sample of at most 2,000).")
    proxies = list(definitions.SEVERITY_PROXIES)
    means = points.groupby("relation_id")[proxies].mean().reset_index()
    layout = tables.table("relation_id", *proxies)
    st.markdown("**Mean severity per relation**")
    show_table(view.frame(means.to_dict("records"), layout), layout)


# ---------------------------------------------------------------- breakdown


def is_categorical(values: list[Any]) -> bool:
    """Whether a metadata key's values are categories (mostly words: "Physics", "Hard"), not
    numbers (a gold score of 0.95, 0.97, … or a reference answer "110", "5.4" split into a bar
    per value). Missing values ("(none)") count for neither."""
    shown = [v for v in values if v != MISSING_META]
    numbers = sum(_is_number(v) for v in shown)
    return bool(shown) and numbers * 2 < len(shown)


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def default_breakdown_key(keys: list[str], rows_of: Callable[[str], list[dict]]) -> str:
    """The first key (most common first) whose values are categories, else the first key:
    "Break down by" opened on the demo's "score", a bar for every gold score value."""
    for key in keys:
        if is_categorical(list({str(row[key]): row[key] for row in rows_of(key)}.values())):
            return key
    return keys[0]


def render_breakdown(data: AnalysisView) -> None:
    """Rates per value of a sample metadata key (category, difficulty, …)."""
    keys = view.meta_keys(data.path, data.version)
    if not keys:
        st.info("The samples have no metadata (such as category or difficulty) to break down by.")
        return
    if st.session_state.get("analysis_meta_key") not in keys:
        st.session_state["analysis_meta_key"] = default_breakdown_key(
            keys, lambda k: view.breakdown(data.path, data.version, data.flt, k)
        )
    key = st.selectbox("Break down by", keys, key="analysis_meta_key")
    rows = view.breakdown(data.path, data.version, data.flt, key)
    metric = st.radio(
        "Show",
        list(definitions.BREAKDOWN_CHOICES),
        format_func=definitions.metric_label,
        horizontal=True,
        key="analysis_meta_metric",
    )
    st.plotly_chart(figures.breakdown_bars(rows, key, metric), key="analysis_breakdown")
    layout = tables.breakdown_table(key)
    show_table(view.frame(rows, layout), layout)


# ---------------------------------------------------------------- statistics

TEST_FAMILIES = (
    ("Between models (Mann-Whitney U)", "mann_whitney"),
    ("Across relations (Kruskal-Wallis)", "kruskal_wallis"),
)


def render_statistics(data: AnalysisView) -> None:
    """Mann-Whitney U between models and Kruskal-Wallis across relations, with readings."""
    results = view.tests(data.path, data.version, data.flt)
    st.caption(
        "On each judged case's |Δ| of the invariance relations (violation 0/1 when there is no "
        "Δ): Mann-Whitney U between models (identity left out) and Kruskal-Wallis across "
        "relations within each model (identity in, as the noise reference); p-values adjusted with "
        f"Benjamini-Hochberg in each family; significant when adjusted p < {results['alpha']}."
    )
    for title, key in TEST_FAMILIES:
        st.subheader(title)
        if not results[key]:
            st.info("Not enough data for this test (it needs two models / two relations).")
            continue
        show_table(view.frame(shown_tests(results[key]), tables.TEST_TABLE), tables.TEST_TABLE)
        for result in results[key]:
            mark = ":green-badge[significant]" if result["significant"] else ":gray-badge[n.s.]"
            st.markdown(f"{mark} {inert(result['reading'])}")


# ---------------------------------------------------------------- compare runs


def compare_legend(
    run_a: dict[str, Any],
    run_b: dict[str, Any],
    samplings: tuple[Sampling | None, Sampling | None] = (None, None),
) -> tuple[str, str]:
    """Legend entries for two runs: "A: endpoint · start time" (then "· T=0.7" where the
    sampling is known), always distinct (the short id is added when the rest match)."""

    def short(run: dict[str, Any], sampling: Sampling | None) -> str:
        started = str(run.get("created_at") or "")[:16].replace("T", " ")
        text = f"{run.get('endpoint_name') or run.get('model') or '?'} · {started}"
        return text if sampling is None else f"{text} · {sampling.short()}"

    a, b = short(run_a, samplings[0]), short(run_b, samplings[1])
    if a == b:
        a, b = f"{a} · {str(run_a['id'])[:6]}", f"{b} · {str(run_b['id'])[:6]}"
    return f"A: {a}", f"B: {b}"


def render_compare_runs(data: AnalysisView) -> None:
    """Two runs side by side: violation rate per relation and the change, then the change's
    significance, the flipped cases and "Set as baseline" (``analysis_gate.render_flips``)."""
    runs_by_id = data.runs_by_id
    run_choices = list(runs_by_id)
    pair = view.default_run_pair(list(runs_by_id.values()))
    if pair is None:
        st.info("Only one run so far: run again (another model, seed or relation set) to compare.")
        return
    relations = view.run_relations(data.path, data.version)
    samplings = run_samplings(data.path, data.version)
    labels = {
        run_id: run_choice_text(run, relations.get(run_id, ()), samplings.get(run_id))
        for run_id, run in runs_by_id.items()
    }
    picks = st.columns(2)
    run_a = picks[0].selectbox(
        "Run A (before)",
        run_choices,
        index=run_choices.index(pair[0]),
        key="analysis_run_a",
        format_func=labels.get,
    )
    run_b = picks[1].selectbox(
        "Run B (after)",
        run_choices,
        index=run_choices.index(pair[1]),
        key="analysis_run_b",
        format_func=labels.get,
    )
    if run_a == run_b:
        st.warning("Pick two different runs.")
        return
    st.caption(sampling_note(samplings.get(run_a, Sampling()), samplings.get(run_b, Sampling())))
    if runs_by_id[run_a].get("task_id") != runs_by_id[run_b].get("task_id"):
        st.caption("These runs are of different tasks: their rates compare different inputs.")
    compared = view.compare(data.path, data.version, run_a, run_b)
    label_a, label_b = compare_legend(
        runs_by_id[run_a], runs_by_id[run_b], (samplings.get(run_a), samplings.get(run_b))
    )
    st.plotly_chart(figures.compare_runs_bars(compared, label_a, label_b), key="analysis_compare")
    show_table(view.frame(compared, tables.COMPARE_TABLE), tables.COMPARE_TABLE)
    analysis_gate.render_flips(data, run_a, run_b)


# ---------------------------------------------------------------- downloads


def render_downloads(data: AnalysisView) -> None:
    """One download button per export; each file is built only when its button is clicked."""
    st.caption(
        f"Everything below covers the {data.summary['n_cases']:,} filtered cases; files are built "
        "when you click. Exports never contain API keys."
    )
    grid = st.columns(len(FORMATS))
    for slot, export in zip(grid, FORMATS.values(), strict=True):
        slot.download_button(
            export.label,
            data=view.export_data(data.path, export.key, data.flt),
            file_name=export.file_name,
            mime=export.mime,
            key=f"analysis_download_{export.key}",
            on_click="ignore",
        )


TABS: dict[str, Callable[[AnalysisView], None]] = {
    "Heatmaps": render_heatmaps,
    "Distributions": render_distributions,
    "Robustness": render_robustness,
    "Severity": render_severity,
    "Breakdown": render_breakdown,
    "Statistics": render_statistics,
    "Compare runs": render_compare_runs,
    "Gate": analysis_gate.render_gate,
    "Shrunk edits": render_shrunk_edits,
    "Downloads": render_downloads,
    "Definitions": render_definitions,
}
"""Tab name → its renderer, in display order."""


# Tabs whose first element is a chart: while their data is aggregated they show a placeholder
# chart, so the browser loads its (large) chart library while the server is still counting.
CHART_TABS = frozenset({"Heatmaps", "Distributions", "Severity", "Breakdown", "Compare runs"})


@dataclass(frozen=True)
class OpenTab:
    """A tab the user has open and the slot its content goes into."""

    name: str
    slot: Any  # an ``st.empty()`` inside the tab


def loading_figure() -> go.Figure:
    """An empty chart saying the numbers are on their way (replaced by the real chart)."""
    figure = go.Figure()
    figure.add_annotation(text="Aggregating…", showarrow=False, font={"size": 16})
    figure.update_layout(height=320, xaxis={"visible": False}, yaxis={"visible": False})
    return figure


def loading_spec() -> dict[str, Any]:
    """The Heatmaps tab's placeholder, in Vega-Lite like the heatmap, so the browser loads the
    Vega chunk (not plotly.js) while the numbers are aggregated."""
    return {
        "data": {"values": [{"text": "Aggregating…"}]},
        "mark": {"type": "text", "fontSize": 16},
        "encoding": {"text": {"field": "text"}},
        "height": 320,
    }


def open_tabs(loading: bool) -> list[OpenTab]:
    """Lay out the tab bar and return the open tab(s), before any data is read.

    ``loading``: the data is not aggregated yet, so an open chart tab shows
    :func:`loading_figure` until :func:`render_open_tabs` fills it."""
    tabs = st.tabs(list(TABS), key="analysis_tab", on_change="rerun")
    opened = []
    for name, tab in zip(TABS, tabs, strict=True):
        if tab.open is not False:  # None when the tab state is not tracked
            slot = tab.empty()
            if loading and name == "Heatmaps":
                slot.vega_lite_chart(loading_spec(), width="stretch")
            elif loading and name in CHART_TABS:
                slot.plotly_chart(loading_figure(), config={"displayModeBar": False})
            opened.append(OpenTab(name, slot))
    return opened


def render_open_tabs(opened: list[OpenTab], data: AnalysisView) -> None:
    """Fill the open tab(s) from :func:`open_tabs` (only those renderers run: a 500k-case
    database stays responsive)."""
    for tab in opened:
        with tab.slot.container(), error_boundary(f"The {tab.name} tab"):
            TABS[tab.name](data)
