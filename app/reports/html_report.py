"""The standalone HTML report: offline (plotly.js inline), every database text escaped.

Tables are laid out by the catalogue in :mod:`app.columns`; charts come from :mod:`app.figures`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from app import columns, figures, metrics, stats
from app.columns import Shown, Unit, format_text
from app.reports.common import now
from storage.analysis import CaseFilter

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#222}
h1{margin-bottom:.2rem} h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.6rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}
th{background:#f5f5f5} td.text,th.text{text-align:left}
.note{color:#555;font-size:.9rem} .sig{color:#b00020;font-weight:600}
"""


def html_table(rows: list[dict[str, Any]], layout: Sequence[Shown]) -> str:
    """An HTML table of ``rows`` laid out by ``layout`` (from ``app.columns``); every header
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
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _align(unit: Unit) -> str:
    return "text" if unit is Unit.TEXT else ""


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
        parts.append(
            fig.to_html(
                full_html=False,
                include_plotlyjs=not plotly_included,
                config={"displaylogo": False, "responsive": True},
            )
        )
        plotly_included = True

    esc = html.escape
    parts.append(f"<h1>{esc(title)}</h1>")
    parts.append(
        f'<p class="note">Generated {esc(now())} · {n_cases} cases · filters: '
        f"{esc(json.dumps(flt.as_dict(), ensure_ascii=False))}</p>"
    )
    parts.append("<h2>Summary per model</h2>")
    parts.append(html_table(summary["models"], columns.REPORT_MODEL_TABLE))
    if summary["rows"]:
        parts.append("<h2>Heatmaps (model × relation)</h2>")
        for metric in ("violation_rate", "mean_delta", "mean_similarity"):
            if any(row.get(metric) is not None for row in summary["rows"]):
                figure(figures.heatmap(summary["rows"], metric))
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
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
