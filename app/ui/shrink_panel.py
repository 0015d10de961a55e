"""The "Find the minimal change" button (Triage's case view, Probe's side-by-side view): shrink
the FAIL case in the background, then show the minimal follow-up against the source with the
kept edits highlighted.

The search runs in a thread of its own with its own store connection (a Streamlit rerun on every
click would tear down a search run in the script thread); the page polls it every second.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import streamlit as st

from app.ui.components import fields_text, side_by_side
from core.types import Case, Verdict
from relations.edits import Edit, edits_text
from storage import Store


@dataclass
class _Job:
    started: float = field(default_factory=time.monotonic)
    error: str | None = None
    done: bool = False


_JOBS: dict[str, _Job] = {}
_LOCK = threading.Lock()


def _shrink_in_background(db_path: str, case_id: str, job: _Job) -> None:
    from app.engine.embedder import EmbeddingCache
    from app.engine.shrink_oracle import shrink_case
    from app.engine.workspace import default_embedder

    store = Store(db_path)
    embedder = default_embedder()
    try:
        shrink_case(store, case_id, EmbeddingCache(embedder, store))
    except Exception as exc:  # shown on the page: a failed search is data, not a crash
        job.error = f"{type(exc).__name__}: {exc}"
    finally:
        stop = getattr(embedder, "stop", None)
        if stop is not None:
            stop()
        store.close()
        job.done = True


def start_shrink(store: Store, case_id: str) -> None:
    with _LOCK:
        running = _JOBS.get(case_id)
        if running is not None and not running.done:
            return
        job = _JOBS[case_id] = _Job()
    threading.Thread(
        target=_shrink_in_background,
        args=(str(store.path), case_id, job),
        name=f"morphscope-shrink-{case_id}",
        daemon=True,
    ).start()


def render_shrink_panel(store: Store, case: Case) -> None:
    """The button, the search's progress, or its stored result."""
    if case.verdict != Verdict.FAIL:
        return
    job = _JOBS.get(case.id)
    if job is not None and not job.done:
        _render_running(store, case)
        return
    if job is not None and job.error:
        st.error(f"The search for the minimal change failed: {job.error}")
    waiting = store.shrink_search_round(case.id)
    if waiting is not None:
        st.caption(
            f"A batch shrink of this case waits on the results of round {waiting}: import them "
            "with `morphscope shrink --batch-import RESULTS.jsonl --batch-export NEXT.jsonl`."
        )
    stored = store.shrink_of(case.id)
    label = "Find the minimal change" if stored is None else "Search the minimal change again"
    st.button(
        label,
        key=f"shrink_{case.id}",
        icon=":material/compress:",
        on_click=start_shrink,
        args=(store, case.id),
        help="Delta debugging over the follow-up's edits: the fewest that still flip the answer",
    )
    if stored is not None:
        _render_result(case, stored)


@st.fragment(run_every=1.0)
def _render_running(store: Store, case: Case) -> None:
    job = _JOBS.get(case.id)
    if job is None or job.done:
        st.rerun()  # the whole page: the result replaces the progress
        return
    seconds = time.monotonic() - job.started
    st.info(f"Searching the minimal change… {seconds:.0f} s", icon=":material/hourglass_top:")


def _render_result(case: Case, stored) -> None:
    kept = [Edit.from_dict(e) for e in stored.kept_edits]
    if stored.status in ("minimal", "budget reached"):
        st.markdown(f"**Minimal change** · {stored.status} · {stored.calls} model calls")
        st.text(edits_text(kept, stored.edits_total))
        side_by_side(
            "Source input",
            fields_text(case.source_input),
            "Minimal follow-up",
            fields_text(stored.minimal_followup),
        )
    else:
        st.text(f"Minimal change: {stored.status}. {stored.reason}")
