"""Triage: label FAILs one at a time; the labels feed false-positive rates and thresholds back."""

import streamlit as st

from app.ui.components import error_boundary
from app.ui.data import get_store
from app.ui.entry import require_entrypoint
from app.ui.triage.case import render_current_case
from app.ui.triage.feedback import render_feedback, render_progress_bar, render_progress_table
from app.ui.triage.filters import render_filters, render_labeler
from app.ui.triage.state import show_flash
from app.ui.triage.team import render_team

require_entrypoint("pages/triage.py")
st.title("Triage")
st.caption(
    "Judge each violation: real, or a false positive of the transformation or of the checker. "
    "Keys: 1–4 label, U undo, N next, P previous."
)
store = get_store()
show_flash()

options = store.triage_options()
if not options["runs"]:
    st.info("No violations recorded yet. Run some relations on the Probe page, then come back.")
    st.stop()

# The name and the progress share a row: the case to label stays above the fold.
top = st.columns([1, 2], vertical_alignment="bottom")
with top[0]:
    labeler = render_labeler()
progress_slot = top[1].empty()
choice = render_filters(store, options, labeler)
progress = store.label_progress(**choice.filters.as_kwargs())
with progress_slot:
    render_progress_bar(progress)
with error_boundary("The case"):
    render_current_case(store, choice.queue(store), progress, labeler)

st.divider()
with error_boundary("The progress table"):
    render_progress_table(progress)
with error_boundary("The false-positive rates"):
    render_feedback(store, choice.filters)
with error_boundary("Team labels"):
    render_team(store, choice.filters)
