"""The noise floor — the violation rate of re-sampling the unchanged input — and violation rates
net of it.

The floor is per model × task, never pooled across tasks; it is measured whatever the relation
filter (it is the reference for every relation), and over several tasks a net rate weights each
task's rate and floor by its PASS + FAIL cases.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.analysis.proportions import wilson_interval
from app.analysis.rates import net_of_floor, ratio, violation_rate
from app.analysis.relation_roles import RelationRoles, relation_roles
from core.case_filter import CaseFilter

# model → task id → that task's floor row (see ``noise_floor``).
Floors = dict[str, dict[str, dict[str, Any]]]


def noise_floor(
    store, flt: CaseFilter | None = None, *, roles: RelationRoles | None = None
) -> Floors:
    """Per model, per task: the noise-floor violation rate (Wilson interval) and its Δ noise.

    ``{model: {task_id: {n, pass, fail, violation_rate, noise_floor, ci_low, ci_high,
    inconsistency_rate, n_answered, mean_abs_delta, stability}}}``. ``n`` counts observations,
    one per (sample, repeat): a multi-field task's per-field identity follow-ups are one
    re-sample. The relation filter is ignored (the floor is a reference for every relation);
    the other filters apply. Models and tasks without floor observations are absent.
    """
    roles = roles or relation_roles(store)
    if not roles.noise_floor:
        return {}
    floor_ids = sorted(roles.noise_floor)
    base = flt or CaseFilter()
    by = ("model", "task_id")
    cells = {
        (r["model"], r["task_id"]): r
        for r in store.cell_stats(base.with_relations(floor_ids), by=by)
    }
    floors: Floors = {}
    for row in store.noise_floor_counts(base, floor_ids, by=by):
        n_pass, n_fail = row["n_pass"], row["n_fail"]
        low, high = wilson_interval(n_fail, n_pass + n_fail)
        rate = violation_rate(n_pass, n_fail)
        cell = cells.get((row["model"], row["task_id"]), {})
        floors.setdefault(row["model"], {})[row["task_id"]] = {
            "n": row["n"],
            "pass": n_pass,
            "fail": n_fail,
            "violation_rate": rate,
            "noise_floor": rate,
            "ci_low": low,
            "ci_high": high,
            "inconsistency_rate": ratio(row["n_changed"], row["n_answered"]),
            "n_answered": row["n_answered"],
            "mean_abs_delta": cell.get("mean_abs_delta"),
            "stability": cell.get("stability"),
        }
    return floors


def floor_rows(floors: Floors) -> list[dict[str, Any]]:
    """:func:`noise_floor`'s result as table rows (model, task_id, …), sorted."""
    return [
        {"model": model, "task_id": task_id, **floor}
        for model, tasks in sorted(floors.items())
        for task_id, floor in sorted(tasks.items())
    ]


def net_violation(
    groups: Iterable[dict[str, Any]], task_floors: dict[str, dict[str, Any]]
) -> tuple[float | None, float | None]:
    """(floor, net violation rate) of verdict-count rows of one model, each with a ``task_id``.

    Only tasks with a floor count: rate = their FAIL / (PASS + FAIL); floor = the tasks' floors
    weighted by those PASS + FAIL cases (so a single task gives its own floor); net =
    max(0, rate − floor). (None, None) when no task has a floor.
    """
    judged = fails = weighted_floor = 0.0
    for row in groups:
        floor = task_floors.get(row["task_id"], {}).get("noise_floor")
        n = row["n_pass"] + row["n_fail"]
        if floor is None or not n:
            continue
        judged += n
        fails += row["n_fail"]
        weighted_floor += n * floor
    if not judged:
        return None, None
    floor = weighted_floor / judged
    return floor, net_of_floor(fails / judged, floor)
