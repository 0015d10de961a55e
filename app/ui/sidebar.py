"""The shared sidebar: the embedded model server's state and the database in use."""

from __future__ import annotations

import streamlit as st

from app.engine.model_server import ServerState, get_server
from app.ui.data import data_changed
from app.ui.demo import render_demo_sidebar
from core.settings import settings
from storage import default_db_path

STATE_BADGES = {
    ServerState.READY: ":green-badge[ready]",
    ServerState.STARTING: ":orange-badge[starting…]",
    ServerState.FAILED: ":red-badge[failed]",
    ServerState.STOPPED: ":gray-badge[stopped]",
}


@st.fragment(run_every=3)
def _live_status() -> None:
    # Re-polls by itself (every 3 s) so "starting…" turns into "ready" without a page rerun.
    status = get_server().status()
    st.markdown(f"**Embedded model** {STATE_BADGES[status.state]}")
    st.caption(f"SmolLM2-135M-Instruct · {status.message}")


def _server_status():
    status = get_server().status()
    if status.state is ServerState.STARTING:
        _live_status()
    else:
        st.markdown(f"**Embedded model** {STATE_BADGES[status.state]}")
        st.caption(f"SmolLM2-135M-Instruct · {status.message}")
    return status


def render_sidebar() -> None:
    # The embedded model is the default endpoint: start it in the background on first load so
    # it is ready by the time the user presses Run (tests switch this off).
    if settings().autostart:
        get_server().ensure_started()
    with st.sidebar:
        status = _server_status()
        if status.state is ServerState.STOPPED and st.button(
            "Start embedded model", key="sb_start"
        ):
            get_server().ensure_started()
            st.rerun()
        if status.state is ServerState.FAILED:
            if st.button("Restart embedded model", key="sb_restart"):
                get_server().stop()
                get_server().ensure_started()
                st.rerun()
            with st.expander("Server log"):
                st.code(status.log_tail or "(empty)", language="text")
        st.divider()
        render_demo_sidebar()
        st.divider()
        st.caption(f"Database: `{default_db_path()}`")
        if st.button("Refresh data", key="sb_refresh", help="Clear cached tables and charts"):
            data_changed()
            st.rerun()
