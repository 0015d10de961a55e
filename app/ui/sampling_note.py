"""On Analysis, beside the heatmap: which cells rest on adaptive runs (`run --precision` /
`--budget`, Probe's Precision and Budget), the calls those runs saved against the full grid,
each cell's confidence-sequence interval beside its Wilson interval, and a warning for every
cell that pools adaptive and full-grid runs. Nothing shows when no run in the filter is
adaptive."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.sampling import MIXED_NOTE, SamplingView, run_rows, sampling_rows, sampling_view
from core.case_filter import CaseFilter
from storage import Store


@st.cache_data(show_spinner=False, max_entries=64)
def _view(path: str, version: str | int, flt: CaseFilter) -> SamplingView:
    store = Store(path)
    try:
        return sampling_view(store, flt)
    finally:
        store.close()


def render_sampling_note(
    path: str, version: str | int, flt: CaseFilter, rows: list[dict[str, Any]]
) -> None:
    view = _view(path, version, flt)
    if not view.any_adaptive:
        return
    st.info(
        f"**Adaptive runs** ({len(view.runs)}): they sent part of their grid and stopped each "
        "cell once its anytime-valid 95% confidence sequence was narrow enough, or at their "
        f"call budget — {view.calls_saved} calls saved against the full grid. Their cells rest "
        "on fewer cases; the confidence sequence is the interval that decided the stop."
    )
    with st.expander("Sampling of the adaptive runs", expanded=bool(view.mixed_cells)):
        st.dataframe(pd.DataFrame(run_rows(view)), hide_index=True)
        st.dataframe(pd.DataFrame(sampling_rows(view, rows)), hide_index=True)
    for cell in view.mixed_cells:
        st.warning(f"**{cell.model} × {cell.relation_id}** {MIXED_NOTE}.")
