"""Analysis: heatmaps with drill-down, distributions, robustness metrics, statistics, downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import analysis_view as view
from app.ui import figures
from app.ui.data import data_version, get_store
from app.ui.demo import render_demo_offer
from app.ui.entry import require_entrypoint
from storage.analysis import CaseFilter

require_entrypoint("pages/analysis.py")
st.title("Analysis")
store = get_store()
path, version = store.path, data_version()
state = st.session_state

opts = view.options(path, version)
if not opts["n_cases"]:
    render_demo_offer(key="analysis")
    st.caption(
        "Or run some relations on the **Probe** page (or `python -m app run …`), then come back "
        "here for heatmaps, box plots and statistics."
    )
    st.stop()

# ---------------------------------------------------------------- filters

runs_by_id = {run["id"]: run for run in opts["runs"]}
# Drop remembered choices that no longer exist (a run was deleted, the DB was switched).
for key, valid in (
    ("analysis_runs", runs_by_id),
    ("analysis_models", opts["models"]),
    ("analysis_tasks", opts["tasks"]),
    ("analysis_relations", opts["relations"]),
):
    if key in state:
        state[key] = [value for value in state[key] if value in valid]
with st.expander("Filters (empty = everything)", expanded=True):
    top = st.columns(3)
    run_ids = top[0].multiselect(
        "Runs",
        list(runs_by_id),
        key="analysis_runs",
        format_func=lambda run_id: (
            f"{runs_by_id[run_id]['model']} · {runs_by_id[run_id]['task_id']} · "
            f"{runs_by_id[run_id]['created_at'][:16].replace('T', ' ')} · {run_id}"
        ),
        placeholder="All runs",
    )
    models = top[1].multiselect("Models", opts["models"], key="analysis_models")
    tasks = top[2].multiselect("Tasks", opts["tasks"], key="analysis_tasks")
    bottom = st.columns([3, 1, 2])
    relations = bottom[0].multiselect("Relations", opts["relations"], key="analysis_relations")
    by_date = bottom[1].toggle("Limit run dates", key="analysis_by_date")
    dates: tuple = ()
    if by_date and opts["date_min"]:
        first, last = pd.Timestamp(opts["date_min"]).date(), pd.Timestamp(opts["date_max"]).date()
        picked = bottom[2].date_input(
            "Runs started between",
            value=(first, last),
            min_value=first,
            max_value=last,
            key="analysis_dates",
        )
        dates = tuple(picked) if isinstance(picked, tuple | list) else (picked,)

flt = CaseFilter.make(
    run_ids=run_ids or None,
    models=models or None,
    tasks=tasks or None,
    relations=relations or None,
    date_from=dates[0] if dates else None,
    date_to=dates[-1] if dates else None,
)
summary = view.summary(path, version, flt)
if not summary["n_cases"]:
    st.warning("No cases match these filters.")
    st.stop()

model_rows = summary["models"]
columns = st.columns(4)
columns[0].metric("Cases", f"{summary['n_cases']:,}")
columns[1].metric("Models", len(model_rows))
columns[2].metric("Relations", len({r["relation_id"] for r in summary["rows"]}))
n_pass = sum(m["pass"] for m in model_rows)
n_fail = sum(m["fail"] for m in model_rows)
columns[3].metric(
    "Violation rate (non-identity)",
    f"{n_fail / (n_pass + n_fail):.1%}" if n_pass + n_fail else "—",
    help="FAIL / (PASS + FAIL) over every non-identity relation; SKIP and ERROR excluded",
)

TABS = [
    "Heatmaps",
    "Distributions",
    "Robustness",
    "Severity",
    "Breakdown",
    "Statistics",
    "Compare runs",
    "Downloads",
]
# Lazy tabs: only the open tab's queries run (a 500k-case database stays responsive).
tabs = dict(zip(TABS, st.tabs(TABS, key="analysis_tab", on_change="rerun"), strict=True))


def is_open(name: str) -> bool:
    return tabs[name].open is not False  # None when the tab state is not tracked


# ---------------------------------------------------------------- heatmaps + drill-down

if is_open("Heatmaps"):
    with tabs["Heatmaps"]:
        metric = st.radio(
            "Colour by",
            [
                "violation_rate",
                "net_violation_rate",
                "mean_delta",
                "mean_similarity",
                "inconsistency_rate",
            ],
            format_func=lambda m: figures.HEATMAP_METRICS[m][0],
            horizontal=True,
            key="analysis_heatmap_metric",
        )
        event = st.plotly_chart(
            figures.heatmap(summary["rows"], metric),
            on_select="rerun",
            selection_mode="points",
            key="analysis_heatmap",
        )
        st.caption("Click a cell (or pick it below) to see its cases.")
        cells = sorted(
            summary["rows"],
            key=lambda r: (-(r["violation_rate"] or 0), r["model"], r["relation_id"]),
        )
        labels = {view.cell_label(r["model"], r["relation_id"]): r for r in cells}
        clicked = view.clicked_cell(event)
        if clicked in labels and clicked != state.get("analysis_last_click"):
            state["analysis_cell"] = clicked
        state["analysis_last_click"] = clicked
        if state.get("analysis_cell") not in labels:
            state.pop("analysis_cell", None)
        cell = st.selectbox("Drill down into model × relation", list(labels), key="analysis_cell")
        row = labels[cell]
        st.markdown(
            f"**{row['n']}** cases · pass {row['pass']} · fail {row['fail']} · skip {row['skip']} "
            f"(invalid follow-up {row['invalid_followup']}) · error {row['error']}"
        )
        verdicts = st.multiselect(
            "Verdicts", view.ALL_VERDICTS, default=view.ALL_VERDICTS, key="analysis_drill_verdicts"
        )
        cases = view.drilldown(
            path, version, flt, row["model"], row["relation_id"], tuple(verdicts)
        )
        if not cases:
            st.info("No cases with these verdicts in this cell.")
        else:
            if len(cases) >= 500:
                st.caption("Showing the first 500 cases (FAILs first).")
            st.dataframe(view.frame(cases, view.CASE_COLUMNS), hide_index=True)
            by_id = {case["id"]: case for case in cases}
            if state.get("analysis_case") not in by_id:
                state.pop("analysis_case", None)
            case_id = st.selectbox(
                "Case to compare side by side",
                list(by_id),
                format_func=lambda cid: (
                    f"{by_id[cid]['verdict']} · {cid} · {by_id[cid]['reason'][:60]}"
                ),
                key="analysis_case",
            )
            view.render_case(by_id[case_id])

# ---------------------------------------------------------------- distributions

if is_open("Distributions"):
    with tabs["Distributions"]:
        column = st.radio(
            "Distribution of",
            ["delta", "output_similarity"],
            format_func=lambda c: {"delta": "Δ (score change)", "output_similarity": "similarity"}[
                c
            ],
            horizontal=True,
            key="analysis_box_column",
        )
        box_rows, stride = view.box(path, version, flt, column)
        if not box_rows:
            st.info(
                "No values yet: Δ needs samples with a reference answer; similarity needs the "
                "embedding model."
            )
        else:
            label = "Δ" if column == "delta" else "output similarity"
            st.plotly_chart(figures.box_plot(box_rows, measure_label=label), key="analysis_box")
            note = "Whiskers at 1.5 IQR; outliers not drawn."
            if stride > 1:
                note += f" Based on every {stride}th case."
            st.caption(note)

# ---------------------------------------------------------------- robustness

if is_open("Robustness"):
    with tabs["Robustness"]:
        st.subheader("Per model")
        st.dataframe(view.frame(model_rows, view.MODEL_COLUMNS), hide_index=True)
        if any(m["mad"] is not None for m in model_rows):
            st.plotly_chart(figures.mad_stability_bars(model_rows), key="analysis_mad")
        st.subheader("Noise floor")
        floors = summary["noise_floor"]
        if floors:
            st.caption(
                "The noise floor is the violation rate of si.identity (the same input, sampled "
                "again). Net rate = max(0, rate − floor)."
            )
            st.plotly_chart(
                figures.violation_with_floor(
                    summary["rows"], {m: f["noise_floor"] for m, f in floors.items()}
                ),
                key="analysis_floor",
            )
        else:
            st.info(
                "No si.identity cases: add the identity relation with repeats to measure noise."
            )
        if summary["gap"]:
            st.subheader("AgentDiff gap (meaning-bearing − presentation)")
            st.dataframe(
                view.frame(
                    summary["gap"],
                    {
                        "model": "model",
                        "n_originals": "originals",
                        "meaning_rate": "meaning-bearing inconsistency",
                        "presentation_rate": "presentation inconsistency",
                        "gap": "gap",
                        "sd_gap": "sd",
                    },
                ),
                hide_index=True,
            )
        feedback = view.triage_feedback(path, version, flt)
        if feedback:
            st.subheader("From Triage labels")
            st.dataframe(
                view.frame(
                    feedback,
                    {
                        "model": "model",
                        "relation_id": "relation",
                        "labeled": "labeled",
                        "fp_rate": "false positives",
                        "fp_ci_low": "FP CI low",
                        "fp_ci_high": "FP CI high",
                        "violation_rate": "violation",
                        "confirmed_violation_rate": "confirmed violation",
                    },
                ),
                hide_index=True,
            )
        with st.expander("Model × relation table"):
            st.dataframe(view.frame(summary["rows"], view.ROW_COLUMNS), hide_index=True)

# ---------------------------------------------------------------- severity

if is_open("Severity"):
    with tabs["Severity"]:
        severity = view.severity(path, version, flt)
        if not severity:
            st.info("No follow-up inputs to measure.")
        else:
            controls = st.columns(3)
            proxy = controls[0].selectbox(
                "Severity proxy",
                list(figures.SEVERITY_PROXIES),
                format_func=figures.SEVERITY_PROXIES.get,
                key="analysis_proxy",
            )
            outcome = controls[1].radio(
                "Outcome",
                ["abs_delta", "answer_changed"],
                format_func={"abs_delta": "|Δ|", "answer_changed": "answer changed"}.get,
                key="analysis_outcome",
            )
            colour = controls[2].radio(
                "Colour by", ["relation_id", "side", "model"], key="analysis_colour"
            )
            points = pd.DataFrame(severity)
            points["answer_changed"] = points["answer_changed"].astype("float")
            st.plotly_chart(
                figures.severity_scatter(points, proxy, outcome=outcome, colour_by=colour),
                key="analysis_severity",
            )
            st.caption(f"{len(points)} cases (a fixed sample of at most 2,000).")
            proxies = ["levenshtein", "jaccard", "cosine_distance", "length_change"]
            means = points.groupby("relation_id")[proxies].mean().round(3).reset_index()
            st.dataframe(means, hide_index=True)

# ---------------------------------------------------------------- breakdown

if is_open("Breakdown"):
    with tabs["Breakdown"]:
        keys = view.meta_keys(path, version)
        if not keys:
            st.info(
                "The samples have no metadata (such as category or difficulty) to break down by."
            )
        else:
            key = st.selectbox("Break down by", keys, key="analysis_meta_key")
            rows = view.breakdown(path, version, flt, key)
            metric = st.radio(
                "Show",
                ["violation_rate", "inconsistency_rate", "mean_delta"],
                horizontal=True,
                key="analysis_meta_metric",
            )
            st.plotly_chart(figures.breakdown_bars(rows, key, metric), key="analysis_breakdown")
            st.dataframe(
                view.frame(
                    rows,
                    {
                        "model": "model",
                        key: key,
                        "samples": "samples",
                        "n": "cases",
                        "violation_rate": "violation",
                        "ci_low": "CI low",
                        "ci_high": "CI high",
                        "mean_delta": "mean Δ",
                        "inconsistency_rate": "inconsistency",
                    },
                ),
                hide_index=True,
            )

# ---------------------------------------------------------------- statistics

if is_open("Statistics"):
    with tabs["Statistics"]:
        results = view.tests(path, version, flt)
        st.caption(
            "Mann-Whitney U between models on cell |Δ| (violation 0/1 when there is no Δ); "
            "Kruskal-Wallis across relations within each model; p-values adjusted with "
            f"Benjamini-Hochberg in each family; significant when adjusted p < {results['alpha']}."
        )
        for title, key in (
            ("Between models (Mann-Whitney U)", "mann_whitney"),
            ("Across relations (Kruskal-Wallis)", "kruskal_wallis"),
        ):
            st.subheader(title)
            if not results[key]:
                st.info("Not enough data for this test (it needs two models / two relations).")
                continue
            st.dataframe(view.frame(results[key], view.TEST_COLUMNS), hide_index=True)
            for result in results[key]:
                st.text(("● " if result["significant"] else "○ ") + result["reading"])

# ---------------------------------------------------------------- compare runs

if is_open("Compare runs"):
    with tabs["Compare runs"]:
        run_choices = list(runs_by_id)
        if len(run_choices) < 2:
            st.info(
                "Only one run so far: run again (another model, seed or relation set) to compare."
            )
        else:
            picks = st.columns(2)
            run_a = picks[0].selectbox(
                "Run A", run_choices, index=0, key="analysis_run_a", format_func=lambda r: r
            )
            run_b = picks[1].selectbox(
                "Run B", run_choices, index=1, key="analysis_run_b", format_func=lambda r: r
            )
            if run_a == run_b:
                st.warning("Pick two different runs.")
            else:
                compared = view.compare(path, version, run_a, run_b)
                label_a = f"A: {runs_by_id[run_a]['model']}"
                label_b = f"B: {runs_by_id[run_b]['model']}"
                st.plotly_chart(
                    figures.compare_runs_bars(compared, label_a, label_b), key="analysis_compare"
                )
                st.dataframe(
                    view.frame(
                        compared,
                        {
                            "relation_id": "relation",
                            "a_n": "A cases",
                            "a_violation_rate": "A violation",
                            "b_n": "B cases",
                            "b_violation_rate": "B violation",
                            "violation_rate_change": "B − A",
                            "a_mean_delta": "A mean Δ",
                            "b_mean_delta": "B mean Δ",
                            "a_mean_similarity": "A similarity",
                            "b_mean_similarity": "B similarity",
                        },
                    ),
                    hide_index=True,
                )

# ---------------------------------------------------------------- downloads

if is_open("Downloads"):
    with tabs["Downloads"]:
        st.caption(
            f"Everything below covers the {summary['n_cases']:,} filtered cases; files are built "
            "when you click. Exports never contain API keys."
        )
        grid = st.columns(5)
        for slot, (label, fmt, name, mime) in zip(
            grid,
            [
                ("Cases (CSV)", "csv", "morphscope_cases.csv", "text/csv"),
                ("Cases (JSONL)", "jsonl", "morphscope_cases.jsonl", "application/jsonl"),
                ("Report (JSON)", "report", "morphscope_report.json", "application/json"),
                ("LLMorph logs (zip)", "llmorph", "morphscope_llmorph.zip", "application/zip"),
                ("HTML report", "html", "morphscope_report.html", "text/html"),
            ],
            strict=True,
        ):
            slot.download_button(
                label,
                data=view.export_data(path, fmt, flt),
                file_name=name,
                mime=mime,
                key=f"analysis_download_{fmt}",
                on_click="ignore",
            )
