"""The Analysis page's "Definitions" tab: every metric's exact formula and the paper it follows.

Generated from the metric catalogue (``app.analysis.catalogue``), like the HTML report's section,
so the page, the report and the code that computes the numbers cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from app.analysis.catalogue.definitions import definition_rows
from app.analysis.catalogue.tables import DEFINITION_TABLE
from app.ui import analysis_view as view


def render_definitions(_data: Any = None) -> None:
    """The Definitions tab (it reads no data: the definitions hold for every filter)."""
    st.caption(
        "How every number on this page is computed, and the paper each definition follows. "
        "Δ, similarities and StepScore use all-MiniLM-L6-v2 sentence embeddings."
    )
    st.dataframe(view.frame(definition_rows(), DEFINITION_TABLE), hide_index=True)
