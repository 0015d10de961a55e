"""Labels fed back into the numbers: progress, false-positive rates, threshold suggestions."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.catalogue.definitions import metric_label
from app.analysis.catalogue.tables import TRIAGE_PROGRESS_TABLE, TRIAGE_RATES_TABLE
from app.analysis.triage.thresholds import Suggestion
from app.ui.analysis_view import frame
from app.ui.components import page_link, show_table
from app.ui.data import triage_feedback
from app.ui.triage.filters import CaseFilters
from app.ui.triage.state import apply_suggested_threshold


def progress_frame(progress: dict[str, Any]) -> pd.DataFrame:
    """Per-relation progress: labeled / all FAILs and the label counts, under their headers."""
    rows = [{**row, "n_fail": row["total"]} for row in progress["by_relation"]]
    return frame(rows, TRIAGE_PROGRESS_TABLE)


def rates_frame(feedback: pd.DataFrame) -> pd.DataFrame:
    """The false-positive rates per relation, under their headers (rates as percentages)."""
    rows = feedback.rename(columns={"relation": "relation_id"}).to_dict("records")
    return frame(rows, TRIAGE_RATES_TABLE)


def suggestion_text(suggestion: Suggestion) -> str:
    """One line describing a suggestion (plain text, no markup)."""
    current = (
        "unknown" if suggestion.current_threshold is None else f"{suggestion.current_threshold:.3f}"
    )
    head = (
        f"{suggestion.relation_id} ({metric_label(suggestion.oracle)}): {suggestion.n} labeled "
        f"({suggestion.n_confirmed} confirmed, {suggestion.n_fp_oracle} checker wrong), "
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
    show_table(progress_frame(progress), TRIAGE_PROGRESS_TABLE)


def render_false_positive_rates(feedback: pd.DataFrame) -> None:
    """Per relation: labeled FAILs, false-positive rate with its interval, confirmed rate."""
    st.subheader("False-positive rates")
    st.caption(
        "False-positive rate = (invalid follow-up + checker wrong) / labeled FAILs, unsure "
        "excluded, with a Wilson 95% interval. Confirmed violation rate = violation rate × "
        "(1 − false-positive rate)."
    )
    show_table(rates_frame(feedback), TRIAGE_RATES_TABLE)
    page_link(
        "pages/analysis.py",
        "The labels' effect on every model's numbers: Analysis → Robustness",
        ":material/insights:",
        help="Analysis's Robustness tab shows the confirmed violation rates per model",
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
