"""The current case: label buttons, navigation, and the case itself side by side with its history.

Model text is untrusted: it goes through ``side_by_side`` (escaped HTML) or ``st.text``, never
through markdown.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.catalogue.definitions import metric_label
from app.analysis.catalogue.formats import Unit, format_shown
from app.ui.components import fields_text, relation_name, side_by_side, verdict_badge
from app.ui.shrink_panel import render_shrink_panel
from app.ui.triage.state import (
    CASE_ID,
    NAME_ASKED,
    NOTE,
    PENDING_LABEL,
    go_to,
    label_as_named,
    label_name,
    request_label,
    undo_label,
)
from core.types import Case
from storage import Store

# Material icons come with Streamlit's own font: they need no emoji font on the machine.
LABEL_BUTTONS: tuple[tuple[str, str, str, str, str], ...] = (
    # (label, button text, icon, shortcut, help)
    ("confirmed", "Confirmed", ":material/check_circle:", "1", "A real violation"),
    ("fp_invalid_followup", "Invalid follow-up", ":material/broken_image:", "2",
     "The transformation broke the meaning"),
    ("fp_oracle", "Checker wrong", ":material/balance:", "3",
     "Outputs are equivalent; the oracle was wrong"),
    ("unsure", "Unsure", ":material/help:", "4", "Cannot tell"),
)  # fmt: skip


def _code(text: Any) -> str:
    """An identifier as inline code; backticks removed so it cannot break out of the span."""
    return "`" + str(text).replace("`", "'") + "`"


def history_frame(history: list[dict[str, Any]]) -> pd.DataFrame:
    """The label history as a table (oldest first); undone entries are marked."""
    records = [
        {
            "time": row["created_at"][:19].replace("T", " "),
            "labeler": row["labeler"],
            "label": label_name(row["label"]),
            "note": row["note"],
            "status": "undone" if row["cancelled"] else ("undo" if row["retracts"] else ""),
        }
        for row in history
    ]
    return pd.DataFrame.from_records(
        records, columns=["time", "labeler", "label", "note", "status"]
    )


def render_case(case: Case, history: list[dict[str, Any]], position: str) -> None:
    """One FAIL case: what it is, inputs and outputs side by side, the oracle's value, history."""
    original = case.original_verdict
    badge = verdict_badge(case.verdict)
    if original and original != case.verdict:
        badge += f" (automatic verdict: {verdict_badge(original)})"
    measured = format_shown(case.value, Unit.DECIMAL)
    st.markdown(
        f"**{position}** · {badge} · **{relation_name(case.relation_id)}** "
        f"{_code(case.relation_id)} · model {_code(case.model)} · task {_code(case.task_id)}"
    )
    checker = metric_label(case.oracle) if case.oracle else "none"
    st.markdown(f"Checked by {checker} · measured value **{measured}**")
    st.caption(
        f"Run {_code(case.run_id)} · sample {_code(case.sample_id)} · changed field "
        f"{_code(case.target)}"
    )
    st.text(f"Reason: {case.reason or ''}")
    side_by_side(
        "Source input",
        fields_text(case.source_input),
        "Follow-up input",
        fields_text(case.followup_input),
    )
    side_by_side("Source output", case.source_output, "Follow-up output", case.followup_output)
    answers = st.columns(2)
    answers[0].text(f"Source answer: {case.source_answer}")
    answers[1].text(f"Follow-up answer: {case.followup_answer}")
    with st.expander("Full prompts"):
        prompts = st.columns(2)
        prompts[0].text(case.source_prompt or "")
        prompts[1].text(case.followup_prompt or "")
    if history:
        st.markdown("**Label history**")
        st.dataframe(history_frame(history), hide_index=True, width="stretch")
    else:
        st.caption("No labels yet.")


def _queue_position(queue: list[str]) -> tuple[str, str | None, str | None]:
    """The current case (kept while it stays in the queue, else the first) and its neighbours."""
    current_id = st.session_state.get(CASE_ID)
    if current_id not in queue:
        current_id = queue[0]
        st.session_state[CASE_ID] = current_id
    index = queue.index(current_id)
    previous_id = queue[index - 1] if index > 0 else None
    next_id = queue[index + 1] if index + 1 < len(queue) else None
    return current_id, previous_id, next_id


@st.dialog("Who is labeling?")
def ask_labeler_name() -> None:
    """Asked on the first label of a browser session: every label carries its labeler's name
    (agreement between labelers needs it right), and nothing fills it in from another session."""
    st.text_input("Your name", key=NAME_ASKED, placeholder="e.g. Ann")
    st.caption("Kept with every label you give in this browser session.")
    st.button("Label", key="triage_name_label", type="primary", on_click=label_as_named)


def render_label_buttons(current_id: str, next_id: str | None) -> None:
    """One button per label (keys 1–4) and the note; the first label asks for a name."""
    buttons = st.columns(len(LABEL_BUTTONS))
    for column, (label, text, icon, shortcut, help_text) in zip(
        buttons, LABEL_BUTTONS, strict=True
    ):
        column.button(
            text,
            icon=icon,
            key=f"triage_label_{label}",
            shortcut=shortcut,
            help=help_text,
            on_click=request_label,
            args=(current_id, label, next_id),
            width="stretch",
        )
    st.text_input("Note (optional)", key=NOTE, placeholder="why, in a few words")
    if st.session_state.get(PENDING_LABEL):
        ask_labeler_name()


def render_navigation(
    current_id: str, previous_id: str | None, next_id: str | None, labeler: str
) -> None:
    """Previous (P), Undo (U) and Next (N)."""
    navigation = st.columns(3)
    navigation[0].button(
        "← Previous",
        key="triage_previous",
        shortcut="P",
        disabled=previous_id is None,
        on_click=go_to,
        args=(previous_id,),
        width="stretch",
    )
    navigation[1].button(
        "↶ Undo",
        key="triage_undo",
        shortcut="U",
        disabled=not labeler,
        on_click=undo_label,
        args=(current_id,),
        width="stretch",
    )
    navigation[2].button(
        "Next →",
        key="triage_next",
        shortcut="N",
        disabled=next_id is None,
        on_click=go_to,
        args=(next_id,),
        width="stretch",
    )


def render_current_case(
    store: Store, queue: list[str], progress: dict[str, Any], labeler: str
) -> None:
    """The case to label now with its buttons, or why there is none."""
    if not queue:
        if progress["total"] and progress["labeled"] == progress["total"]:
            st.success(
                "Every FAIL matching these filters is labeled.", icon=":material/celebration:"
            )
        else:
            st.info("Nothing to triage with these filters. Widen them or untick 'Unlabeled only'.")
        return
    current_id, previous_id, next_id = _queue_position(queue)
    render_label_buttons(current_id, next_id)
    render_navigation(current_id, previous_id, next_id, labeler)
    # Progress counts labels, not the queue's length: the queue of unlabeled cases shrinks as
    # one labels, so "case 1 of 163" would become "case 2 of 152".
    position = f"{progress['labeled']} of {progress['total']} labeled"
    case = store.case(current_id)
    render_case(case, store.label_history(current_id), position)
    render_shrink_panel(store, case)
