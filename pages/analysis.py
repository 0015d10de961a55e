"""Analysis: heatmaps with drill-down, distributions, robustness metrics, statistics, downloads."""

from __future__ import annotations

import streamlit as st

from app.ui import analysis_view as view
from app.ui.analysis_filters import render_filters, render_headline
from app.ui.analysis_tabs import AnalysisView, open_tabs, render_open_tabs
from app.ui.data import get_store
from app.ui.demo import render_demo_offer
from app.ui.entry import require_entrypoint
from storage import default_db_path

# The unfiltered numbers start counting now, while a cold server still imports and redirects.
view.prefetch(str(default_db_path()))
require_entrypoint("pages/analysis.py")
st.title("Analysis")
store = get_store()
# Read from the database itself: a run or a label added anywhere refreshes the cached numbers.
path, version = store.path, store.data_version()
view.render_damage(path)  # a damaged file is said before any number is shown

opts = view.options(path, version)
if not opts["n_cases"]:
    render_demo_offer(key="analysis", analysis_link=False)
    st.caption(
        "Or run some relations on the **Probe** page (or `morphscope run …`), then come back "
        "here for heatmaps, box plots and statistics."
    )
    st.stop()
view.render_flagged_runs(store, view.flagged(path, version))
# The demo panel is filled after the first chart: its runner's imports need not come first.
demo_slot = st.container()

flt = render_filters(opts, view.run_relations(path, version))
# Laid out before the numbers exist: while they are aggregated, the open chart tab shows a
# placeholder (the browser meanwhile loads its chart library); then headline and tab fill in.
headline, tab_area = st.container(), st.empty()
with tab_area.container():
    tabs = open_tabs(loading=not view.is_aggregated(path, version, flt))
summary = view.summary(path, version, flt)
if not summary["n_cases"]:
    tab_area.empty()
    headline.warning("No cases match these filters.")
    with demo_slot:
        render_demo_offer(key="analysis", empty=False, analysis_link=False)
    st.stop()

with headline:
    render_headline(summary)
runs_by_id = {run["id"]: run for run in opts["runs"]}
render_open_tabs(tabs, AnalysisView(path, version, flt, summary, runs_by_id))
with demo_slot:
    render_demo_offer(key="analysis", empty=False, analysis_link=False)
