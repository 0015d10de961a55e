"""Streamlit pieces of the Triage page: one case side by side, its label history, tables.

Model text is untrusted: it goes through ``side_by_side`` (escaped HTML) or ``st.text``, never
through markdown.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from app.triage import Suggestion
from app.ui.components import side_by_side, verdict_badge

LABEL_BUTTONS: tuple[tuple[str, str, str, str], ...] = (
    # (label, button text, shortcut, help)
    ("confirmed", "✅ Confirmed", "1", "A real violation"),
    ("fp_invalid_followup", "🧨 Invalid follow-up", "2", "The transformation broke the meaning"),
    ("fp_oracle", "⚖️ Checker wrong", "3", "Outputs are equivalent; the oracle was wrong"),
    ("unsure", "❔ Unsure", "4", "Cannot tell"),
)


def _code(text: Any) -> str:
    """An identifier as inline code; backticks removed so it cannot break out of the span."""
    return "`" + str(text).replace("`", "'") + "`"


def fields_text(raw: str | dict | None) -> str:
    """A case's input fields (stored as JSON) as readable text: the value alone for one field,
    ``name: value`` lines for several."""
    if raw is None:
        return ""
    fields: Any = raw
    if isinstance(raw, str):
        try:
            fields = json.loads(raw)
        except json.JSONDecodeError:
            return raw
    if not isinstance(fields, dict):
        return str(fields)
    if len(fields) == 1:
        return str(next(iter(fields.values())))
    return "\n".join(f"{name}: {value}" for name, value in fields.items())


def history_frame(history: list[dict[str, Any]]) -> pd.DataFrame:
    """The label history as a table (oldest first); undone entries are marked."""
    records = [
        {
            "time": row["created_at"][:19].replace("T", " "),
            "labeler": row["labeler"],
            "label": row["label"],
            "note": row["note"],
            "status": "undone" if row["cancelled"] else ("undo" if row["retracts"] else ""),
        }
        for row in history
    ]
    return pd.DataFrame.from_records(
        records, columns=["time", "labeler", "label", "note", "status"]
    )


def render_case(case: dict[str, Any], history: list[dict[str, Any]], position: str) -> None:
    """One FAIL case: what it is, inputs and outputs side by side, the oracle's value, history."""
    original = case.get("original_verdict")
    badge = verdict_badge(case["verdict"])
    if original and original != case["verdict"]:
        badge += f" (automatic verdict: {verdict_badge(original)})"
    value = case.get("value")
    measured = "—" if value is None else f"{value:.3f}"
    st.markdown(
        f"**{position}** · {badge} · relation {_code(case['relation_id'])} · "
        f"model {_code(case['model'])} · task {_code(case['task_id'])}"
    )
    st.markdown(f"Oracle {_code(case.get('oracle') or 'none')} · measured value **{measured}**")
    st.caption(
        f"Run {_code(case['run_id'])} · sample {_code(case['sample_id'])} · "
        f"target {_code(case['target'])}"
    )
    st.text(f"Reason: {case.get('reason') or ''}")
    side_by_side(
        "Source input",
        fields_text(case.get("source_input")),
        "Follow-up input",
        fields_text(case.get("followup_input")),
    )
    side_by_side(
        "Source output", case.get("source_output"), "Follow-up output", case.get("followup_output")
    )
    answers = st.columns(2)
    answers[0].text(f"Source answer: {case.get('source_answer')}")
    answers[1].text(f"Follow-up answer: {case.get('followup_answer')}")
    with st.expander("Full prompts"):
        prompts = st.columns(2)
        prompts[0].text(case.get("source_prompt") or "")
        prompts[1].text(case.get("followup_prompt") or "")
    if history:
        st.markdown("**Label history**")
        st.dataframe(history_frame(history), hide_index=True, width="stretch")
    else:
        st.caption("No labels yet.")


def progress_frame(progress: dict[str, Any]) -> pd.DataFrame:
    """Per-relation progress: labeled / total FAILs and the label counts."""
    columns = [
        "relation_id",
        "total",
        "labeled",
        "confirmed",
        "fp_invalid_followup",
        "fp_oracle",
        "unsure",
    ]
    return pd.DataFrame.from_records(progress["by_relation"], columns=columns)


def suggestion_text(suggestion: Suggestion) -> str:
    """One line describing a suggestion (plain text, no markup)."""
    current = (
        "unknown" if suggestion.current_threshold is None else f"{suggestion.current_threshold:.3f}"
    )
    head = (
        f"{suggestion.relation_id} ({suggestion.oracle}): n={suggestion.n} "
        f"({suggestion.n_confirmed} confirmed, {suggestion.n_fp_oracle} fp_oracle), "
        f"threshold now {current}"
    )
    if suggestion.suggested_threshold is None:
        return f"{head} — {suggestion.note}"
    return (
        f"{head} → suggested {suggestion.suggested_threshold:.3f}; labeled accuracy "
        f"{suggestion.accuracy_before:.0%} → {suggestion.accuracy_after:.0%}; "
        f"{suggestion.would_change} stored verdict(s) would change"
    )
