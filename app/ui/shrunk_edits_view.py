"""The Analysis page's **Shrunk edits** tab: which single changes flip a model's answer most
often, per relation and model, from every FAIL case shrunk to its minimal change, with a CSV.

The table is ``app.analysis.shrunk_edits.flipping_edits`` — what `morphscope shrink --summary`
prints — over the stored shrinks of the filtered cases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from app.analysis.shrunk_edits import flipping_edits, flipping_edits_csv
from core.case_filter import CaseFilter
from storage import Store

if TYPE_CHECKING:
    from app.ui.analysis_tabs import AnalysisView

# Statuses whose shrink kept a subset of the edits (the others say why there is none).
KEPT_STATUSES = ("minimal", "budget reached")


@st.cache_data(show_spinner=False, max_entries=32)
def shrunk_edits(path: str, version: Any, flt: CaseFilter) -> tuple[list[dict], dict[str, int]]:
    """The flipping-edit table of the filtered cases, and their shrinks' counts by status."""
    store = Store(path)
    try:
        table = flipping_edits(store.shrunk_edit_rows(flt=flt))
        return table, store.shrink_status_counts(flt)
    finally:
        store.close()


def counts_text(counts: dict[str, int]) -> str:
    """'14 FAIL cases shrunk: 12 minimal, 1 budget reached, 1 not shrinkable.'"""
    total = sum(counts.values())
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=_by_kept))
    return f"{total} FAIL case{'s' if total != 1 else ''} shrunk: {parts}."


def _by_kept(item: tuple[str, int]) -> tuple[int, str]:
    status = item[0]
    return (KEPT_STATUSES.index(status) if status in KEPT_STATUSES else len(KEPT_STATUSES), status)


def headline_text(top: dict[str, Any]) -> str:
    """The edit that flips answers most often, in words."""
    return (
        f"Most often, the change {top['edit']} alone is enough to flip {top['model']}'s answer "
        f"under {top['relation_id']}: in {top['cases']} shrunk case"
        f"{'s' if top['cases'] != 1 else ''} ({top['share']:.0%} of that relation × model's)."
    )


def render_shrunk_edits(data: AnalysisView) -> None:
    table, counts = shrunk_edits(data.path, data.version, data.flt)
    st.caption(
        "A shrunk case keeps the fewest of its follow-up's edits that still flip the answer "
        "(delta debugging). Across cases, the same kept change names what a model is fragile "
        "to. Shrink FAIL cases in **Triage** (*Find the minimal change*) or with "
        "`morphscope shrink --run RUN_ID`."
    )
    if not counts:
        st.info("None of the filtered cases has been shrunk yet.")
        return
    st.markdown(counts_text(counts))
    if not table:
        st.info("No shrunk case kept a subset of its edits (see the statuses above).")
        return
    st.markdown(headline_text(table[0]))
    st.dataframe(
        pd.DataFrame(table).rename(
            columns={"relation_id": "relation", "edit": "change that flips", "cases": "cases"}
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "share": st.column_config.NumberColumn(
                "share of the cell's shrunk cases", format="percent"
            )
        },
        key="analysis_shrunk_edits_table",
    )
    st.download_button(
        "Download as CSV",
        data=flipping_edits_csv(table),
        file_name="morphscope-flipping-edits.csv",
        mime="text/csv",
        key="analysis_shrunk_edits_csv",
        on_click="ignore",
    )
