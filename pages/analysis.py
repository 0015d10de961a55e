"""Analysis: heatmaps with drill-down, distributions, robustness metrics, statistics, downloads."""

from __future__ import annotations

import streamlit as st

from app.ui import analysis_view as view
from app.ui.analysis_filters import render_filters, render_headline
from app.ui.analysis_tabs import AnalysisView, render_tabs
from app.ui.data import data_version, get_store
from app.ui.demo import render_demo_offer
from app.ui.entry import require_entrypoint

require_entrypoint("pages/analysis.py")
st.title("Analysis")
store = get_store()
path, version = store.path, data_version()

opts = view.options(path, version)
if not opts["n_cases"]:
    render_demo_offer(key="analysis")
    st.caption(
        "Or run some relations on the **Probe** page (or `python -m app run …`), then come back "
        "here for heatmaps, box plots and statistics."
    )
    st.stop()
render_demo_offer(key="analysis", empty=False)

flt = render_filters(opts, view.run_relations(path, version))
summary = view.summary(path, version, flt)
if not summary["n_cases"]:
    st.warning("No cases match these filters.")
    st.stop()

render_headline(summary)
runs_by_id = {run["id"]: run for run in opts["runs"]}
render_tabs(AnalysisView(path, version, flt, summary, runs_by_id))
