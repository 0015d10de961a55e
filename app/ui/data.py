"""Cached data access for the pages. Pages never open SQLite themselves: they call these.

One ``Store`` (one SQLite connection) is kept per session and reopened when the database path
changes; it is never shared through ``st.cache_resource``, because a connection cached there
breaks on the next rerun. Read-heavy aggregates are cached with ``st.cache_data`` keyed by the DB
path and a data version that every write bumps.
"""

from __future__ import annotations

import logging

import streamlit as st

from storage import Store, StoreOpenError, default_db_path

_VERSION_KEY = "data_version"

# Threads that fill the caches outside any session, on purpose (the Analysis prefetch, the
# launcher's warm start). Streamlit warns once per cached call from such a thread ("missing
# ScriptRunContext! This warning can be ignored…"): noise in the terminal of `make run`.
_SESSIONLESS_THREADS: set[str] = set()


class _SessionlessThreadFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        thread = record.args[0] if isinstance(record.args, tuple) and record.args else None
        expected = thread in _SESSIONLESS_THREADS
        return not (expected and "missing ScriptRunContext" in str(record.msg))


_CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


def sessionless_thread(name: str) -> str:
    """Register ``name`` as a thread that reads cached data outside any session (its missing
    session is expected: Streamlit's warning about it is dropped). Returns ``name``."""
    logger = logging.getLogger(_CONTEXT_LOGGER)
    if not any(isinstance(f, _SessionlessThreadFilter) for f in logger.filters):
        logger.addFilter(_SessionlessThreadFilter())
    _SESSIONLESS_THREADS.add(name)
    return name


def get_store() -> Store:
    """This session's store, reopened when the database path changes."""
    store = st.session_state.get("_store")
    if store is None or store.path != str(default_db_path()):
        try:
            store = Store(default_db_path())
        except StoreOpenError as exc:
            # A database that cannot be opened is a message on the page, not a traceback.
            st.error(f"Cannot open the database: {exc}", icon=":material/error:")
            st.stop()
        st.session_state["_store"] = store
    return store


def data_version() -> int:
    """Part of every st.cache_data key so cached aggregates refresh after writes."""
    return st.session_state.get(_VERSION_KEY, 0)


_LATEST_RESULTS = "latest_results_panel"


def claim_results(panel_key: str) -> None:
    """Say that the panel ``panel_key`` made the newest results (a run started, a batch exported
    or imported): the page then shows those alone, never a stale panel's above them."""
    st.session_state[_LATEST_RESULTS] = panel_key


def shows_results(panel_key: str) -> bool:
    """Whether the panel's results are the newest (True until any panel has claimed them)."""
    return st.session_state.get(_LATEST_RESULTS, panel_key) == panel_key


def data_changed() -> None:
    """Call after any write that pages show (new run, label, threshold …)."""
    st.session_state[_VERSION_KEY] = data_version() + 1
    st.cache_data.clear()


@st.cache_data(show_spinner=False)
def _triage_feedback(_store: Store, db_path: str, version: int, filters: tuple) -> tuple:
    # ``db_path`` and ``version`` are the cache key: the store itself is not hashed.
    from app.analysis.triage.false_positives import relation_feedback_table
    from app.analysis.triage.thresholds import suggest_thresholds

    run_ids, models, relation_ids = filters
    table = relation_feedback_table(_store, run_ids, models, relation_ids)
    return table, suggest_thresholds(_store, run_ids)


def triage_feedback(
    store: Store,
    run_ids: list[str] | None,
    models: list[str] | None,
    relation_ids: list[str] | None,
) -> tuple:
    """Triage's false-positive table per relation and its threshold suggestions (cached)."""
    return _triage_feedback(store, store.path, data_version(), (run_ids, models, relation_ids))
