"""The HTML report's "Shrunk violations" section: a few shrunk cases, each with its source and
its minimal follow-up, the kept edits marked. Empty (no section) when nothing was shrunk."""

from __future__ import annotations

import html

from core.case_filter import CaseFilter
from relations.edits import Edit, applied_spans, edits_text


def _marked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` escaped, with each span inside <mark>."""
    parts, last = [], 0
    for start, end in sorted(spans):
        parts += [html.escape(text[last:start]), f"<mark>{html.escape(text[start:end])}</mark>"]
        last = end
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def _example(row: dict) -> str:
    esc = html.escape
    kept = [Edit.from_dict(e) for e in row["kept_edits"]]
    spans = applied_spans(kept)
    fields = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(str(row['source_input'].get(name, '')))}</td>"
        f"<td>{_marked(text, spans.get(name, []))}</td></tr>"
        for name, text in row["minimal_followup"].items()
        if text != row["source_input"].get(name)
    )
    head = (
        f"<p><b>{esc(row['relation_id'])}</b> · {esc(row['model'])} · "
        f"{esc(str(row['source_answer']))} → {esc(str(row['followup_answer']))} · "
        f"{esc(edits_text(kept, row['edits_total']))} · {esc(row['status'])}, "
        f"{row['calls']} model calls</p>"
    )
    table = "<table><tr><th>field</th><th>source</th><th>minimal follow-up</th></tr>"
    return head + table + fields + "</table>"


def shrunk_section(store, flt: CaseFilter) -> str:
    rows = store.shrunk_examples(flt)
    if not rows:
        return ""
    intro = (
        '<h2>Shrunk violations</h2><p class="note">The fewest edits of each follow-up that '
        "still flip the answer (delta debugging, <code>morphscope shrink</code>); the kept edits "
        "are marked.</p>"
    )
    return intro + "".join(_example(row) for row in rows)
