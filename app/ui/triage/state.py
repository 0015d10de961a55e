"""The Triage page's session state and the callbacks of its buttons (they run before the rerun).

Every key starts with ``triage_``. A callback cannot show anything itself: it leaves a one-shot
message (a "flash") that the next run of the page shows as a toast, which floats over the page
instead of pushing the case down.
"""

from __future__ import annotations

import streamlit as st

from app.analysis.catalogue.definitions import metric
from app.analysis.triage.thresholds import apply_threshold
from app.ui.components import relation_name
from app.ui.data import data_changed, get_store

LABELER = "triage_labeler"
NOTE = "triage_note"
CASE_ID = "triage_case_id"
UNDO_STACK = "triage_undo_stack"
FLASH = "triage_flash"
# A label asked for before the labeler gave a name: (case id, label, next case id).
PENDING_LABEL = "triage_pending_label"
NAME_ASKED = "triage_name_asked"


def label_name(label: str) -> str:
    """The label as its Triage button says it ("checker wrong" for fp_oracle)."""
    return metric(label).label


def flash(kind: str, message: str) -> None:
    """Leave ``message`` for the next run; ``kind`` is a Streamlit element: success, info, error."""
    st.session_state[FLASH] = (kind, message)


FLASH_ICONS = {
    "success": ":material/check_circle:",
    "info": ":material/info:",
    "error": ":material/error:",
}


def show_flash() -> None:
    """Show (once) the message a callback or an import left, as a toast: it does not move the
    case and its label buttons (keyboard labeling keeps its place). Errors stay longer."""
    message = st.session_state.pop(FLASH, None)
    if message:
        kind, text = message
        duration = "long" if kind == "error" else "short"
        st.toast(text, icon=FLASH_ICONS.get(kind, FLASH_ICONS["info"]), duration=duration)


def request_label(case_id: str, label: str, next_id: str | None) -> None:
    """A label button: label now, or first ask who is labeling (the name is this browser
    session's only, so two colleagues never label under one name)."""
    if st.session_state.get(LABELER, "").strip():
        label_case(case_id, label, next_id)
    else:
        st.session_state[PENDING_LABEL] = (case_id, label, next_id)


def label_as_named() -> None:
    """The name dialog's button: keep the name for this session, then give the pending label."""
    state = st.session_state
    name = state.get(NAME_ASKED, "").strip()
    pending = state.pop(PENDING_LABEL, None)
    if not name or pending is None:
        return
    state[LABELER] = name
    label_case(*pending)


def label_case(case_id: str, label: str, next_id: str | None) -> None:
    """Label the case with the note and labeler typed in, then move on to ``next_id``."""
    state = st.session_state
    try:
        get_store().add_label(case_id, label, state.get(NOTE, ""), state[LABELER].strip())
    except ValueError as error:  # e.g. a threshold applied meanwhile made it a PASS
        flash("error", str(error))
        return
    state.setdefault(UNDO_STACK, []).append(case_id)
    state[CASE_ID] = next_id
    state[NOTE] = ""
    flash("success", f"Labeled “{label_name(label)}”.")
    data_changed()


def undo_label(current_id: str | None) -> None:
    """Retract this labeler's latest label on the last case labeled here (else the current one)."""
    state = st.session_state
    stack = state.setdefault(UNDO_STACK, [])
    case_id = stack.pop() if stack else current_id
    if case_id is None:
        return
    undone = get_store().undo_label(case_id, state.get(LABELER, "").strip())
    if undone is None:
        flash("info", "Nothing of yours to undo on this case.")
        return
    state[CASE_ID] = case_id
    flash("success", f"Undid “{label_name(undone['label'])}”: the case is back in the queue.")
    data_changed()


def go_to(case_id: str | None) -> None:
    st.session_state[CASE_ID] = case_id


def apply_suggested_threshold(relation_id: str, oracle: str, threshold: float) -> None:
    """Recompute the relation's stored verdicts under ``threshold`` (no model calls)."""
    try:
        result = apply_threshold(get_store(), relation_id, threshold, oracle=oracle)
    except ValueError as error:
        flash("error", str(error))
        return
    flash(
        "success",
        f"Threshold {threshold:.3f} applied to {relation_name(relation_id)}: {result['changed']} of "
        f"{result['considered']} verdicts changed ({result['to_pass']} → PASS, "
        f"{result['to_fail']} → FAIL). The automatic verdicts are kept.",
    )
    data_changed()
