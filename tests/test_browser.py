"""A real browser (Debian Chromium driven by Playwright) loads the app and runs a probe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, CHROMIUM_FLAGS, serve_dashboard

pytestmark = pytest.mark.slow


@pytest.fixture
def dashboard(tmp_path):
    with serve_dashboard({**os.environ, "MORPHSCOPE_DB": str(tmp_path / "browser.db")}) as url:
        yield url


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_browser_loads_app_and_runs_a_probe_on_the_embedded_model(dashboard, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(dashboard)
        expect(page.get_by_role("heading", name="Probe")).to_be_visible(timeout=60_000)
        # a first probe is one click: embedded model, sentiment, demo inputs, relations preset
        page.get_by_role("button", name="Run probe").click()
        expect(page.get_by_text("Source and follow-up, side by side")).to_be_visible(
            timeout=300_000
        )
        expect(page.get_by_text("model calls").first).to_be_visible()
        body = page.inner_text("body")
        assert "PASS" in body or "FAIL" in body
        page.screenshot(path=str(tmp_path / "probe.png"), full_page=True)
        # the other pages load in the same session without an exception
        for title in ("Relations", "Endpoints", "Analysis", "Triage"):
            page.get_by_role("link", name=title).first.click()
            expect(page.get_by_role("heading", name=title).first).to_be_visible(timeout=60_000)
            assert "Traceback" not in page.inner_text("body")
        browser.close()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_direct_url_on_a_fresh_server_runs_inside_the_entrypoint(dashboard):
    # Regression: /triage opened first on a new server ran the page alone (Streamlit's
    # pages/ auto-discovery), with no shared sidebar and a narrow layout.
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{dashboard}/triage")
        expect(page.get_by_role("heading", name="Triage").first).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Embedded model").first).to_be_visible()
        expect(page.get_by_role("link", name="Probe").first).to_be_visible()
        assert "streamlit app" not in page.inner_text("body")
        browser.close()
