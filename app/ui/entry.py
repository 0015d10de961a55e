"""Make every page run inside the entrypoint (shared sidebar, wide layout, navigation).

Started with plain ``streamlit run streamlit_app.py``, a freshly started server serves a direct
URL such as /analysis by Streamlit's older ``pages/`` auto-discovery before any session has run
``streamlit_app.py`` — the page then runs alone, without the sidebar or the page config. Pages
call ``require_entrypoint()`` first; if the entrypoint has not run in this session, they hand
over to it. (``make run`` starts the dashboard through ``app.ui.serve``, which turns that
discovery off before the first session: there the hand-over never happens.)
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

# The browser tab's icon, served by the app itself. Without one, Streamlit shows the current
# page's Material icon as the favicon, which the browser fetches from a font CDN: a request
# that leaves the machine (and fails offline) on every page.
FAVICON = str(Path(__file__).with_name("assets") / "favicon.png")

_FLAG = "_morphscope_entrypoint"
_TARGET = "_morphscope_redirect"


def mark_entrypoint() -> None:
    """Called by streamlit_app.py; then continues to a page a direct URL asked for."""
    st.session_state[_FLAG] = True
    target = st.session_state.pop(_TARGET, None)
    if target:
        st.switch_page(target)


def require_entrypoint(page: str) -> None:
    """First line of every page: hand over to the entrypoint if it has not run yet."""
    if not st.session_state.get(_FLAG):
        st.session_state[_TARGET] = page
        st.switch_page("streamlit_app.py")
