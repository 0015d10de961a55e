"""Probe: pick an endpoint, a task, relations and inputs; run; read violations side by side."""

import streamlit as st

from app.ui.entry import require_entrypoint

require_entrypoint("pages/probe.py")
st.title("Probe")
st.caption(
    "Metamorphic testing: transform each input, ask the model both versions, and flag the "
    "follow-ups whose output breaks the expected relation."
)

# The panels pull in the model clients and the runner (seconds of imports on a cold server):
# imported after the title so the first load shows the page's layout at once.
from app.ui.batch_panel import render_batch_panel, render_pending_batches  # noqa: E402
from app.ui.components import error_boundary  # noqa: E402
from app.ui.data import get_store  # noqa: E402
from app.ui.demo import render_demo_offer  # noqa: E402
from app.ui.probe_form import render_run_form  # noqa: E402
from app.ui.probe_results import render_latest_results  # noqa: E402
from app.ui.probe_run import render_interrupted_notice, render_run  # noqa: E402

store = get_store()
# An empty database gets the demo offer first; it goes once this page has made the first run.
demo_offer = st.empty()
offered = not store.runs()
if offered:
    with demo_offer.container():
        render_demo_offer(key="probe")

choices = render_run_form(store, key="probe")
with error_boundary("The run"):
    render_run(store, choices, key="probe")
if offered and store.runs():
    demo_offer.empty()
with error_boundary("Batch mode"):
    render_batch_panel(store, choices, key="probe_batch")
with error_boundary("The interrupted-run notice"):
    render_interrupted_notice(store, key="probe")
with error_boundary("The batch-run notice"):
    render_pending_batches(store, key="probe_batch")
with error_boundary("The results"):
    render_latest_results(store, key="probe", choices=choices)
