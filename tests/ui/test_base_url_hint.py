"""app/ui/base_url_hint.py: the app's root named in index.html, so that a page loaded by its URL
does not ask ``/<page>/_stcore/health`` and ``/<page>/_stcore/host-config`` first (issue 28)."""

from __future__ import annotations

import asyncio
import json

from app.ui import base_url_hint

INDEX = b'<!doctype html><html><head><script type="module" src="./static/js/index.js"></script>'


def test_the_hint_comes_first_in_the_head_before_streamlits_bundle():
    """Streamlit's bundle reads window.__streamlit once, as it loads: the hint must run
    before it, so it goes right after ``<head>``."""
    page = base_url_hint.with_hint(INDEX, "<script>HINT</script>")
    assert page == INDEX.replace(b"<head>", b"<head><script>HINT</script>")
    assert base_url_hint.with_hint(b"<p>no head</p>", "<script>HINT</script>") == b"<p>no head</p>"


def test_the_hint_names_our_pages_and_sets_the_backend_base_url():
    script = base_url_hint.hint_script(["triage", "analysis"])
    assert 'new Set(["analysis", "triage"])' in script  # sorted, as JSON
    assert "BACKEND_BASE_URL" in script and script.startswith("<script>")
    assert json.dumps(["analysis", "triage"]) in script


def test_install_wraps_streamlits_static_handler_for_index_html_only(tmp_path, monkeypatch):
    """Through Streamlit 1.67's own static handler: a page URL (``/analysis``, which falls back
    to index.html) and ``/`` are served with the hint and ``no-cache``; any other file is
    served as it is."""
    from streamlit.web.server.starlette import starlette_static_routes as routes

    monkeypatch.setattr(routes, "create_streamlit_static_handler",
                        routes.create_streamlit_static_handler)  # fmt: skip
    (tmp_path / "index.html").write_bytes(INDEX)
    (tmp_path / "app.js").write_text("let x = 1;")
    assert base_url_hint.install(["analysis"])
    assert base_url_hint.install(["analysis"])  # a second call wraps nothing twice
    handler = routes.create_streamlit_static_handler(str(tmp_path), None)

    def get(path: str):
        scope = {"type": "http", "method": "GET", "path": path, "headers": []}
        return asyncio.run(handler.get_response(path.lstrip("/") or ".", scope))

    for path in ("/analysis", "/"):
        response = get(path)
        assert response.status_code == 200
        assert response.body.count(b"BACKEND_BASE_URL") == 1
        assert response.body.startswith(b"<!doctype html><html><head><script>")
        assert response.headers["Cache-Control"] == "no-cache"
    script = get("/app.js")
    assert not hasattr(script, "body") or b"BACKEND_BASE_URL" not in script.body
