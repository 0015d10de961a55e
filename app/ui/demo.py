"""The demo offer, on Analysis, on an empty Probe page and in the sidebar: start, progress, stop.

The demo itself runs in a background thread owned by ``app.engine.demo.DEMO_JOBS``; these panels only
start it, poll its status and stop it, so it survives page switches and reruns.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

import streamlit as st

from app.ui.components import page_link
from app.ui.data import data_changed, get_store

if TYPE_CHECKING:
    from app.engine.demo import DemoStatus

_POLL_S = 2
_SEEN_KEY = "demo_parts_seen"


def _demo() -> ModuleType:
    """``app.engine.demo``, imported on first use: it pulls in the runner, the datasets and the
    embeddings, which a page showing only a "Run the demo" button does not need."""
    import app.engine.demo

    return app.engine.demo


def demo_loaded() -> bool:
    """Whether this process has loaded the demo runner. Until it has, no demo can have run
    here (its jobs live in that module), so a panel can show the start button without it."""
    return "app.engine.demo" in sys.modules


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
    _demo().DEMO_JOBS.start(_db_path())


def _progress(status: DemoStatus, key: str) -> None:
    st.progress(status.fraction, text=status.message or "Running the demo…")
    if status.state is not _demo().DemoState.STOPPING and st.button(
        "Stop the demo", key=f"{key}_demo_stop", icon=":material/stop:"
    ):
        _demo().DEMO_JOBS.stop(_db_path())
        st.rerun()


def _outcome(status: DemoStatus, analysis_link: bool) -> None:
    states = _demo().DemoState
    if status.state is states.FINISHED:
        st.success(status.message)
        if analysis_link:
            page_link("pages/analysis.py", "Open Analysis", ":material/analytics:")
    elif status.state is states.STOPPED:
        st.info(status.message)
    elif status.state is states.FAILED:
        st.error(status.message)


@st.fragment(run_every=_POLL_S)
def _live_panel(key: str) -> None:
    # Re-polls by itself while the demo runs; a full rerun when it ends refreshes every table.
    status = _demo().DEMO_JOBS.status(_db_path())
    # A whole-page rerun when a part has finished (the page shows its run) or the demo ended.
    if _refresh_if_new_runs(status) or not status.active:
        st.rerun()
    _progress(status, key)


def render_demo_offer(key: str, empty: bool = True, analysis_link: bool = True) -> None:
    """The demo panel: what it does and "Run the demo" or, while it runs, progress and Stop.

    ``empty`` says the database has no runs yet (the longer introduction is shown);
    ``analysis_link`` offers "Open Analysis" once it finished (not on Analysis itself).
    """
    status = _demo().DEMO_JOBS.status(_db_path())
    _refresh_if_new_runs(status)
    # On a filled database the offer folds away (open while the demo runs or just ended).
    frame = (
        st.container(border=True)
        if empty
        else st.expander("Run the demo", expanded=status.state is not _demo().DemoState.IDLE)
    )
    with frame:
        parts = ", ".join(p.title.lower() for p in _demo().DEMO_PARTS)
        if empty:
            st.markdown(
                "**No runs yet.** Start with the demo: the embedded SmolLM2-135M model answers "
                f"the built-in datasets under a handful of relations ({parts}), sampling at "
                f"temperature {_demo().DEMO_TEMPERATURE:g} so that the noise floor shows. It takes a few "
                "minutes on a laptop CPU and runs in the background; everything is cached, and "
                "you can stop and resume."
            )
        else:
            st.markdown(
                f"**Demo**: the embedded SmolLM2-135M model over the built-in datasets ({parts}), "
                f"sampling at temperature {_demo().DEMO_TEMPERATURE:g}, in the background; "
                "finished cases come from the cache."
            )
        if status.active:
            _live_panel(key)
            return
        _outcome(status, analysis_link)
        if st.button("Run the demo", key=f"{key}_demo", type="primary"):
            start_demo()
            st.rerun()


@st.fragment(run_every=_POLL_S)
def _live_sidebar() -> None:
    status = _demo().DEMO_JOBS.status(_db_path())
    # A whole-page rerun when a part has finished (the page shows its run) or the demo ended.
    if _refresh_if_new_runs(status) or not status.active:
        st.rerun()
    st.markdown("**Demo** :orange-badge[running]")
    _progress(status, "sb")


def render_demo_sidebar() -> None:
    """The sidebar's demo line: its progress and Stop while it runs, else a start button."""
    if not demo_loaded():  # no demo here yet: the button alone, without the runner's imports
        _start_button()
        return
    status = _demo().DEMO_JOBS.status(_db_path())
    if status.active:
        _live_sidebar()
        return
    states = _demo().DemoState
    if status.state in (states.FINISHED, states.STOPPED, states.FAILED):
        st.caption(status.message)  # each outcome's message names the demo itself
    _start_button()


def _start_button() -> None:
    if st.button("Run the demo", key="sb_demo", help="Fill the database with demo runs"):
        start_demo()
        st.rerun()
