"""A new user's walk through the dashboard in a real browser (Debian Chromium + Playwright).

It follows the README's first probe (against a local fake OpenAI server saved as an endpoint,
not the real model), opens every Analysis tab, labels one case in Triage by keyboard and opens
the HTML report. It fails on any traceback on a page, any browser console error and any request
to another host than the app's own (no font CDN, no favicon fetched from afar). Screenshots of
every step are kept under ``test-artifacts/walkthrough/`` (git-ignored) for a human to look at.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from core.types import Endpoint
from storage import Store
from tests.browser_support import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    ROOT,
    assert_no_traceback,
    screenshot,
    serve_dashboard,
)
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed"),
]
ARTIFACTS = ROOT / "test-artifacts" / "walkthrough"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
ANALYSIS_TABS = (
    "Heatmaps", "Distributions", "Robustness", "Severity", "Breakdown", "Statistics",
    "Compare runs", "Downloads", "Definitions",
)  # fmt: skip


@pytest.fixture
def fake_model():
    # A little latency, as a real server has: a run then lasts long enough to be cancelled.
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.3)) as server:
        yield server


@pytest.fixture
def dashboard(tmp_path, fake_model):
    """The app on a fresh database holding one saved endpoint: the fake model."""
    db = tmp_path / "walkthrough.db"
    store = Store(db)
    store.save_endpoint(Endpoint(name="fake", base_url=fake_model.base_url, model="fake-model"))
    # The same model one call at a time: a run of seconds, for Cancel and Resume.
    store.save_endpoint(
        Endpoint(name="slow", base_url=fake_model.base_url, model="fake-model", concurrency=1)
    )
    store.close()
    # No embedded model: the walk is about the dashboard, and the fake endpoint is chosen.
    env = {**os.environ, "MORPHSCOPE_DB": str(db), "MORPHSCOPE_AUTOSTART": "0"}
    with (tmp_path / "streamlit.log").open("w") as log, serve_dashboard(env, log) as url:
        yield url


class Watch:
    """Everything the browser did that a clean walk must not do."""

    def __init__(self) -> None:
        self.foreign_requests: list[str] = []
        self.console_errors: list[str] = []

    def attach(self, page) -> None:
        page.on("request", self._on_request)
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.console_errors.append(f"page error: {error}"))

    def _on_request(self, request) -> None:
        parts = urllib.parse.urlsplit(request.url)
        if parts.scheme in ("data", "blob", "file", "about"):
            return
        if parts.hostname not in LOCAL_HOSTS:
            self.foreign_requests.append(request.url)

    def _on_console(self, message) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)

    def assert_clean(self) -> None:
        assert self.foreign_requests == [], "requests left the machine"
        assert self.console_errors == [], "the browser console shows errors"


def _shot(page, name: str) -> None:
    screenshot(page, ARTIFACTS, name)


def _open(page, title: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("link", name=title).first.click()
    expect(page.get_by_role("heading", name=title).first).to_be_visible(timeout=60_000)
    page.wait_for_load_state("networkidle")


def test_a_new_user_walks_through_probe_analysis_triage_and_the_report(dashboard, fake_model):
    from playwright.sync_api import expect, sync_playwright

    watch = Watch()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, accept_downloads=True
        )
        page = context.new_page()
        watch.attach(page)

        # 1. The first probe (README): the defaults, on the saved fake endpoint (the form takes
        #    its choices from the URL, as after a reload).
        page.goto(f"{dashboard}/?probe_endpoint=fake")
        expect(page.get_by_role("heading", name="Probe")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("model calls (answers already stored")).to_be_visible()
        _shot(page, "01-probe-form")
        page.get_by_role("button", name="Run probe").click()
        expect(page.get_by_text("Source and follow-up, side by side")).to_be_visible(
            timeout=120_000
        )
        assert fake_model.stats.chat_calls > 0
        assert_no_traceback(page, "Probe")
        _shot(page, "02-probe-results")

        # 2. Analysis (through the results' link): every tab renders, none with a traceback.
        page.get_by_role("link", name="Open Analysis").click()
        expect(page.get_by_role("heading", name="Analysis").first).to_be_visible(timeout=60_000)
        for tab in ANALYSIS_TABS:
            page.get_by_role("tab", name=tab).click()
            page.wait_for_timeout(300)
            page.wait_for_load_state("networkidle")
            expect(page.get_by_role("tab", name=tab)).to_have_attribute("aria-selected", "true")
            assert_no_traceback(page, f"Analysis › {tab}")
            _shot(page, f"03-analysis-{tab.lower().replace(' ', '-')}")

        # 3. The HTML report from the Downloads tab, opened in the browser.
        page.get_by_role("tab", name="Downloads").click()
        with page.expect_download(timeout=60_000) as download_info:
            page.get_by_role("button", name="HTML report").click()
        report = ARTIFACTS / "morphscope_report.html"
        download_info.value.save_as(str(report))
        report_page = context.new_page()
        watch.attach(report_page)
        report_page.goto(report.as_uri())
        report_page.wait_for_load_state("networkidle")
        assert "Morphscope" in report_page.inner_text("body")
        _shot(report_page, "04-html-report")
        report_page.close()

        # 4. Triage: a name, then one label by keyboard (1 = Confirmed).
        _open(page, "Triage")
        assert_no_traceback(page, "Triage")
        name = page.get_by_role("textbox", name="Your name (labeler)")
        name.fill("walker")
        name.press("Enter")
        page.wait_for_load_state("networkidle")
        expect(page.get_by_role("button", name="Confirmed")).to_be_enabled(timeout=30_000)
        _shot(page, "05-triage-case")
        page.get_by_role("heading", name="Triage").click()  # focus off the text box
        page.keyboard.press("1")
        expect(page.get_by_text("Labeled “confirmed”").first).to_be_visible(timeout=30_000)
        _shot(page, "06-triage-labeled")
        browser.close()
    watch.assert_clean()


def test_cancel_stops_the_run_at_once_and_a_reload_offers_resume(dashboard, fake_model):
    """Before, the run went on inside the page's script for ~30 s after Cancel, and a reload
    reset the form. Now Cancel reads "cancelled" at once, the sending stops within a second,
    and after a reload the form keeps its endpoint and the run can be resumed."""
    from playwright.sync_api import expect, sync_playwright

    watch = Watch()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch.attach(page)
        page.goto(f"{dashboard}/?probe_endpoint=slow")
        expect(page.get_by_role("heading", name="Probe")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Run probe").click()
        expect(page.get_by_text("calls ·").first).to_be_visible(timeout=60_000)
        # The run lives beyond the page: away to Relations and back, it is still going.
        _open(page, "Relations")
        page.get_by_role("link", name="Probe").first.click()
        expect(page.get_by_role("button", name="Cancel run")).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Cancel run").click()
        expect(page.get_by_text("cancelled: no new calls are sent").first).to_be_visible(
            timeout=2_000
        )
        page.wait_for_timeout(1_000)  # one call may have been in flight
        calls_after_cancel = fake_model.stats.chat_calls
        page.wait_for_timeout(2_000)
        assert fake_model.stats.chat_calls == calls_after_cancel, "still sending"
        _shot(page, "10-cancelled")

        page.reload()
        expect(page.get_by_role("heading", name="Probe")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("was cancelled after").first).to_be_visible(timeout=30_000)
        assert "slow" in page.url  # the form's choices survive the reload
        page.get_by_role("button", name="Resume").click()
        expect(page.get_by_text("Source and follow-up, side by side")).to_be_visible(
            timeout=120_000
        )
        assert_no_traceback(page, "Probe after Resume")
        _shot(page, "11-resumed")
        browser.close()
    watch.assert_clean()
