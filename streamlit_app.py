"""Morphscope entrypoint: page config, shared sidebar, navigation."""

import streamlit as st

from app.ui.entry import mark_entrypoint
from app.ui.sidebar import render_sidebar

# No page_icon: a material-icon favicon is fetched from a font CDN, which is offline here.
st.set_page_config(page_title="Morphscope", layout="wide")

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
