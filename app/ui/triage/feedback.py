"""Labels fed back into the numbers: progress, false-positive rates, threshold suggestions."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.catalogue.tables import FALSE_POSITIVE_RATES, TRIAGE_FEEDBACK_COLUMNS
from app.analysis.triage.thresholds import Suggestion
from app.ui.data import triage_feedback
from app.ui.triage.filters import CaseFilters
from app.ui.triage.state import apply_suggested_threshold

FEEDBACK_COLUMNS = [
    "relation",
    "n_fail",
    *TRIAGE_FEEDBACK_COLUMNS,
    "confirmed",
    "fp_invalid_followup",
    "fp_oracle",
    "unsure",
]


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


def render_progress_bar(progress: dict[str, Any]) -> None:
    """How many of the filtered FAILs carry a label."""
    total, labeled = progress["total"], progress["labeled"]
    st.progress(labeled / total if total else 0.0, text=f"{labeled} of {total} FAILs labeled")


def render_progress_table(progress: dict[str, Any]) -> None:
    st.subheader("Progress by relation")
    st.dataframe(progress_frame(progress), hide_index=True)


def render_false_positive_rates(feedback: pd.DataFrame) -> None:
    """Per relation: labeled FAILs, false-positive rate with its interval, confirmed rate."""
    st.subheader("False-positive rates")
    st.caption(
        "fp rate = (invalid follow-up + checker wrong) / labeled FAILs, unsure excluded, with a "
        "Wilson 95% interval. Confirmed violation rate = violation rate × (1 − fp rate)."
    )
    st.dataframe(
        feedback[FEEDBACK_COLUMNS],
        hide_index=True,
        column_config={
            column: st.column_config.NumberColumn(format="%.3f") for column in FALSE_POSITIVE_RATES
        },
    )


def render_suggestions(suggestions: list[Suggestion]) -> None:
    """One line per suggestion, with a button that applies a changed threshold."""
    st.subheader("Threshold suggestions")
    if not suggestions:
        st.caption(
            "Label FAILs of relations judged by similarity or |Δ| as 'confirmed' or 'checker "
            "wrong' to get a suggested threshold."
        )
    for position, suggestion in enumerate(suggestions):
        line, action = st.columns([5, 1])
        line.text(suggestion_text(suggestion))
        if suggestion.suggested_threshold is not None and suggestion.changes_threshold:
            action.button(
                f"Apply {suggestion.suggested_threshold:.3f}",
                key=f"triage_apply_{position}",
                on_click=apply_suggested_threshold,
                args=(suggestion.relation_id, suggestion.oracle, suggestion.suggested_threshold),
                help="Recompute this relation's stored PASS/FAIL verdicts (no model calls)",
            )


def render_feedback(store, filters: CaseFilters) -> None:
    """False-positive rates and threshold suggestions for the filtered runs, models, relations."""
    feedback, suggestions = triage_feedback(
        store, filters.run_ids, filters.models, filters.relation_ids
    )
    render_false_positive_rates(feedback)
    render_suggestions(suggestions)
