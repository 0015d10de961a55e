"""Tell the browser where the app's root is, so a page loaded by its own URL asks no wrong URL.

Loaded at ``/analysis``, Streamlit's client cannot tell the page "analysis" of an app at ``/``
from the main page of an app served under the base path ``/analysis``: it asks
``/analysis/_stcore/health`` and ``/analysis/_stcore/host-config`` first (both 404, on purpose,
in Streamlit 1.67's server) and then the root's (streamlit/streamlit#7074). The client reads
its server's base URL from ``window.__streamlit.BACKEND_BASE_URL`` when a page sets it, and
then asks that one alone; Streamlit's own ``index.html`` never sets it.

We know our pages' URL names, so a small script in ``index.html`` can: the path less a last
segment that names one of our pages. It runs in the browser, so the root found is right behind
a proxy that serves the app under a prefix of its own (``/tools/morphscope/analysis`` →
``/tools/morphscope``). :func:`install` wraps Streamlit's static file handler, in our launcher
only (``app.ui.serve``), to put the script at the top of every ``index.html`` it serves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_HINT = """<script>(() => {
  const pages = new Set(%s);
  const parts = location.pathname.replace(/\\/+$/, "").split("/");
  if (pages.has(decodeURIComponent(parts[parts.length - 1]))) parts.pop();
  const root = new URL(location.href);
  root.pathname = parts.join("/") || "/";
  root.search = "";
  root.hash = "";
  window.__streamlit = Object.assign(window.__streamlit || {}, {BACKEND_BASE_URL: root.href});
})();</script>"""


def hint_script(page_names: Iterable[str]) -> str:
    """The ``<script>`` that sets ``window.__streamlit.BACKEND_BASE_URL`` to the app's root."""
    return _HINT % json.dumps(sorted(page_names))


def with_hint(index_html: bytes, script: str) -> bytes:
    """``index_html`` with ``script`` first in its ``<head>`` (before Streamlit's own bundle,
    which reads ``window.__streamlit`` once, as it loads); unchanged when it has no head."""
    head = index_html.find(b"<head>")
    if head < 0:
        return index_html
    cut = head + len(b"<head>")
    return index_html[:cut] + script.encode() + index_html[cut:]


def install(page_names: Iterable[str]) -> bool:
    """Wrap Streamlit's static file handler so that each ``index.html`` it serves carries the
    hint. False (and nothing changed) where this Streamlit has no such handler: the client then
    makes its two extra requests, as it always did."""
    try:
        from starlette.responses import FileResponse, Response
        from streamlit.web.server.starlette import starlette_static_routes as routes
    except ImportError:
        return False
    original = getattr(routes, "create_streamlit_static_handler", None)
    if original is None or getattr(original, "with_base_url_hint", False):
        return original is not None
    script = hint_script(page_names)

    def create(directory: str, base_url: str | None) -> Any:
        handler = original(directory, base_url)
        serve = handler.get_response

        async def get_response(path: str, scope: Any) -> Any:
            response = await serve(path, scope)
            if isinstance(response, FileResponse) and Path(response.path).name == "index.html":
                body = with_hint(Path(response.path).read_bytes(), script)
                cache = response.headers.get("Cache-Control", "no-cache")
                return Response(
                    body, response.status_code, {"Cache-Control": cache}, media_type="text/html"
                )
            return response

        handler.get_response = get_response
        return handler

    create.with_base_url_hint = True  # type: ignore[attr-defined]
    routes.create_streamlit_static_handler = create
    return True
