"""The SQL aggregates behind the Analysis overview, fetched once per filter.

:func:`fetch_aggregates` is the one place the overview's numbers are read from the store
(``storage.analysis_verbs``); ``app.analysis.metrics`` then computes every row from the
:class:`Aggregates` it returns without touching the store again, so each aggregate is queried
once and every table built from it agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.analysis.consistency import answer_types, same_answers
from app.analysis.noise_floor import Floors, floor_table
from app.analysis.relation_roles import RelationRoles, relation_roles
from core.case_filter import CaseFilter
from storage.answer_verbs import SameAnswers

MODEL_RELATION = ("model", "relation_id")
MODEL_RELATION_TASK = ("model", "relation_id", "task_id")
# The noise floor is per model × task, never pooled across tasks.
FLOOR_GROUPS = ("model", "task_id")


@dataclass(frozen=True)
class Aggregates:
    """What the store says about one filter's cases, as ``Store`` verbs return it.

    ``n_cases``: how many cases match; ``task_counts``: ``verdict_counts`` by model × relation ×
    task (so per-task floors can be netted) with ``n_changed`` counted by answer equivalence;
    ``cells``: :func:`fetch_cells` grouped by ``cells_by``; ``floors``: :func:`fetch_floors`;
    ``gaps``: :func:`agentdiff_gap`; ``step_scores``: :func:`step_scores`.
    """

    roles: RelationRoles
    n_cases: int
    task_counts: list[dict[str, Any]]
    cells: list[dict[str, Any]]
    floors: Floors
    gaps: list[dict[str, Any]]
    step_scores: list[dict[str, Any]]
    cells_by: tuple[str, ...] = MODEL_RELATION


def fetch_aggregates(store, flt: CaseFilter, *, by_task: bool = False) -> Aggregates:
    """Every aggregate of the overview for ``flt``, each query run once.

    ``by_task`` groups the cells by task too (a model × relation × task table)."""
    roles = relation_roles(store)
    same = same_answers(store, answer_types(store))
    cells_by = MODEL_RELATION_TASK if by_task else MODEL_RELATION
    # Independent scans: run them side by side on separate connections.
    found = store.parallel_reads(
        {
            "n_cases": lambda s: s.count_cases(flt),
            "task_counts": lambda s: s.verdict_counts(
                flt, by=MODEL_RELATION_TASK, same_answers=same
            ),
            "cells": lambda s: fetch_cells(s, flt, roles, cells_by),
            "floors": lambda s: fetch_floors(s, flt, roles, same),
            "gaps": lambda s: agentdiff_gap(s, flt),
            "step_scores": lambda s: step_scores(s, flt),
        }
    )
    return Aggregates(roles=roles, cells_by=cells_by, **found)


def fetch_cells(
    store, flt: CaseFilter, roles: RelationRoles, by: tuple[str, ...] = MODEL_RELATION
) -> list[dict[str, Any]]:
    """``cell_stats`` with the roles' relation sets: MAD and stability over the SI paper's
    transformations (``roles.paper``), the wider stability over the invariance relations, the
    noise-floor relations counted once per sample × repeat."""
    return store.cell_stats(
        flt,
        by=by,
        paper=sorted(roles.paper),
        invariance=sorted(roles.invariance | roles.noise_floor),
        once_per_repeat=sorted(roles.noise_floor),
    )


def fetch_floors(store, flt: CaseFilter, roles: RelationRoles, same: SameAnswers) -> Floors:
    """The noise floor per model and task (see ``app.analysis.noise_floor.floor_table``).

    The filter's relation list is replaced by the floor relations: the floor is the reference
    for every relation, whichever are shown; the other filters apply."""
    if not roles.noise_floor:
        return {}
    floor_ids = sorted(roles.noise_floor)
    floor_flt = flt.with_relations(floor_ids)
    cells = fetch_cells(store, floor_flt, roles, FLOOR_GROUPS)
    counts = store.noise_floor_counts(flt, floor_ids, by=FLOOR_GROUPS, same_answers=same)
    return floor_table(counts, cells)


def agentdiff_gap(store, flt: CaseFilter) -> list[dict[str, Any]]:
    """Per model with side-tagged cases: the AgentDiff gap, its spread and the pooled rates.

    Columns: model, gap (mean over the model's (model, task) cells of meaning − presentation
    inconsistency, AgentDiff eqs. 1-2), sd_gap (over cells), n_cells, n_originals,
    meaning_rate / presentation_rate (mean side rates) and n_meaning / n_presentation (judged
    cases); see ``Store.side_gap``.
    """
    rows = store.side_gap(flt, by=("model",))
    return [row for row in rows if row["n_meaning"] or row["n_presentation"]]


def step_scores(store, flt: CaseFilter) -> list[dict[str, Any]]:
    """Per model × relation with step scores: AvgStepScore of source and follow-up outputs and
    its change under the relation (``step_score_delta``), over n scored cases."""
    return store.step_score_stats(flt, by=MODEL_RELATION)
