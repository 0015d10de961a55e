"""The dashboard launcher (``python -m app.ui.serve``): what it warms, what it passes on, and a
real server started by it that warms the Analysis summary from its start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager

from app.ui import analysis_view, serve
from core.case_filter import CaseFilter
from storage import Store
from tests.browser_support import ROOT, free_port
from tests.test_analysis_queries import seed_dataset


def _seeded(path: Path) -> str:
    store = Store(path)
    seed_dataset(store)
    version = store.data_version()
    store.close()
    return version


def test_page_imports_are_the_project_modules_the_page_scripts_import(tmp_path) -> None:
    (tmp_path / "a.py").write_text(
        "from __future__ import annotations\nimport streamlit as st\n"
        "from app.ui import analysis_view as view\nfrom storage import default_db_path\n"
        "import relations.registry, json\nfrom . import sibling\n"
        "def later():\n    import app.reports\n"
    )
    (tmp_path / "b.py").write_text("from app.ui.analysis_view import summary\nimport core.types\n")
    assert serve.page_imports(tmp_path) == [
        "app.ui",
        "storage",
        "relations.registry",
        "app.ui.analysis_view",
        "core.types",
    ]  # top-level imports only (a function's own import stays lazy), in first-seen order


def test_the_real_pages_imports_cover_the_analysis_view() -> None:
    found = serve.page_imports()
    assert "app.ui.analysis_tabs" in found and "app.ui.data" in found
    assert not any(name.startswith(("streamlit", "pandas")) for name in found)


def test_warm_up_aggregates_what_the_analysis_page_shows_first(tmp_path) -> None:
    db = tmp_path / "warm.db"
    version = _seeded(db)
    assert not analysis_view.is_aggregated(str(db), version, CaseFilter())
    timings = serve.warm_up(str(db))
    assert set(timings) == {"analysis summary"}  # autostart is off in tests
    assert analysis_view.is_aggregated(str(db), version, CaseFilter())
    # the page's own call is now a cache hit with the same numbers
    assert analysis_view.summary(str(db), version, CaseFilter())["n_cases"] == 21


def test_warm_up_never_creates_a_database_and_survives_a_broken_one(tmp_path, caplog) -> None:
    missing = tmp_path / "missing.db"
    assert "analysis summary" not in serve.warm_up(str(missing))
    assert not missing.exists()
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database" * 100)
    timings = serve.warm_up(str(broken))  # logged, not raised: the page will show the error
    assert "analysis summary" in timings
    assert "warm start: analysis summary failed" in caplog.text


def test_main_runs_streamlit_on_the_entrypoint_with_the_options(monkeypatch) -> None:
    from streamlit.web import cli

    calls = []

    def fake_cli_main(args, prog_name):
        calls.append((args, prog_name))
        raise SystemExit(3)

    monkeypatch.setattr(cli, "main", fake_cli_main)
    monkeypatch.setattr(serve, "_warm_in_background", lambda: calls.append("warm"))
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
    monkeypatch.setattr(serve.base_url_hint, "install", lambda pages: calls.append(sorted(pages)))
    assert serve.main(["--server.port", "9"]) == 3
    # the hint names every page script's URL (app.ui.base_url_hint), before the server starts
    pages = ["analysis", "endpoints", "probe", "relations", "triage"]
    assert calls == [
        pages,
        "warm",
        (["run", str(serve.ENTRYPOINT), "--server.port", "9"], "streamlit"),
    ]
    # direct URLs go through the entrypoint's st.navigation from the first session on
    assert PagesManager.uses_pages_directory is False


@pytest.mark.slow
def test_a_served_dashboard_has_the_analysis_summary_ready(tmp_path) -> None:
    """End to end: the launcher's background warm-up waits for Streamlit's runtime, then fills
    the page's cache (its log says so), and the server answers."""
    db = tmp_path / "served.db"
    _seeded(db)
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "MORPHSCOPE_DB": str(db), "MORPHSCOPE_AUTOSTART": "0"}
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.ui.serve", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            # The warm start may end before or after the server listens: wait for both.
            deadline = time.monotonic() + 60
            healthy = False
            while time.monotonic() < deadline:
                assert process.poll() is None, log.read_text()
                if not healthy:
                    url = f"http://127.0.0.1:{port}/_stcore/health"
                    try:
                        with urllib.request.urlopen(url, timeout=2) as response:
                            healthy = response.status == 200
                    except OSError:
                        pass
                if healthy and "warm start done" in log.read_text():
                    break
                time.sleep(0.2)
            assert healthy, log.read_text()
        finally:
            process.terminate()
            process.wait(timeout=20)
    text = log.read_text()
    assert "page modules imported" in text
    assert "warm start done" in text and "'analysis summary'" in text
    assert "failed" not in text and "Traceback" not in text
    # its cached reads outside any session are expected: Streamlit's warning about them is not
    # printed in the terminal
    assert "missing ScriptRunContext" not in text


@pytest.mark.parametrize(("autostart", "started"), [("1", True), ("0", False)])
def test_warm_up_starts_the_embedded_model_unless_autostart_is_off(
    tmp_path, monkeypatch, autostart, started
) -> None:
    import app.engine.model_server

    calls: list[str] = []

    class FakeServer:
        def ensure_started(self) -> None:
            calls.append("started")

    monkeypatch.setattr(app.engine.model_server, "get_server", FakeServer)
    monkeypatch.setenv("MORPHSCOPE_AUTOSTART", autostart)
    timings = serve.warm_up(str(tmp_path / "none.db"))
    assert calls == (["started"] if started else [])
    assert ("embedded model" in timings) is started


def test_a_page_module_that_fails_to_import_does_not_stop_the_server(monkeypatch, caplog):
    monkeypatch.setattr(serve, "page_imports", lambda: ["app.no_such_module", "storage"])
    serve.import_pages()  # logged, not raised: the page shows the error when it is opened
    assert "importing app.no_such_module failed" in caplog.text
