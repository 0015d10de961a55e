"""The Analysis heatmap's legend as HTML above the chart's sideways-scrolling box.

Drawn by the page, not by Vega: a Vega top legend starts where the cells start, after the model
names (up to 180 px), so on a 390 px phone its gradient and the few-cases entry ran off the
screen into the heatmap's own scroll. Here the entries wrap within the page's width and stay in
view while the cells scroll sideways beneath them.
"""

from __future__ import annotations

import html

from app.analysis.heatmap_grid import FEW_CASES_LEGEND, HeatmapLegend

LEGEND_CLASS = "heatmap-legend"
"""The legend's CSS class (the browser walkthrough measures its box against the screen)."""

# At most this wide, else the page's width less a margin: a 390 px phone leaves ~360 px.
_GRADIENT_PX = 200

_CSS = f"""
.{LEGEND_CLASS}{{display:flex;flex-wrap:wrap;align-items:flex-end;gap:.4rem 1.5rem;
  max-width:100%;font-size:.8rem;color:rgba(49,51,63,.75)}}
.{LEGEND_CLASS} .scale{{width:min({_GRADIENT_PX}px,100%)}}
.{LEGEND_CLASS} .bar{{height:12px;border-radius:2px}}
.{LEGEND_CLASS} .ticks{{position:relative;height:1.2em}}
.{LEGEND_CLASS} .ticks span{{position:absolute;top:0;white-space:nowrap}}
.{LEGEND_CLASS} .few{{display:flex;align-items:center;gap:.4rem}}
.{LEGEND_CLASS} .few i{{display:inline-block;width:14px;height:14px;flex:none;
  border:1.5px dashed #333;background:white}}
"""


def _tick(position: float, text: str) -> str:
    # The end ticks align inward (the first left, the last right) so no label overhangs the bar.
    place = f"left:{position:.0%};transform:translateX(-{position:.0%})"
    return f'<span style="{place}">{html.escape(text)}</span>'


def legend_html(legend: HeatmapLegend) -> str:
    """The legend: the metric's title over its colour ramp (the cells' own stops) with the low
    end, middle and high end printed under it; then, where a cell is outlined dashed, a dashed
    square naming :data:`FEW_CASES_LEGEND`."""
    gradient = ", ".join(f"{colour} {position:.1%}" for position, colour in legend.stops)
    ticks = "".join(_tick(position, text) for position, text in legend.ticks)
    scale = (
        f'<div class="scale"><div>{html.escape(legend.title)}</div>'
        f'<div class="bar" style="background:linear-gradient(to right, {gradient})"></div>'
        f'<div class="ticks">{ticks}</div></div>'
    )
    few = f'<div class="few"><i></i>{html.escape(FEW_CASES_LEGEND)}</div>'
    body = scale + (few if legend.few_cases else "")
    return f'<style>{_CSS}</style><div class="{LEGEND_CLASS}">{body}</div>'
