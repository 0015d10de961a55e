"""The demo offer, on Analysis, on an empty Probe page and in the sidebar: start, progress, stop.

The demo itself runs in a background thread owned by ``app.demo.DEMO_JOBS``; these panels only
start it, poll its status and stop it, so it survives page switches and reruns.
"""

from __future__ import annotations

import streamlit as st

from app.demo import DEMO_JOBS, DEMO_PARTS, DemoState, DemoStatus
from app.ui.components import page_link
from app.ui.data import data_changed, get_store

_POLL_S = 2
_SEEN_KEY = "demo_parts_seen"


def _db_path() -> str:
    return str(get_store().path)


def _refresh_if_new_runs(status: DemoStatus) -> bool:
    """Whether a demo part finished since this session last looked (its caches are then cleared).

    Each finished part is a new run: cached tables must see it without a manual refresh.
    """
    if status.parts_done == st.session_state.get(_SEEN_KEY, 0):
        return False
    st.session_state[_SEEN_KEY] = status.parts_done
    data_changed()
    return True


def start_demo() -> None:
    """Start the demo on this session's database (no-op while it runs)."""
    st.session_state[_SEEN_KEY] = 0
    DEMO_JOBS.start(_db_path())


def _progress(status: DemoStatus, key: str) -> None:
    st.progress(status.fraction, text=status.message or "Running the demo…")
    if status.state is not DemoState.STOPPING and st.button(
        "Stop the demo", key=f"{key}_demo_stop", icon=":material/stop:"
    ):
        DEMO_JOBS.stop(_db_path())
        st.rerun()


def _outcome(status: DemoStatus) -> None:
    if status.state is DemoState.FINISHED:
        st.success(status.message)
        page_link("pages/analysis.py", "Open Analysis", ":material/analytics:")
    elif status.state is DemoState.STOPPED:
        st.info(status.message)
    elif status.state is DemoState.FAILED:
        st.error(status.message)


@st.fragment(run_every=_POLL_S)
def _live_panel(key: str) -> None:
    # Re-polls by itself while the demo runs; a full rerun when it ends refreshes every table.
    status = DEMO_JOBS.status(_db_path())
    # A whole-page rerun when a part has finished (the page shows its run) or the demo ended.
    if _refresh_if_new_runs(status) or not status.active:
        st.rerun()
    _progress(status, key)


def render_demo_offer(key: str, empty: bool = True) -> None:
    """The demo panel: what it does and "Run the demo" or, while it runs, progress and Stop.

    ``empty`` says the database has no runs yet (the longer introduction is shown).
    """
    status = DEMO_JOBS.status(_db_path())
    _refresh_if_new_runs(status)
    # On a filled database the offer folds away (open while the demo runs or just ended).
    frame = (
        st.container(border=True)
        if empty
        else st.expander("Run the demo", expanded=status.state is not DemoState.IDLE)
    )
    with frame:
        parts = ", ".join(p.title.lower() for p in DEMO_PARTS)
        if empty:
            st.markdown(
                "**No runs yet.** Start with the demo: the embedded SmolLM2-135M model answers "
                f"the built-in datasets under a handful of relations ({parts}). It takes a few "
                "minutes on a laptop CPU and runs in the background; everything is cached, and "
                "you can stop and resume."
            )
        else:
            st.markdown(
                f"**Demo**: the embedded SmolLM2-135M model over the built-in datasets ({parts}), "
                "in the background; finished cases come from the cache."
            )
        if status.active:
            _live_panel(key)
            return
        _outcome(status)
        if st.button("Run the demo", key=f"{key}_demo", type="primary"):
            start_demo()
            st.rerun()


@st.fragment(run_every=_POLL_S)
def _live_sidebar() -> None:
    status = DEMO_JOBS.status(_db_path())
    # A whole-page rerun when a part has finished (the page shows its run) or the demo ended.
    if _refresh_if_new_runs(status) or not status.active:
        st.rerun()
    st.markdown("**Demo** :orange-badge[running]")
    _progress(status, "sb")


def render_demo_sidebar() -> None:
    """The sidebar's demo line: its progress and Stop while it runs, else a start button."""
    status = DEMO_JOBS.status(_db_path())
    if status.active:
        _live_sidebar()
        return
    if status.state is DemoState.FINISHED or status.state in (DemoState.STOPPED, DemoState.FAILED):
        st.caption(f"Demo: {status.message}")
    if st.button("Run the demo", key="sb_demo", help="Fill the database with demo runs"):
        start_demo()
        st.rerun()
