"""The Analysis page's filter panel and headline numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.rates import violation_rate
from app.ui.analysis_view import run_label
from core.case_filter import CaseFilter

FILTER_KEYS = ("analysis_runs", "analysis_models", "analysis_tasks", "analysis_relations")


def forget_vanished_choices(opts: dict[str, Any]) -> None:
    """Drop remembered filter choices that no longer exist (a run was deleted, the DB switched)."""
    state = st.session_state
    valid_by_key = dict(
        zip(
            FILTER_KEYS,
            ({run["id"] for run in opts["runs"]}, opts["models"], opts["tasks"], opts["relations"]),
            strict=True,
        )
    )
    for key, valid in valid_by_key.items():
        if key in state:
            state[key] = [value for value in state[key] if value in valid]


def render_filters(
    opts: dict[str, Any], relations: Mapping[str, Sequence[str]] | None = None
) -> CaseFilter:
    """The filter expander (runs, models, tasks, relations, run dates) → the chosen filter.

    ``relations`` (run id → its relation set) makes the run list name each run's relations."""
    relations = relations or {}
    forget_vanished_choices(opts)
    runs_by_id = {run["id"]: run for run in opts["runs"]}
    with st.expander("Filters (empty = everything)", expanded=True):
        top = st.columns(3)
        run_ids = top[0].multiselect(
            "Runs",
            list(runs_by_id),
            key="analysis_runs",
            wrap=True,
            format_func=lambda run_id: run_label(runs_by_id[run_id], relations.get(run_id, ())),
            placeholder="All runs",
        )
        models = top[1].multiselect("Models", opts["models"], key="analysis_models", wrap=True)
        tasks = top[2].multiselect("Tasks", opts["tasks"], key="analysis_tasks", wrap=True)
        bottom = st.columns([3, 1, 2])
        relations = bottom[0].multiselect(
            "Relations", opts["relations"], key="analysis_relations", wrap=True
        )
        by_date = bottom[1].toggle("Limit run dates", key="analysis_by_date")
        dates: tuple = ()
        if by_date and opts["date_min"]:
            first = pd.Timestamp(opts["date_min"]).date()
            last = pd.Timestamp(opts["date_max"]).date()
            picked = bottom[2].date_input(
                "Runs started between",
                value=(first, last),
                min_value=first,
                max_value=last,
                key="analysis_dates",
            )
            dates = tuple(picked) if isinstance(picked, tuple | list) else (picked,)
    return CaseFilter.make(
        run_ids=run_ids or None,
        models=models or None,
        tasks=tasks or None,
        relations=relations or None,
        date_from=dates[0] if dates else None,
        date_to=dates[-1] if dates else None,
    )


def render_headline(summary: dict[str, Any]) -> None:
    """Cases, models, relations and the overall non-identity violation rate."""
    model_rows = summary["models"]
    columns = st.columns(4)
    columns[0].metric("Cases", f"{summary['n_cases']:,}")
    columns[1].metric("Models", len(model_rows))
    columns[2].metric("Relations", len({r["relation_id"] for r in summary["rows"]}))
    rate = violation_rate(sum(m["pass"] for m in model_rows), sum(m["fail"] for m in model_rows))
    columns[3].metric(
        "Violation rate (non-identity)",
        f"{rate:.1%}" if rate is not None else "—",
        help="FAIL / (PASS + FAIL) over every non-identity relation; SKIP and ERROR excluded",
    )
