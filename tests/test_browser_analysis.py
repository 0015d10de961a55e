"""The Analysis page on a moderately sized database in a real browser (Chromium + Playwright).

Pins what the page's speed work must not break: opened directly on 20,000 cases (4 models × 40
relations, the benchmark's generator), it draws the heatmap (not only its placeholder), shows
the headline numbers and no exception; clicking a heatmap cell selects it for the drill-down;
another filter and the way back redraw it without one.
Timings are the benchmark's job (``bench/bench_analysis_browser.py``), never asserted here.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, CHROMIUM_FLAGS, ROOT, serve_dashboard

pytestmark = pytest.mark.slow
N_CASES = 20_000
# the heatmap's cells (Vega-Lite, SVG), not its placeholder chart (text only)
HEATMAP_DRAWN = '[data-testid="stVegaLiteChart"] .mark-rect path'
HEATMAP_CELLS = '[data-testid="stVegaLiteChart"] .mark-rect >> nth=0'


def _build_database(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_analysis_scale", ROOT / "bench" / "bench_analysis_scale.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.build(path, N_CASES).close()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_analysis_page_draws_its_heatmap_on_20k_cases(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    db_path = tmp_path / "analysis.db"
    _build_database(db_path)
    env = {**os.environ, "MORPHSCOPE_DB": str(db_path), "MORPHSCOPE_AUTOSTART": "0"}
    with serve_dashboard(env) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/analysis")
        page.wait_for_selector(HEATMAP_DRAWN, state="visible", timeout=120_000)
        expect(page.get_by_text("20,000").first).to_be_visible()  # the Cases headline
        expect(page.get_by_text("Drill down into model × relation")).to_be_visible()
        # click a cell that is not the one shown by default (the highest violation rate)
        drill = page.locator('[data-testid="stSelectbox"]').filter(has_text="Drill down").first
        shown = drill.locator("input").first
        default = shown.input_value()
        cells = page.locator(HEATMAP_CELLS).locator("path")
        assert cells.count() == 160  # 4 models × 40 relations
        for index in (45, 46):  # the second one if the first happens to be the default
            cell = cells.nth(index)
            # "relation: char.op00; model: model-beta-70b; Violation rate: …" (the tooltip)
            fields = dict(
                part.split(": ", 1) for part in cell.get_attribute("aria-label").split("; ")
            )
            label = f"{fields['model']} × {fields['relation']}"
            if label != default:
                break
        cell.click()
        expect(shown).to_have_value(label, timeout=60_000)
        assert label != default
        # another filter, then back to everything: redrawn, no exception
        page.get_by_role("combobox", name="Models").first.click()
        page.get_by_role("option", name="model-beta-70b").first.click()
        page.keyboard.press("Escape")
        expect(page.get_by_text("5,000").first).to_be_visible(timeout=60_000)
        page.get_by_role("combobox", name="Models").first.click()
        page.keyboard.press("Backspace")
        page.keyboard.press("Escape")
        expect(page.get_by_text("20,000").first).to_be_visible(timeout=60_000)
        page.wait_for_selector(HEATMAP_DRAWN, state="visible", timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.inner_text("body")
        page.screenshot(path=str(tmp_path / "analysis.png"), full_page=True)
        browser.close()
