"""Morphscope entrypoint: page config, shared sidebar, navigation."""

import streamlit as st

from app.ui.sidebar import render_sidebar

st.set_page_config(page_title="Morphscope", page_icon="🔬", layout="wide")

pages = [
    st.Page("pages/probe.py", title="Probe", icon="🧪", default=True),
    st.Page("pages/relations.py", title="Relations", icon="🔁"),
    st.Page("pages/endpoints.py", title="Endpoints", icon="🔌"),
    st.Page("pages/analysis.py", title="Analysis", icon="📊"),
    st.Page("pages/triage.py", title="Triage", icon="🏷️"),
]
navigation = st.navigation(pages)
render_sidebar()
navigation.run()
