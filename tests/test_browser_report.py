"""The standalone HTML report in a real browser (Debian Chromium driven by Playwright).

Pins the report's readability fixes: it loads from a file with no request to any other place (no
CDN: plotly.js is inline) and no page or console error; every chart is laid out inside the page
column with room for its tick labels (nothing cut at the edges); the MAD / stability bars have
three distinct colours; the filters read as text, not JSON; and it prints on A4 and letter. The
screenshots (screen, print media) and PDFs are saved under ``$MORPHSCOPE_ARTIFACTS`` (or the test's
temporary folder) to look at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from app.reports.html_report import render_html_report
from core.case_filter import CaseFilter
from storage import Store
from tests.browser_support import CHROMIUM, CHROMIUM_FLAGS, ROOT

pytestmark = pytest.mark.slow
FIXTURE_DB = ROOT / "tests" / "golden" / "fixture.db"

# Every chart's bounding box and, inside it, its tick labels, legend and colour bar — all in page
# coordinates — plus the MAD chart's bar colours (the browser's computed SVG fills).
_LAYOUT_PROBE = """
() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => {
  const box = plot.getBoundingClientRect();
  const labels = [...plot.querySelectorAll('.xtick text, .ytick text, .y2tick text, .legendtext,'
    + ' .cbaxis text, .xtitle, .ytitle, .y2title')]
    .map(t => t.getBoundingClientRect()).filter(r => r.width > 0)
    .map(r => [r.left, r.top, r.right, r.bottom]);
  const title = plot.querySelector('.gtitle');
  const fills = [...plot.querySelectorAll('.barlayer .trace')]
    .map(t => { const p = t.querySelector('path'); return p ? getComputedStyle(p).fill : null; });
  return {title: title ? title.textContent : '', box: [box.left, box.top, box.right, box.bottom],
          labels, fills};
})
"""


def _artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("MORPHSCOPE_ARTIFACTS", tmp_path / "artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def report_file(tmp_path, monkeypatch) -> Path:
    # Built as the dashboard's Download button builds it: inside the Streamlit process, where
    # plotly's default template is Streamlit's (no colour cycle and no automargin in a standalone
    # file: the cause of the black MAD bars and the cut labels).
    import plotly.io as pio

    # Recorded first, so the test gives back the default it found (importing Streamlit's chart
    # module sets its template as plotly's default for the whole process).
    monkeypatch.setattr(pio.templates, "default", pio.templates.default)
    import streamlit.elements.plotly_chart  # noqa: F401  (registers the "streamlit" template)

    monkeypatch.setattr(pio.templates, "default", "streamlit")
    # A copy of the golden fixture: three models, eight relations, identity runs, AgentDiff sides.
    db_path = tmp_path / "report.db"
    shutil.copy(FIXTURE_DB, db_path)
    store = Store(db_path)
    flt = CaseFilter.make(models=["A", "fake-model"], date_from="2026-01-01")
    page = render_html_report(store, flt)
    store.close()
    path = tmp_path / "report.html"
    path.write_text(page, "utf-8")
    return path


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_report_reads_well_offline_on_screen_and_in_print(report_file, tmp_path):
    from playwright.sync_api import sync_playwright

    artifacts = _artifacts(tmp_path)
    outside_requests: list[str] = []
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.on(
            "request",
            lambda request: (
                None
                if request.url.startswith(("file://", "data:", "blob:", "about:"))
                else outside_requests.append(request.url)
            ),
        )
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on(
            "console",
            lambda message: (
                problems.append(f"console: {message.text}") if message.type == "error" else None
            ),
        )
        page.goto(report_file.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_selector(".js-plotly-plot .main-svg")
        page.screenshot(path=str(artifacts / "report-screen.png"), full_page=True)

        charts = page.evaluate(_LAYOUT_PROBE)
        assert len(charts) >= 6, charts
        for chart in charts:
            left, top, right, bottom = chart["box"]
            for label in chart["labels"]:
                # Every tick label, axis title, legend entry and colour-bar tick lies inside its
                # chart (1 px of rounding): nothing clipped at an edge.
                assert left - 1 <= label[0] and label[2] <= right + 1, (chart["title"], label)
                assert top - 1 <= label[1] and label[3] <= bottom + 1, (chart["title"], label)
        # MAD and stability, each in its own chart (issue 28 item 8), none of its bars black
        stability = next(c for c in charts if c["title"].startswith("Stability"))
        assert len(stability["fills"]) == 2 and len(set(stability["fills"])) == 2
        mad = next(c for c in charts if c["title"].startswith("MAD"))
        assert "rgb(0, 0, 0)" not in mad["fills"] + stability["fills"]

        text = page.inner_text("body")
        assert "models: A, fake-model" in text and "from 2026-01-01" in text
        assert '"models"' not in text and "null" not in text  # no raw JSON

        # The charts fit the printable width of both paper sizes (the page column is fixed).
        widest = max(c["box"][2] - c["box"][0] for c in charts)
        assert widest <= 186 / 25.4 * 96  # A4 minus 12 mm margins (letter is wider)
        page.emulate_media(media="print")
        # A4's printable width between 12 mm margins, at 96 dpi: what a printout lays out in.
        a4_printable = round(186 / 25.4 * 96)
        page.set_viewport_size({"width": a4_printable, "height": 1000})
        page.wait_for_timeout(300)
        page.screenshot(path=str(artifacts / "report-print-a4.png"), full_page=True)
        widest_block = page.evaluate(
            "Math.max(...[...document.querySelectorAll('table, .js-plotly-plot')]"
            ".map(e => e.getBoundingClientRect().right))"
        )
        assert widest_block <= a4_printable + 1  # no table or chart runs off the paper
        for paper in ("A4", "Letter"):
            page.pdf(path=str(artifacts / f"report-{paper.lower()}.pdf"), format=paper)
        browser.close()
    assert not outside_requests, outside_requests
    assert not problems, problems
