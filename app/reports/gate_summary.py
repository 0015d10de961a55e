"""The release gate's verdict for people: the lines `morphscope gate` prints, a Markdown summary
(for ``$GITHUB_STEP_SUMMARY``) and GitHub Actions ``::error`` annotations.

Model output is untrusted: in Markdown it is HTML-escaped inside ``<pre>`` blocks (no Markdown is
parsed there, so no image or link in an answer makes the browser send a request).
"""

from __future__ import annotations

import html

from app.analysis.release_gate import FAILED, NO_DATA, REFERENCE, RelationVerdict
from app.analysis.release_report import GateReport

# The step summary's limit is 1 MiB; the summary stops adding cases well before it.
MARKDOWN_LIMIT_BYTES = 1024 * 1024
_MARKDOWN_BUDGET_BYTES = 900 * 1024
CASES_PER_RELATION = 10
OUTPUT_CHARS = 400
MAX_ANNOTATIONS = 10


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _interval(verdict: RelationVerdict) -> str:
    gated = verdict.gated
    if gated.ci_low is None:
        return "–"
    return f"{_percent(gated.ci_low)}–{_percent(gated.ci_high)}"


def headline(report: GateReport) -> str:
    """One line: the outcome and its counts."""
    failed, regressed, errors = len(report.failures), len(report.regressions), report.n_errors
    word = {0: "PASSED", 1: "FAILED", 3: "ERRORS"}[report.exit_code]
    parts = [f"{failed} relation(s) over their max", f"{regressed} regressed"]
    if errors:
        parts.append(
            f"{errors} ERROR case(s)" + (" (allowed)" if report.settings.allow_errors else "")
        )
    return f"gate {word} ({report.settings.mode}): " + ", ".join(parts)


def text_lines(report: GateReport) -> list[str]:
    """The table `morphscope gate` prints: one line per relation of each run, worst first."""
    lines = [headline(report)]
    for verdict in report.worst_first():
        if verdict.outcome in (REFERENCE,):
            continue
        lines.append(
            f"  {verdict.outcome.upper():9} {verdict.relation_id:28} {verdict.model} / "
            f"{verdict.task_id}: {verdict.reason}"
        )
    for change in report.regressions:
        lines.append(
            f"  REGRESSED {change.relation_id:28} {_percent(change.baseline_rate)} → "
            f"{_percent(change.rate)} (+{change.difference:.1%}, 95% {change.ci_low:+.1%} to "
            f"{change.ci_high:+.1%}, adjusted p {change.p_adjusted:.3g}) vs run "
            f"{change.baseline_run_id}"
        )
    lines += [f"  note: {note}" for note in report.notes]
    return lines


def _change_cell(report: GateReport, verdict: RelationVerdict) -> str:
    for run in report.runs:
        for change in run.changes:
            if (change.run_id, change.relation_id) == (verdict.run_id, verdict.relation_id):
                mark = " **regressed**" if change.regressed else ""
                return f"{change.difference:+.1%} (p_adj {change.p_adjusted:.2g}){mark}"
    return "–"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: HTML-escaped, and a ``|`` cannot end the cell."""
    return html.escape(text).replace("|", "&#124;")


def _anchor(case_id: str) -> str:
    return "case-" + "".join(ch if ch.isalnum() else "-" for ch in case_id)


def markdown_summary(store, report: GateReport) -> str:
    """The summary table, worst relations first, with links to their failing cases below."""
    rows = [v for v in report.worst_first() if v.outcome != REFERENCE]
    failing = {v.relation_id: v for v in rows if v.outcome == FAILED}
    regressed = {c.relation_id for c in report.regressions}
    lines = [
        f"## Morphscope gate: {headline(report)}",
        "",
        "| verdict | relation | model / task | rate | 95% interval | noise floor | max | n | vs baseline | failing cases |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    cases_by_key: dict[tuple[str, str], list] = {}
    for verdict in rows:
        if verdict.outcome == FAILED or verdict.relation_id in regressed:
            cases_by_key[(verdict.run_id, verdict.relation_id)] = store.cases_for(
                run_ids=[verdict.run_id], relation_ids=[verdict.relation_id], verdicts=["FAIL"],
                limit=CASES_PER_RELATION,
            )  # fmt: skip
    budget = _MARKDOWN_BUDGET_BYTES
    for shown, verdict in enumerate(rows):
        if budget <= 0:
            lines.append(f"\n({len(rows) - shown} more relations left out: the size limit)")
            break
        cases = cases_by_key.get((verdict.run_id, verdict.relation_id), [])
        links = ", ".join(f"[`{c.id}`](#{_anchor(c.id)})" for c in cases[:3]) or "–"
        outcome = verdict.outcome.upper() if verdict.outcome != NO_DATA else "no data"
        lines.append(
            f"| {outcome} | `{verdict.relation_id}` | {_cell(verdict.model)} / "
            f"{_cell(verdict.task_id)} | {_percent(verdict.gated.rate)} | {_interval(verdict)} | "
            f"{_percent(verdict.gated.noise_floor)} | {_percent(verdict.threshold)} | "
            f"{verdict.gated.judged} | {_change_cell(report, verdict)} | {links} |"
        )
        budget -= len(lines[-1].encode()) + 1
    lines += [f"\n> note: {html.escape(note)}" for note in report.notes]
    budget = _MARKDOWN_BUDGET_BYTES - len("\n".join(lines).encode())
    details = _case_details(cases_by_key, failing, budget)
    return "\n".join(lines + details) + "\n"


def _case_details(cases_by_key, failing, budget: int) -> list[str]:
    out: list[str] = []
    if cases_by_key:
        out += ["", "### Failing cases"]
    for (run_id, relation_id), cases in cases_by_key.items():
        out += ["", f"#### `{relation_id}` (run `{run_id}`)"]
        for case in cases:
            block = _case_block(case)
            size = len("\n".join(block).encode()) + 1
            if size > budget:
                out.append("\n(more cases left out: the summary's size limit)")
                return out
            budget -= size
            out += block
    return out


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= OUTPUT_CHARS else text[: OUTPUT_CHARS - 1] + "…"


def _case_block(case) -> list[str]:
    from app.reports.gate_junit import case_text

    return [
        f'<a name="{_anchor(case.id)}"></a>',
        f"**`{case.id}`** · sample `{case.sample_id}` · repeat {case.repeat_index}",
        "<pre>" + html.escape(_cut(case_text(case).replace("\r", ""))) + "</pre>",
    ]


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: GateReport) -> list[str]:
    """At most ten ``::error`` workflow commands, for the worst failing or regressed relations."""
    lines = []
    for verdict in report.worst_first():
        if verdict.outcome == FAILED:
            title = f"morphscope gate: {verdict.relation_id} ({verdict.model}, {verdict.task_id})"
            lines.append(f"::error title={_escape_property(title)}::{_escape_data(verdict.reason)}")
    for change in report.regressions:
        title = f"morphscope regression: {change.relation_id}"
        message = (
            f"violation rate {change.baseline_rate:.1%} → {change.rate:.1%} against run "
            f"{change.baseline_run_id} (adjusted p {change.p_adjusted:.3g})"
        )
        lines.append(f"::error title={_escape_property(title)}::{_escape_data(message)}")
    return lines[:MAX_ANNOTATIONS]
