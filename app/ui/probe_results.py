"""The Probe page's results of the latest run: its summary line, the validity gate's
rejections, its cases side by side, and deleting it."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.catalogue.formats import Unit, format_shown
from app.engine.progress import RunSummary
from app.engine.workspace import all_relations
from app.ui.components import (
    VERDICT_CELL_STYLES,
    fields_text,
    inert,
    page_link,
    relation_name,
    shorten,
    side_by_side,
    verdict_badge,
)
from app.ui.data import data_changed, shows_results
from app.ui.probe_form import ProbeChoices
from app.ui.rewrite_yield import render_rewrite_yield, render_weak_rewriter_notes
from app.ui.shrink_panel import render_shrink_panel
from core.case_filter import CaseFilter
from relations.base import RelationKind
from storage import Store
from storage.gate_verbs import GateCount

MAX_SHOWN_CASES = 60
ANSWER_LIMIT = 40
"""Characters of each answer in the results table's "answers" column (the cell shows its start;
a label or a number fits whole)."""


def summary_line(summary: RunSummary) -> str:
    """The verdict counts of a finished run and what it cost (calls, cache hits, time)."""
    counts = " · ".join(f"{verdict_badge(k)} {v}" for k, v in sorted(summary.verdicts.items()))
    head = f"Run `{summary.run_id}` — {summary.cases} cases: {counts}  \n"
    if summary.new_cases == 0 and summary.calls_made == 0 and not summary.retried_errors:
        return head + "Every case of this configuration was already stored: 0 model calls."
    retried = (
        f"{summary.retried_errors} errored case(s) sent again, " if summary.retried_errors else ""
    )
    return head + (
        f"{retried}{summary.calls_made} model calls, {summary.cache_hits} answered from the "
        f"cache, {summary.elapsed_s:.1f} s"
    )


def error_notice(summary: RunSummary) -> str | None:
    """A warning for a run with ERROR cases (shown above its results), or None."""
    line = summary.error_line()
    if not line:
        return None
    # The error kinds quote server replies: shown as text, never as live Markdown.
    text = markdown_literal(line[0].upper() + line[1:])
    if summary.stop_reason:
        text += f". {summary.stop_reason[0].upper()}{summary.stop_reason[1:]}"
    return f"{text}. Press **Run probe** again with the same settings to retry them."


def markdown_literal(text: str) -> str:
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~])", r"\\\1", text)


def case_title(case: dict[str, Any]) -> str:
    """A case's one-line title: "FAIL · Negation on text · measured 0.31" (the relation's name,
    the field it changed, the oracle's value in the catalogue's format)."""
    title = f"{case['verdict']} · {relation_name(case['relation_id'])} on {case['target']}"
    if case.get("value") is not None:
        title += f" · measured {format_shown(case['value'], Unit.DECIMAL)}"
    return title


def render_gate_summary(counts: list[GateCount]) -> None:
    """Per relation, how many follow-ups the validity gate rejected (nothing when none were),
    beside its other SKIPs: the weak-rewriter note's yield counts the relation's own SKIPs (an
    empty or identical rewrite) as failed attempts too, and without them the two disagreed
    ("2 of 6 rejected" above "2 of 6 rewrites passed")."""
    rejected = [count for count in counts if count.rejected]
    if not rejected:
        return
    st.markdown(
        "**Validity gate** — follow-ups SKIPped before sending, per relation; other SKIPs: "
        "no usable follow-up was made, the relation does not apply, or a precondition failed"
    )
    st.dataframe(
        pd.DataFrame(
            {
                "relation": [c.relation_id for c in rejected],
                "follow-ups": [c.followups for c in rejected],
                "rejected": [c.rejected for c in rejected],
                "other SKIPs": [c.skipped_otherwise for c in rejected],
                "share rejected": [c.rejected_share for c in rejected],
            }
        ),
        hide_index=True,
        column_config={"share rejected": st.column_config.NumberColumn(format="percent")},
    )


def _llm_relation_ids(store: Store) -> frozenset[str]:
    return frozenset(r.id for r in all_relations(store) if r.kind == RelationKind.LLM)


# Each column's least width in pixels: together 810 (754 without "field"), inside the 820 px a
# 1280 px screen leaves the table beside the sidebar (wider, Streamlit shares out the rest).
# Sized to their contents instead, the columns from the answers on lay beyond the right edge.
_RESULT_COLUMN_PX = {
    "verdict": 56, "relation": 130, "field": 56, "source input": 130, "follow-up input": 130,
    "answers": 126, "value": 52, "reason": 130,
}  # fmt: skip


def results_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Probe's results table of ``frame`` (the run's cases) and its column config: verdict,
    relation, the two inputs, the two answers in one column ("positive → negative"), the
    measured value and the reason; the changed field only when the cases change more than one.
    Text cells are shortened ("—" when missing; the expanders below show them whole), the
    value written as the Analysis tables write a decimal."""
    answers = [
        f"{shorten(source, ANSWER_LIMIT)} → {shorten(followup, ANSWER_LIMIT)}"
        for source, followup in zip(frame["source_answer"], frame["followup_answer"], strict=True)
    ]
    table = pd.DataFrame(
        {
            "verdict": frame["verdict"].map(str),
            "relation": frame["relation_id"],
            "field": frame["target"],
            "source input": frame["source_input"].map(fields_text).map(shorten),
            "follow-up input": frame["followup_input"].map(fields_text).map(shorten),
            "answers": answers,
            "value": frame["value"].map(lambda v: format_shown(v, Unit.DECIMAL)),
            "reason": frame["reason"].map(shorten),
        }
    )
    if frame["target"].nunique() <= 1:
        table = table.drop(columns="field")
    columns: dict[str, Any] = {
        name: st.column_config.TextColumn(width=px) for name, px in _RESULT_COLUMN_PX.items()
    }
    columns["answers"] = st.column_config.TextColumn(
        width=_RESULT_COLUMN_PX["answers"], help="The source's answer → the follow-up's"
    )
    columns["value"] = st.column_config.TextColumn(
        width=_RESULT_COLUMN_PX["value"],
        help="The oracle's measured value (cosine, |Δ|, 1/0 for labels); — when the case was "
        "not judged (SKIP, ERROR)",
    )
    return table, {name: config for name, config in columns.items() if name in table}


def render_results(store, run_id: str, key: str) -> None:
    """The side-by-side results of one run, with filters by verdict and relation."""
    cases = store.cases_for([run_id])
    if not cases:
        st.info("This run has no cases yet.")
        return
    llm_relations = _llm_relation_ids(store)
    render_gate_summary(store.gate_counts(run_id))
    yields = store.rewrite_yield(CaseFilter(run_ids=(run_id,)), sorted(llm_relations))
    render_weak_rewriter_notes(yields)  # at the top; the table goes below the cases
    frame = pd.DataFrame(cases)
    cols = st.columns(2)
    # wrap: in a column, chips stay on one scrolling row and push the text field out of view
    # (the box then opens from its chevron alone; see probe_form.relation_picker)
    verdicts = cols[0].multiselect(
        "Verdict", ["FAIL", "PASS", "SKIP", "ERROR"], default=[], key=f"{key}_verdicts",
        placeholder="all verdicts", wrap=True,
    )  # fmt: skip
    relation_ids = sorted(frame["relation_id"].unique())
    relations = cols[1].multiselect(
        "Relation", relation_ids, default=[], key=f"{key}_relations",
        placeholder="all relations", wrap=True,
    )  # fmt: skip
    if verdicts:
        frame = frame[frame["verdict"].isin(verdicts)]
    if relations:
        frame = frame[frame["relation_id"].isin(relations)]
    table, columns = results_table(frame)
    styled = table.style.map(lambda v: VERDICT_CELL_STYLES.get(v, ""), subset=["verdict"])
    st.dataframe(styled, hide_index=True, column_config=columns)
    st.caption(
        f"{len(frame)} case(s) shown. Expand a case for the full texts, differences highlighted."
    )
    order = {"FAIL": 0, "ERROR": 1, "PASS": 2, "SKIP": 3}
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    ranked = sorted(records, key=lambda c: order.get(c["verdict"], 9))
    by_id = {case.id: case for case in cases}
    for case in ranked[:MAX_SHOWN_CASES]:
        title = case_title(case)
        with st.expander(inert(title, one_line=True)):
            st.markdown(f"{verdict_badge(case['verdict'])} {inert(case['reason'] or '')}")
            side_by_side(
                "Source input", fields_text(case["source_input"]),
                "Follow-up input", fields_text(case["followup_input"]),
            )  # fmt: skip
            if case.get("source_output") is not None or case.get("followup_output") is not None:
                side_by_side(
                    f"Source output → {case.get('source_answer')}", case.get("source_output"),
                    f"Follow-up output → {case.get('followup_answer')}", case.get("followup_output"),
                )  # fmt: skip
            render_shrink_panel(store, by_id[case["id"]])
    if len(ranked) > MAX_SHOWN_CASES:
        st.caption(f"Showing the first {MAX_SHOWN_CASES}; filter to see others, or use Analysis.")
    render_rewrite_yield(yields, notes=False)


def render_delete_run(store: Store, run_id: str, key: str) -> None:
    """A Delete button that asks first; deleting removes the run, its cases and their labels."""
    pending = f"{key}_confirm_{run_id}"
    if not st.session_state.get(pending):
        if st.button("Delete this run…", key=f"{key}_delete_{run_id}"):
            st.session_state[pending] = True
            st.rerun()
        return
    run = store.run(run_id)
    n_cases = len(store.recorded_case_verdicts(run_id)) if run else 0
    st.warning(
        f"Delete run `{run_id}` with its {n_cases} cases and their labels? This cannot be undone."
    )
    cols = st.columns(2)
    if cols[0].button("Yes, delete", type="primary", key=f"{key}_delete_yes_{run_id}"):
        store.delete_run(run_id)
        st.session_state.pop(pending, None)
        for suffix in ("summary", "run_id"):
            st.session_state.pop(f"{key}_{suffix}", None)
        data_changed()
        st.rerun()
    if cols[1].button("Keep it", key=f"{key}_delete_no_{run_id}"):
        st.session_state.pop(pending, None)
        st.rerun()


def render_latest_results(store: Store, key: str, choices: ProbeChoices | None = None) -> None:
    """The summary line of this session's last run and its cases side by side; with the form's
    ``choices``, only while the form still describes that run (a resumed run always shows), and
    only while no other panel (batch mode) has made newer results."""
    if not shows_results(key):
        return
    asked_by = st.session_state.get(f"{key}_fingerprint")
    if choices is not None and asked_by is not None and asked_by != choices.fingerprint:
        st.caption(
            "The form has changed since the last run: press **Run probe** for the results of "
            "this configuration (answers already stored are reused)."
        )
        return
    summary = st.session_state.get(f"{key}_summary")
    if summary is not None:
        notice = error_notice(summary)
        if notice:
            st.warning(notice)
        st.markdown(summary_line(summary))
    run_id = st.session_state.get(f"{key}_run_id")
    if run_id and store.run(run_id) is not None:
        page_link(
            "pages/analysis.py", "Open Analysis", ":material/analytics:",
            help="Rates, intervals and heatmaps of this run with the others",
        )  # fmt: skip
        st.subheader("Source and follow-up, side by side")
        render_results(store, run_id, key=f"{key}_results")
        render_delete_run(store, run_id, key=f"{key}_manage")
