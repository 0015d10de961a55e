"""Morphscope entrypoint: page config, shared sidebar, navigation."""

import streamlit as st

from app.ui.entry import FAVICON, mark_entrypoint
from app.ui.sidebar import render_sidebar

# A local favicon: otherwise each page's Material icon is fetched from a font CDN.
st.set_page_config(page_title="Morphscope", page_icon=FAVICON, layout="wide")

pages = [
    st.Page("pages/probe.py", title="Probe", icon=":material/science:", default=True),
    st.Page("pages/relations.py", title="Relations", icon=":material/swap_horiz:"),
    st.Page("pages/endpoints.py", title="Endpoints", icon=":material/power:"),
    st.Page("pages/analysis.py", title="Analysis", icon=":material/analytics:"),
    st.Page("pages/triage.py", title="Triage", icon=":material/label:"),
]
navigation = st.navigation(pages)
mark_entrypoint()
render_sidebar()
navigation.run()
