"""The standalone HTML report: offline (plotly.js inline), every database text escaped.

Tables are laid out by the catalogue in :mod:`app.analysis.catalogue`; charts come from :mod:`app.analysis.figures`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from app.analysis import catalogue as columns
from app.analysis import figures, metrics, stats
from app.analysis.catalogue import Shown, Unit, format_text
from app.reports.common import now
from storage.case_filter import CaseFilter

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
.figure{{margin:.8rem 0;break-inside:avoid;page-break-inside:avoid}}
@page{{margin:12mm}}
@media print{{
  body{{margin:0;padding:0;max-width:none;font-size:10pt}}
  h2{{break-after:avoid;page-break-after:avoid}}
  table{{font-size:6.5pt;width:100%}} th,td{{padding:.1rem .2rem}}
  td{{white-space:nowrap}} td.text{{white-space:normal;overflow-wrap:anywhere}}
  .table-wrap{{overflow:visible}}
  tr{{break-inside:avoid;page-break-inside:avoid}}
  .modebar-container{{display:none !important}}
}}
"""


def html_table(rows: list[dict[str, Any]], layout: Sequence[Shown]) -> str:
    """An HTML table of ``rows`` laid out by ``layout`` (from ``app.analysis.catalogue``); every header
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


# Distinct colours for traces that name none (the MAD / stability bars, one trace per model).
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
    if fig.layout.legend.orientation == "h":
        # Above the plot: below it, the legend ran into the rotated relation labels.
        fig.update_layout(legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"})
        fig.update_layout(title={"y": 0.98, "yanchor": "top"}, margin={"t": 100})
    if "yaxis2" in fig.layout and fig.layout.yaxis2.overlaying:
        # A right-hand axis in shares (stability): round ticks, and no second grid.
        fig.update_layout(
            yaxis2={"tickmode": "linear", "tick0": 0, "dtick": 0.25, "showgrid": False}
        )
    for index, trace in enumerate(fig.data):
        if trace.type == "bar" and trace.marker.color is None:
            trace.marker.color = REPORT_COLOURS[index % len(REPORT_COLOURS)]
    return fig


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
    tests = stats.run_tests(store, flt, counts=summary["counts"])
    n_cases = store.count_cases(flt)
    parts: list[str] = []
    plotly_included = False

    def figure(fig) -> None:
        nonlocal plotly_included
        chart = for_print(fig).to_html(
            full_html=False,
            include_plotlyjs=not plotly_included,
            config={"displaylogo": False, "responsive": False},
        )
        parts.append(f'<div class="figure">{chart}</div>')
        plotly_included = True

    esc = html.escape
    parts.append(f"<h1>{esc(title)}</h1>")
    items = filter_items(flt)
    parts.append(
        f'<p class="note">Generated {esc(now())} · {n_cases} cases · '
        + ("filters:</p>" if items else "no filters (every case).</p>")
    )
    if items:
        parts.append(
            '<ul class="filters">' + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>"
        )
    parts.append("<h2>Summary per model</h2>")
    parts.append(html_table(summary["models"], columns.REPORT_MODEL_TABLE))
    if summary["rows"]:
        parts.append("<h2>Heatmaps (model × relation)</h2>")
        # More relations than a printed page's plot area (~420 px) holds with each cell's text
        # legible: one row per relation instead.
        n_relations = len({row["relation_id"] for row in summary["rows"]})
        turned = n_relations > _RELATIONS_ACROSS_MAX
        for metric in ("violation_rate", "mean_delta", "mean_similarity"):
            if any(row.get(metric) is not None for row in summary["rows"]):
                figure(figures.heatmap(summary["rows"], metric, relations_down=turned))
        parts.append("<h2>Distributions</h2>")
        for column, label in (("delta", "Δ"), ("output_similarity", "output similarity")):
            box_rows, stride = metrics.box_stats(store, flt, column)
            if box_rows:
                figure(figures.box_plot(box_rows, measure_label=label))
                if stride > 1:
                    parts.append(f'<p class="note">Based on every {stride}th case.</p>')
        if any(m.get("mad") is not None for m in summary["models"]):
            parts.append("<h2>MAD and stability</h2>")
            figure(figures.mad_stability_bars(summary["models"]))
        parts.append("<h2>Noise floor</h2>")
        floors = {m["model"]: m["noise_floor"] for m in summary["models"]}
        figure(figures.violation_with_floor(summary["rows"], floors))
        floor_rows = metrics.floor_rows(summary["noise_floor"])
        parts.append(html_table(floor_rows, columns.REPORT_FLOOR_TABLE))
        if not floor_rows:
            parts.append('<p class="note">No si.identity cases: no noise floor measured.</p>')
    if summary["step_scores"]:
        parts.append("<h2>StepScore (reasoning steps against the reference steps)</h2>")
        parts.append(html_table(summary["step_scores"], columns.REPORT_STEP_SCORE_TABLE))
    if summary["gap"]:
        parts.append("<h2>AgentDiff gap (meaning-bearing − presentation)</h2>")
        parts.append(html_table(summary["gap"], columns.REPORT_GAP_TABLE))
    for key in [k for k in store.meta_keys() if k in ("category", "difficulty")]:
        rows = metrics.breakdown(store, key, flt)
        if rows:
            parts.append(f"<h2>By {esc(key)}</h2>")
            parts.append(html_table(rows, columns.report_breakdown_table(key)))
    parts.append("<h2>Model × relation</h2>")
    parts.append(html_table(summary["rows"], columns.REPORT_MODEL_RELATION_TABLE))
    parts.append("<h2>Statistics</h2>")
    parts.append(
        f'<p class="note">Benjamini-Hochberg adjusted within each family; significant when the '
        f"adjusted p &lt; {tests['alpha']}.</p>"
    )
    parts.append("<h3>Mann-Whitney U between models</h3>")
    parts.append(html_table(tests["mann_whitney"], columns.REPORT_TEST_TABLE))
    parts.append("<h3>Kruskal-Wallis across relations, per model</h3>")
    parts.append(html_table(tests["kruskal_wallis"], columns.REPORT_TEST_TABLE))
    parts.append("<h2>Definitions</h2>")
    parts.append(html_table(columns.definition_rows(), columns.DEFINITION_TABLE))
    parts.append("<ul>")
    parts.extend(f"<li><b>{esc(k)}</b>: {esc(v)}</li>" for k, v in columns.DEFINITIONS.items())
    parts.append("</ul>")
    if not plotly_included:
        parts.append('<p class="note">No charts: nothing matched the filters.</p>')
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
