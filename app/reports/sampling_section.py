"""The HTML report's "Sampling" section: the adaptive runs (`run --precision/--budget`) in the
report, the calls they saved against the full grid, each cell they touch with its cases, rate,
Wilson interval and the confidence-sequence interval that stopped it, and a note for every cell
that pools adaptive and full-grid runs. Empty (no section) when no run is adaptive, so reports
of full-grid runs read as before."""

from __future__ import annotations

import html
from typing import Any

from app.analysis.sampling import MIXED_NOTE, SamplingView, run_rows, sampling_rows


def _table(rows: list[dict[str, str]]) -> str:
    esc = html.escape
    head = "".join(f'<th class="text">{esc(name)}</th>' for name in rows[0])
    body = "".join(
        "<tr>" + "".join(f'<td class="text">{esc(value)}</td>' for value in row.values()) + "</tr>"
        for row in rows
    )
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def sampling_section(view: SamplingView, rows: list[dict[str, Any]]) -> str:
    """The section's HTML, or "" when no run in the report is adaptive."""
    if not view.any_adaptive:
        return ""
    esc = html.escape
    parts = [
        '<section id="sampling" class="adaptive">',
        "<h2>Sampling: adaptive runs</h2>",
        f'<p class="note"><span class="adaptive-marker">adaptive</span> {len(view.runs)} '
        "run(s) sent part of their grid, stopping each cell once its anytime-valid 95% "
        "confidence sequence was narrow enough or the call budget was spent: "
        f"{view.calls_saved} calls saved against the full grid. Their cells rest on fewer "
        "cases; the confidence sequence, not the Wilson interval, is the interval that stays "
        "valid at a stop chosen by looking at the data.</p>",
        _table(run_rows(view)),
        _table(sampling_rows(view, rows)),
    ]
    parts += [
        f'<p class="note sampling-mixed"><b>{esc(cell.model)} × {esc(cell.relation_id)}</b> '
        f"{esc(MIXED_NOTE)}.</p>"
        for cell in view.mixed_cells
    ]
    parts.append("</section>")
    return "\n".join(parts)
