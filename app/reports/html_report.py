"""The standalone HTML report: offline (plotly.js inline), every database text escaped.

Tables are laid out by :mod:`app.analysis.catalogue.tables`; charts come from
:mod:`app.analysis.heatmaps` and :mod:`app.analysis.figures`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from app.analysis import figures, heatmaps, metrics, noise_floor, stats
from app.analysis.catalogue import tables
from app.analysis.catalogue.definitions import (
    METRICS,
    REPORT_HEATMAPS,
    definition_rows,
    metric_label,
)
from app.analysis.catalogue.formats import Unit, format_text
from app.analysis.catalogue.tables import Shown
from app.analysis.sampling import sampling_view
from app.reports.common import now
from app.reports.sampling_section import sampling_section
from app.reports.shrunk_section import shrunk_section
from core.case_filter import CaseFilter

# Charts are laid out once at a width that fits a printed A4 page between 12 mm margins
# (186 mm ≈ 703 px; letter is wider), so they print exactly as they show on screen.
_PAGE_WIDTH_PX = 980
_FIGURE_WIDTH_PX = 690
# A heatmap with more relations than this lists them down the page (8 columns of ~50 px each:
# beyond that, a cell's "n=1,234" and "12–34%" overflowed it).
_RELATIONS_ACROSS_MAX = 8

_CSS = f"""
body{{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#222;
  max-width:{_PAGE_WIDTH_PX}px;margin:2rem auto;padding:0 1rem;line-height:1.4}}
h1{{margin-bottom:.2rem}} h2{{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}}
.table-wrap{{overflow-x:auto;max-width:100%}}
table{{border-collapse:collapse;font-size:.8rem;margin:.6rem 0}}
th,td{{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;vertical-align:top}}
th{{background:#f5f5f5}} td.text,th.text{{text-align:left}}
.note{{color:#555;font-size:.9rem}} .sig{{color:#b00020;font-weight:600}}
.filters{{margin:.3rem 0 0;padding:0;list-style:none;font-size:.9rem;color:#333}}
.filters li{{display:inline-block;margin:0 .4rem .2rem 0;padding:.05rem .45rem;
  border:1px solid #ddd;border-radius:.6rem;background:#fafafa}}
/* a chart laid out for A4 scrolls sideways on a narrower screen (a phone), never cut */
.figure{{margin:.8rem 0;break-inside:avoid;page-break-inside:avoid;overflow-x:auto}}
@page{{margin:12mm}}
@media print{{
  body{{margin:0;padding:0;max-width:none;font-size:10pt}}
  h2{{break-after:avoid;page-break-after:avoid}}
  table{{font-size:6.5pt;width:100%}} th,td{{padding:.1rem .2rem}}
  td{{white-space:nowrap}} td.text{{white-space:normal;overflow-wrap:anywhere}}
  .table-wrap,.figure{{overflow:visible}}
  tr{{break-inside:avoid;page-break-inside:avoid}}
  .modebar-container{{display:none !important}}
}}
"""


def html_table(rows: list[dict[str, Any]], layout: Sequence[Shown]) -> str:
    """An HTML table of ``rows`` laid out by ``layout`` (from ``app.analysis.catalogue.tables``); every header
    and cell is escaped."""
    head = "".join(f'<th class="{_align(c.unit)}">{html.escape(c.label)}</th>' for c in layout)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="{_align(c.unit)}">{html.escape(format_text(row.get(c.key), c.unit))}</td>'
            for c in layout
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        return '<p class="note">Nothing to show.</p>'
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="table-wrap">{table}</div>'


def _align(unit: Unit) -> str:
    return "text" if unit is Unit.TEXT else ""


# Distinct colours for traces that name none (the stability bars, one trace per kind).
REPORT_COLOURS = (
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d",
)  # fmt: skip
_FILTER_LABELS = {
    "run_ids": "runs",
    "models": "models",
    "tasks": "tasks",
    "relations": "relations",
    "date_from": "from",
    "date_to": "to",
}


def filter_items(flt: CaseFilter) -> list[str]:
    """The filters as short readable phrases ("models: A, B", "from 2026-11-02"); empty for none."""
    items = []
    for key, value in flt.as_dict().items():
        if value is None:
            continue
        label = _FILTER_LABELS.get(key, key.replace("_", " "))
        if isinstance(value, list):
            items.append(f"{label}: {', '.join(map(str, value)) if value else '(none)'}")
        else:
            items.append(f"{label} {value}")
    return items


def for_print(fig):
    """Lay a dashboard figure out for the report: a fixed, printable width; room for every tick
    label (automargin, so relation names under the bars and model names on the y axis are never
    cut); a white template; and a distinct colour for each trace that sets none."""
    fig.update_layout(
        template="plotly_white",
        colorway=list(REPORT_COLOURS),
        width=_FIGURE_WIDTH_PX,
        height=max(fig.layout.height or 0, 380) + 60,
        autosize=False,
        margin={"l": 70, "r": 70, "t": 70, "b": 70, "pad": 4},
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12},
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    if fig.layout.legend.orientation == "h" and fig.layout.legend.yref != "container":
        # Above the plot: below it, the legend ran into the rotated relation labels. (A legend
        # placed on the figure's own bottom edge, the heatmap's, stays there.)
        fig.update_layout(legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"})
        fig.update_layout(title={"y": 0.98, "yanchor": "top"}, margin={"t": 100})
    for index, trace in enumerate(fig.data):
        if trace.type == "bar" and trace.marker.color is None:
            trace.marker.color = REPORT_COLOURS[index % len(REPORT_COLOURS)]
    return fig


class _Document:
    """The report's body as it is written: HTML parts in order, plotly.js embedded once, with
    the first chart."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.has_charts = False

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)

    def figure(self, fig) -> None:
        chart = for_print(fig).to_html(
            full_html=False,
            include_plotlyjs=not self.has_charts,
            config={"displaylogo": False, "responsive": False},
        )
        self.parts.append(f'<div class="figure">{chart}</div>')
        self.has_charts = True


def _header(doc: _Document, title: str, flt: CaseFilter, n_cases: int) -> None:
    """The title, when it was made, how many cases and which filters."""
    esc = html.escape
    doc.add(f"<h1>{esc(title)}</h1>")
    items = filter_items(flt)
    doc.add(
        f'<p class="note">Generated {esc(now())} · {n_cases} cases · '
        + ("filters:</p>" if items else "no filters (every case).</p>")
    )
    if items:
        doc.add(
            '<ul class="filters">' + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>"
        )


def _heatmaps(doc: _Document, rows: list[dict[str, Any]]) -> None:
    doc.add("<h2>Heatmaps (model × relation)</h2>")
    # More relations than a printed page's plot area (~420 px) holds with each cell's text
    # legible: one row per relation instead.
    turned = len({row["relation_id"] for row in rows}) > _RELATIONS_ACROSS_MAX
    for metric in REPORT_HEATMAPS:
        if any(row.get(metric) is not None for row in rows):
            doc.figure(heatmaps.heatmap(rows, metric, relations_down=turned))


def _distributions(doc: _Document, store, flt: CaseFilter) -> None:
    doc.add("<h2>Distributions</h2>")
    for column, label in (("delta", "Δ"), ("output_similarity", "output similarity")):
        box_rows, stride = metrics.box_stats(store, flt, column)
        if box_rows:
            doc.figure(figures.box_plot(box_rows, measure_label=label))
            if stride > 1:
                doc.add(f'<p class="note">Based on every {stride}th case.</p>')


def _robustness(doc: _Document, summary: dict[str, Any]) -> None:
    """MAD and stability, then the noise floor (chart and table)."""
    if any(m.get("mad") is not None for m in summary["models"]):
        doc.add("<h2>MAD and stability</h2>")
        doc.figure(figures.mad_bars(summary["models"]))
        doc.figure(figures.stability_bars(summary["models"]))
    doc.add("<h2>Noise floor</h2>")
    floors = {m["model"]: m["noise_floor"] for m in summary["models"]}
    doc.figure(figures.violation_with_floor(summary["rows"], floors))
    floor_rows = noise_floor.floor_rows(summary["noise_floor"])
    doc.add(html_table(floor_rows, tables.REPORT_FLOOR_TABLE))
    if not floor_rows:
        doc.add('<p class="note">No si.identity cases: no noise floor measured.</p>')


def _tables(doc: _Document, store, flt: CaseFilter, summary: dict[str, Any]) -> None:
    """StepScore, the AgentDiff gap, the breakdowns by category and difficulty, and the model ×
    relation table."""
    if summary["step_scores"]:
        doc.add("<h2>StepScore (reasoning steps against the reference steps)</h2>")
        doc.add(html_table(summary["step_scores"], tables.REPORT_STEP_SCORE_TABLE))
    if summary["gap"]:
        doc.add("<h2>AgentDiff gap (meaning-bearing − presentation)</h2>")
        doc.add(html_table(summary["gap"], tables.REPORT_GAP_TABLE))
    for key in [k for k in store.meta_keys() if k in ("category", "difficulty")]:
        rows = metrics.breakdown(store, key, flt)
        if rows:
            doc.add(f"<h2>By {html.escape(key)}</h2>")
            doc.add(html_table(rows, tables.report_breakdown_table(key)))
    doc.add("<h2>Model × relation</h2>")
    doc.add(html_table(summary["rows"], tables.REPORT_MODEL_RELATION_TABLE))


def _statistics(doc: _Document, tests: dict[str, Any]) -> None:
    doc.add(
        "<h2>Statistics</h2>",
        f'<p class="note">Benjamini-Hochberg adjusted within each family; significant when the '
        f"adjusted p &lt; {tests['alpha']}.</p>",
        "<h3>Mann-Whitney U between models</h3>",
        html_table(stats.shown_tests(tests["mann_whitney"]), tables.REPORT_TEST_TABLE),
        "<h3>Kruskal-Wallis across relations, per model</h3>",
        html_table(stats.shown_tests(tests["kruskal_wallis"]), tables.REPORT_TEST_TABLE),
    )


def _definitions(doc: _Document) -> None:
    """Each metric's formula and paper source, then the one-line definitions."""
    esc = html.escape
    doc.add("<h2>Definitions</h2>", html_table(definition_rows(), tables.DEFINITION_TABLE), "<ul>")
    # each metric by its human name, as the tables above call it (the keys are for `--json`)
    named = {
        " / ".join(map(metric_label, (m.definition_key or m.key).split("/"))): m.definition
        for m in METRICS.values()
        if m.definition
    }
    doc.add(*(f"<li><b>{esc(name)}</b>: {esc(text)}</li>" for name, text in named.items()))
    doc.add("</ul>")


def render_html_report(
    store, flt: CaseFilter | None = None, title: str = "Morphscope robustness report"
) -> str:
    """A standalone, offline HTML report: plotly.js is embedded once, inline (no CDN, no server).

    Sections: summary per model, heatmaps (violation rate, mean Δ, mean similarity — numbers in
    cells), box plots of Δ and similarity, MAD / stability bars, noise floor, AgentDiff gap,
    per-category breakdowns, the model × relation table, statistics with readings, definitions
    (each metric's formula and paper source, then the one-line definitions).
    All text from the database is HTML-escaped.
    """
    flt = flt or CaseFilter()
    summary = metrics.summarize(store, flt)
    tests = stats.run_tests(store, flt, counts=summary["counts"], roles=summary["roles"])
    doc = _Document()
    _header(doc, title, flt, summary["n_cases"])
    doc.add("<h2>Summary per model</h2>", html_table(summary["models"], tables.REPORT_MODEL_TABLE))
    sampled = sampling_section(sampling_view(store, flt), summary["rows"])
    if sampled:
        doc.add(sampled)
    if summary["rows"]:
        _heatmaps(doc, summary["rows"])
        _distributions(doc, store, flt)
        _robustness(doc, summary)
    _tables(doc, store, flt, summary)
    shrunk = shrunk_section(store, flt)
    if shrunk:
        doc.add(shrunk)
    _statistics(doc, tests)
    _definitions(doc)
    if not doc.has_charts:
        doc.add('<p class="note">No charts: nothing matched the filters.</p>')
    body = "\n".join(doc.parts)
    esc = html.escape
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
