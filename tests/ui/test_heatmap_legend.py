"""app/ui/heatmap_legend.py: the Analysis heatmap's legend, drawn as HTML above the chart."""

from __future__ import annotations

import re

from app.analysis.heatmap_grid import FEW_CASES_LEGEND, HeatmapLegend
from app.ui.heatmap_legend import LEGEND_CLASS, legend_html

LEGEND = HeatmapLegend(
    title="Violation rate <n>",
    stops=((0.0, "#fff5f0"), (0.5, "#fb6a4a"), (1.0, "#67000d")),
    ticks=((0.0, "0%"), (0.5, "50%"), (1.0, "100%")),
    few_cases=True,
)


def test_the_gradient_is_the_cells_ramp_and_the_ticks_align_inside_it():
    """The bar's gradient lists the given stops at their positions; each tick is shifted left
    by its own position (0% not at all, 100% by its whole width), so the end labels stay
    within the bar instead of overhanging the screen's edge."""
    page = legend_html(LEGEND)
    assert "linear-gradient(to right, #fff5f0 0.0%, #fb6a4a 50.0%, #67000d 100.0%)" in page
    ticks = re.findall(r'left:(\d+)%;transform:translateX\(-(\d+)%\)">([^<]+)<', page)
    assert ticks == [("0", "0", "0%"), ("50", "50", "50%"), ("100", "100", "100%")]


def test_the_legend_wraps_within_the_page_and_escapes_its_texts():
    """Entries wrap (flex-wrap) and the bar is never wider than the page: at 390 px both fit.
    The title is text, not markup."""
    page = legend_html(LEGEND)
    assert f'<div class="{LEGEND_CLASS}">' in page
    assert "flex-wrap:wrap" in page and "width:min(200px,100%)" in page
    assert "Violation rate &lt;n&gt;" in page and "<n>" not in page


def test_the_dashed_outline_entry_appears_only_with_few_case_cells():
    assert FEW_CASES_LEGEND in legend_html(LEGEND)
    plain = HeatmapLegend(LEGEND.title, LEGEND.stops, LEGEND.ticks, few_cases=False)
    assert FEW_CASES_LEGEND not in legend_html(plain)
