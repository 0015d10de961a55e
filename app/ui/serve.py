"""Serve the dashboard with a warm start: ``python -m app.ui.serve [streamlit run options]``.

``streamlit run`` imports nothing of ours until the first browser session runs a page, so the
first visitor waits for the page's imports and, on the Analysis page, for the whole database to be
aggregated (≈ 1 s at 500,000 cases). This launcher starts the same server (every option is passed
to ``streamlit run streamlit_app.py``), and:

- before the server listens, imports the modules the pages import (found in ``pages/*.py``
  themselves, so the list never goes stale) and turns off Streamlit's legacy ``pages/``
  discovery, so a direct URL such as ``/analysis`` is served by ``st.navigation`` at once;
- puts a script in the served ``index.html`` that names the app's root, so a page loaded by
  its URL asks no page-prefixed ``_stcore`` URL first (``app.ui.base_url_hint``);
- in a background thread, once the server's runtime exists, starts the embedded model, as the
  first page load would (unless ``MORPHSCOPE_AUTOSTART=0``), and aggregates the Analysis page's
  unfiltered view of the default database into the page's own ``st.cache_data`` caches (keyed
  by the database's data version: if anything is written meanwhile, the page simply computes
  the new numbers).

Nothing of this is required: a page that comes first waits for the same cached computation
(``st.cache_data`` computes a key once) or does it itself; a failure is logged, never raised.
"""

from __future__ import annotations

import ast
import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from app.ui import base_url_hint
from core.settings import settings

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "streamlit_app.py"
PAGES = ROOT / "pages"
RUNTIME_WAIT_S = 60.0

_LOG = logging.getLogger("morphscope.serve")


def page_imports(pages: Path = PAGES) -> list[str]:
    """The project modules the page scripts import, in first-seen order."""
    found: dict[str, None] = {}
    for script in sorted(pages.glob("*.py")):
        tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in {"app", "storage", "relations", "core"}:
                    found[name] = None
    return list(found)


def serve_pages_through_navigation() -> None:
    """Let the entrypoint's ``st.navigation`` serve every URL from the first session on.

    Until a session has run ``st.navigation``, Streamlit treats an app with a ``pages/`` folder
    as an old-style multipage app: a direct URL such as ``/analysis`` runs ``pages/analysis.py``
    alone, which hands over to the entrypoint and back (``app.ui.entry``) — three script runs
    and a page switch in the browser before the first chart. ``st.navigation`` itself clears
    this flag on its first call; we clear it before the first session. If a Streamlit release
    drops the flag, nothing breaks: the hand-over still works, only slower."""
    from streamlit.runtime.pages_manager import PagesManager

    if hasattr(PagesManager, "uses_pages_directory"):
        PagesManager.uses_pages_directory = False


def _wait_for_runtime(timeout_s: float) -> bool:
    # Cached values computed before the runtime exists would land in a throw-away cache.
    from streamlit import runtime

    deadline = time.monotonic() + timeout_s
    while not runtime.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def import_pages() -> None:
    """Import what the page scripts import (a page's first run then only runs it). A module
    that fails to import is logged and skipped: its page shows the error when opened."""
    for name in page_imports():
        try:
            importlib.import_module(name)
        except Exception:
            _LOG.warning("warm start: importing %s failed", name, exc_info=True)


def warm_up(db_path: str | None = None) -> dict[str, float]:
    """Start the embedded model (if autostart is on) and aggregate the Analysis page's
    unfiltered view of ``db_path`` (the default database when None). The pages' modules are
    imported before this, by :func:`main`, before the server listens.

    Returns the seconds each step took (for the log); steps that fail are logged and skipped."""
    timings: dict[str, float] = {}

    def step(name: str, action: Callable[[], object]) -> None:
        start = time.perf_counter()
        try:
            action()
        except Exception:  # a page that needs it will show the error itself
            _LOG.warning("warm start: %s failed", name, exc_info=True)
        timings[name] = round(time.perf_counter() - start, 3)

    if settings().autostart:
        from app.engine.model_server import get_server

        step("embedded model", lambda: get_server().ensure_started())

    from app.ui import analysis_view
    from storage import default_db_path

    path = str(db_path or default_db_path())
    if Path(path).exists():  # never create a database from here
        step("analysis summary", lambda: analysis_view.aggregate_default(path))
    return timings


def _warm_in_background() -> None:
    def run() -> None:
        if not _wait_for_runtime(RUNTIME_WAIT_S):
            return
        timings = warm_up()
        _LOG.info("warm start done: %s", timings)

    from app.ui.data import sessionless_thread

    name = sessionless_thread("morphscope-warm-start")
    threading.Thread(target=run, name=name, daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    """``streamlit run streamlit_app.py`` with ``argv`` as its options, warmed in the background."""
    from streamlit.web import cli

    options = list(sys.argv[1:] if argv is None else argv)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    _LOG.addHandler(handler)
    _LOG.setLevel(logging.INFO)
    # Before the server listens: imported while it serves the browser its frontend, the modules
    # would hold the GIL against the static files (the first visit's shell came 0.2 s later).
    start = time.perf_counter()
    import_pages()
    _LOG.info("page modules imported in %.2f s", time.perf_counter() - start)
    serve_pages_through_navigation()
    # a page loaded by its URL then asks its server's root alone (app.ui.base_url_hint)
    base_url_hint.install(script.stem for script in PAGES.glob("*.py"))
    _warm_in_background()
    # click exits through SystemExit; its code is the server's exit status.
    try:
        cli.main(args=["run", str(ENTRYPOINT), *options], prog_name="streamlit")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
