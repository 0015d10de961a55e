"""Who labels and which FAILs: the labeler's name and the filters that make the queue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from app.ui.triage.state import LABELER
from storage import Store

ANY_LABELER = "(anyone or no one)"


@dataclass(frozen=True)
class CaseFilters:
    """Which FAILs the panels look at (None = all)."""

    run_ids: list[str] | None = None
    models: list[str] | None = None
    tasks: list[str] | None = None
    relation_ids: list[str] | None = None

    def as_kwargs(self) -> dict[str, list[str] | None]:
        """The filters as the Store's triage verbs take them."""
        return {
            "run_ids": self.run_ids,
            "models": self.models,
            "tasks": self.tasks,
            "relation_ids": self.relation_ids,
        }


@dataclass(frozen=True)
class QueueChoice:
    """The filters plus which labels matter: what decides the queue of cases to label."""

    filters: CaseFilters
    unlabeled_only: bool = True
    unlabeled_by: str | None = None  # unlabeled by this labeler (a teammate's labels aside)
    labeled_by: str | None = None

    def queue(self, store: Store) -> list[str]:
        """The case ids to label, in order."""
        return store.triage_queue(
            **self.filters.as_kwargs(),
            unlabeled_only=self.unlabeled_only,
            labeler=self.unlabeled_by,
            labeled_by=self.labeled_by,
        )


def render_labeler() -> str:
    """The labeler's name for this browser session ('' until given: the first label asks).

    Never prefilled from the database: a colleague in another browser would label under the
    last labeler's name, and agreement between labelers would compare one person with herself.
    """
    return st.text_input(
        "Your name (labeler)",
        key=LABELER,
        help="Kept with every label you give in this browser session",
    ).strip()


def _run_title(run: dict[str, Any]) -> str:
    return f"{run['model']} · {run['task_id']} · {run['created_at'][:16]} ({run['n_fail']} FAIL)"


def render_filters(store: Store, options: dict[str, list[Any]], labeler: str) -> QueueChoice:
    """Runs, models, tasks, relations and label status, in an expander."""
    runs_by_id = {run["id"]: run for run in options["runs"]}
    # Folded by default so the case and its label buttons stay above the fold at 1280×800.
    with st.expander("Filters", expanded=False, icon=":material/filter_list:"):
        columns = st.columns(4)
        run_ids = columns[0].multiselect(
            "Runs",
            list(runs_by_id),
            key="triage_runs",
            wrap=True,
            format_func=lambda run_id: _run_title(runs_by_id[run_id]),
            placeholder="All runs",
        )
        models = columns[1].multiselect(
            "Models", options["models"], key="triage_models", wrap=True, placeholder="All"
        )
        tasks = columns[2].multiselect(
            "Tasks", options["tasks"], key="triage_tasks", wrap=True, placeholder="All"
        )
        relations = columns[3].multiselect(
            "Relations", options["relations"], key="triage_relations", wrap=True, placeholder="All"
        )
        columns = st.columns(3)
        unlabeled_only = columns[0].checkbox("Unlabeled only", value=True, key="triage_unlabeled")
        scope = columns[1].radio(
            "Unlabeled by",
            ["anyone", "me"],
            key="triage_scope",
            horizontal=True,
            disabled=not unlabeled_only,
            help="'me': cases you have not labeled yet, even if a teammate has (for agreement)",
        )
        labeled_by = columns[2].selectbox(
            "Labeled by", [ANY_LABELER, *store.labelers()], key="triage_labeled_by"
        )
    filters = CaseFilters(
        run_ids=run_ids or None,
        models=models or None,
        tasks=tasks or None,
        relation_ids=relations or None,
    )
    return QueueChoice(
        filters=filters,
        unlabeled_only=unlabeled_only,
        unlabeled_by=labeler if (unlabeled_only and scope == "me") else None,
        labeled_by=None if labeled_by == ANY_LABELER else labeled_by,
    )
