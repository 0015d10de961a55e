"""The paper metrics, computed from SQL aggregates (``storage.analysis_verbs``).

Every number on the Analysis page, in ``report --json`` and in the HTML report comes from these
functions, so each is computed once, here (names, formats and one-line definitions: the catalogue
in ``app.analysis.catalogue``):

**Counts (per case).** ``n`` all cases; ``pass`` / ``fail`` / ``skip`` / ``error`` by verdict;
``invalid_followup`` the SKIPs whose reason starts with ``invalid_followup`` (validity gate; part of
``skip``, shown separately). SKIP and ERROR are never counted as passes or violations.

**Violation rate** = fail / (pass + fail), with a **Wilson 95% score interval** (z = 1.959964):
centre = (p + z²/2n) / (1 + z²/n), half-width = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n), clipped to
[0, 1]; ``None`` when pass + fail = 0.

**Δ metrics.** Δ = score_followup − score_source (only when the sample has a reference). A *cell*
is one (model, task, sample, relation); its Δ is the mean Δ of its cases and ``mean_delta`` is the
mean cell Δ. MAD and stability follow the SI paper (§3.1) per *observation* (one case with a Δ;
repeats are not averaged before the absolute value): **MAD** (eq. 6) = mean |Δ| over the
non-identity relations (the contrastive control included, as in the paper; in a per-relation row
it is the row's own mean |Δ|, which for ``si.identity`` is the Δ noise); **stability** = share of
observations with |Δ| < 0.05, over every relation identity included (the paper's 19 × 8
denominator) and, as ``stability_excl_identity``, without identity. Relations of other families
whose expectation is "should change" (``outside_mad_relations``) never enter MAD or stability.
**AvgStepScore** (eq. 4) = the mean over the output's reasoning steps of each step's highest
cosine to any reference step; ``step_score`` averages the source outputs' and the follow-ups',
``step_score_delta`` the change (follow-up − source) per case.

**Judged cases only.** Similarity, inconsistency, Δ, MAD, stability, the AgentDiff gap and the
statistical tests read only PASS/FAIL cases: a SKIP (the validity gate's, or an oracle's
``precondition: …``) or an ERROR measured nothing about robustness.

**Mean similarity** = mean ``output_similarity`` (cosine of the two outputs' embeddings) over judged
cases. **Inconsistency rate** = share of judged cases whose follow-up answer differs from the source
answer (compared ignoring ASCII letter case, as SQLite's NOCASE; the task parsers already
normalise), among cases with both answers.

**Noise floor** (per model × task, never pooled across tasks) = the violation rate of the
noise-floor relation (``si.identity``: the unchanged input re-sampled) over its observations, one
per (sample, repeat) however many field targets a multi-field task sends; computed regardless of
the relation filter, with its Wilson interval. **Net violation rate** (invariance relations only:
expectation "equivalent", the floor relation itself excluded) = max(0, rate − floor), where over
several tasks rate and floor are both weighted by each task's PASS + FAIL cases and tasks without
a floor are left out; ``None`` for "should change" relations and when no task has a floor.
Model-level violation rate, similarity and inconsistency are over the non-floor relations.

**AgentDiff gap** (per model; AgentDiff §3.2 eqs. 1-2) = per (model, task) cell, the mean
inconsistency rate of the meaning relations minus that of the presentation relations, each
relation's rate averaged over its own originals (an original missing one side still counts on the
other); then the mean over cells. Inconsistent = the oracle judged the answers not equivalent (FAIL),
so "5.4 km" and "5.4" are one numeric answer. **Severity proxies** (per follow-up, computed in Python
for drill-down sets only): normalised Levenshtein distance, token Jaccard distance, embedding cosine
distance of the two *inputs* (1 − input similarity) and |length change| ratio between source and
follow-up input text.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from app.analysis.catalogue import MISSING_META, meta_value_order
from app.analysis.proportions import Z95, wilson_interval
from storage.analysis_verbs import IDENTITY_RELATION, STABILITY_THRESHOLD
from storage.case_filter import CaseFilter

# The SI paper's family: all of its relations (the contrastive negative control included) enter
# MAD and stability, whatever their expectation.
SI_FAMILY = "si"

# ------------------------------------------------------------------ small definitions


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, ``None`` when the denominator is 0."""
    return numerator / denominator if denominator else None


def violation_rate(n_pass: int, n_fail: int) -> float | None:
    """FAIL / (PASS + FAIL), ``None`` when nothing passed or failed."""
    return ratio(n_fail, n_pass + n_fail)


def net_of_floor(rate: float | None, floor: float | None) -> float | None:
    """Violation rate net of the noise floor: max(0, rate − floor); None if either is unknown."""
    if rate is None or floor is None:
        return None
    return max(0.0, rate - floor)


def _rates(counts: dict[str, Any]) -> dict[str, Any]:
    """The public count/rate columns from one ``verdict_counts`` aggregate row."""
    n_pass, n_fail = counts["n_pass"], counts["n_fail"]
    low, high = wilson_interval(n_fail, n_pass + n_fail)
    return {
        "n": counts["n"],
        "pass": n_pass,
        "fail": n_fail,
        "skip": counts["n_skip"],
        "error": counts["n_error"],
        "invalid_followup": counts["n_invalid_followup"],
        "violation_rate": violation_rate(n_pass, n_fail),
        "ci_low": low,
        "ci_high": high,
        "mean_similarity": ratio(counts["sum_similarity"], counts["n_similarity"]),
        "inconsistency_rate": ratio(counts["n_changed"], counts["n_answered"]),
        "n_answered": counts["n_answered"],
    }


def _sum_counts(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    keys = (
        "n",
        "n_pass",
        "n_fail",
        "n_skip",
        "n_error",
        "n_invalid_followup",
        "n_similarity",
        "sum_similarity",
        "n_answered",
        "n_changed",
    )
    total = dict.fromkeys(keys, 0)
    for row in rows:
        for key in keys:
            total[key] += row[key] or 0
    return total


# ------------------------------------------------------------------ relation roles


@dataclass(frozen=True)
class RelationRoles:
    """What the metrics need to know about relations, read from their attributes.

    ``noise_floor``: ids of relations that re-sample the unchanged input (``si.identity``);
    ``invariance``: ids whose expectation is "equivalent" — the only ones a noise floor is
    subtracted from (floor relations excluded); ``outside_mad``: the "should change" relations
    of families other than the SI paper's, which never enter MAD or stability (their Δ measures a
    change the relation asks for, not a failure of invariance). Relations unknown here (e.g.
    imported logs of a relation no longer registered) are in none of the sets.
    """

    noise_floor: frozenset[str]
    invariance: frozenset[str]
    outside_mad: frozenset[str] = frozenset()

    @classmethod
    def of(cls, relations: Iterable[Any]) -> RelationRoles:
        from relations.base import Expectation
        from relations.validity import MEANING_PRESERVING

        relations = list(relations)
        floor = frozenset(r.id for r in relations if r.noise_floor)
        invariance = (
            frozenset(r.id for r in relations if r.expectation is Expectation.EQUIVALENT) - floor
        )
        outside_mad = frozenset(
            r.id
            for r in relations
            if r.family != SI_FAMILY and r.expectation not in MEANING_PRESERVING
        )
        return cls(noise_floor=floor, invariance=invariance, outside_mad=outside_mad)


def relation_roles(store=None) -> RelationRoles:
    """The roles of the built-in relations and, given a store, its custom ones."""
    from relations.registry import list_relations

    extra: list[Any] = []
    if store is not None and hasattr(store, "custom_relation_specs"):
        from relations.custom import custom_relations

        extra = custom_relations(store)
    return RelationRoles.of(list_relations(extra=extra))


def outside_mad_relations(store) -> tuple[str, ...]:
    """Ids of the relations that never enter MAD or stability (see ``RelationRoles``)."""
    return tuple(sorted(relation_roles(store).outside_mad))


# ------------------------------------------------------------------ summaries


def noise_floor(
    store, flt: CaseFilter | None = None, *, roles: RelationRoles | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
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
    floors: dict[str, dict[str, dict[str, Any]]] = {}
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


def floor_rows(floors: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
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


def _sum_by(rows: Iterable[dict[str, Any]], by: tuple[str, ...]) -> list[dict[str, Any]]:
    """Verdict-count rows summed over the columns not in ``by`` (e.g. tasks)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[c] for c in by)].append(row)
    return [
        {**dict(zip(by, key, strict=True)), **_sum_counts(members)}
        for key, members in sorted(groups.items())
    ]


def model_relation_rows(
    store,
    flt: CaseFilter | None = None,
    *,
    by_task: bool = False,
    floors: dict[str, dict[str, dict[str, Any]]] | None = None,
    task_counts: list[dict[str, Any]] | None = None,
    cells: list[dict[str, Any]] | None = None,
    roles: RelationRoles | None = None,
) -> list[dict[str, Any]]:
    """One row per model × relation (× task): counts, violation rate + CI, Δ metrics, floor.

    Columns: model, relation_id, [task_id], n, pass, fail, skip, error, invalid_followup,
    violation_rate, ci_low, ci_high, noise_floor, net_violation_rate, mean_delta, mad, stability,
    n_cells, mean_similarity, inconsistency_rate, n_answered (see the module docstring).
    ``noise_floor`` / ``net_violation_rate`` are set for invariance relations only.
    ``task_counts`` is ``verdict_counts`` by model × relation × task (queried when absent).
    """
    roles = roles or relation_roles(store)
    by = ("model", "relation_id", "task_id") if by_task else ("model", "relation_id")
    floors = noise_floor(store, flt, roles=roles) if floors is None else floors
    if cells is None:
        outside_mad = tuple(sorted(roles.outside_mad))
        cells = store.cell_stats(flt, by=by, outside_mad=outside_mad)
    cell_by_key = {tuple(r[c] for c in by): r for r in cells}
    if task_counts is None:
        task_counts = store.verdict_counts(flt, by=("model", "relation_id", "task_id"))
    per_task: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in task_counts:
        per_task[tuple(row[c] for c in by)].append(row)
    rows = []
    for key, members in sorted(per_task.items()):
        counts = {**dict(zip(by, key, strict=True)), **_sum_counts(members)}
        cell = cell_by_key.get(key, {})
        rates = _rates(counts)
        floor = net = None
        if counts["relation_id"] in roles.invariance:
            floor, net = net_violation(members, floors.get(counts["model"], {}))
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                **rates,
                "noise_floor": floor,
                "net_violation_rate": net,
                "mean_delta": cell.get("mean_delta"),
                "mad": cell.get("mean_abs_delta"),
                "stability": cell.get("stability"),
                "n_cells": cell.get("n_cells", 0),
                "n_observations": cell.get("n_observations", 0),
            }
        )
    return rows


def model_rows(
    store,
    flt: CaseFilter | None = None,
    *,
    floors: dict[str, dict[str, dict[str, Any]]] | None = None,
    task_counts: list[dict[str, Any]] | None = None,
    gaps: list[dict[str, Any]] | None = None,
    cells: list[dict[str, Any]] | None = None,
    roles: RelationRoles | None = None,
) -> list[dict[str, Any]]:
    """One row per model: non-floor rates, MAD, stability (with / without identity), floor.

    Counts and rates sum the model's non-floor relations; ``noise_floor`` and
    ``net_violation_rate`` are over its invariance relations, task by task (see
    :func:`net_violation`); ``mad``, ``stability`` and ``stability_excl_identity`` come from the
    model's cells. ``task_counts`` (``verdict_counts`` by model × relation × task), ``cells``
    (``cell_stats`` by model × relation) and ``gaps`` (``side_gap`` by model) may be passed to
    avoid re-querying.
    """
    roles = roles or relation_roles(store)
    floors = noise_floor(store, flt, roles=roles) if floors is None else floors
    if task_counts is None:
        task_counts = store.verdict_counts(flt, by=("model", "relation_id", "task_id"))
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in task_counts:
        by_model[row["model"]].append(row)
    if cells is None:
        outside_mad = tuple(sorted(roles.outside_mad))
        cells = store.cell_stats(flt, by=("model", "relation_id"), outside_mad=outside_mad)
    cell_by_model = _model_cells(cells)
    if gaps is None:
        gaps = store.side_gap(flt, by=("model",))
    gap_by_model = {r["model"]: r for r in gaps}
    out = []
    for model in sorted(by_model):
        rows = by_model[model]
        non_floor = [r for r in rows if r["relation_id"] not in roles.noise_floor]
        rates = _rates(_sum_counts(non_floor))
        invariance = [r for r in rows if r["relation_id"] in roles.invariance]
        floor, net = net_violation(invariance, floors.get(model, {}))
        cell = cell_by_model.get(model, {})
        gap = gap_by_model.get(model, {})
        out.append(
            {
                "model": model,
                "relations": len({r["relation_id"] for r in non_floor}),
                **rates,
                "n_all": sum(r["n"] for r in rows),
                "noise_floor": floor,
                "net_violation_rate": net,
                "mean_delta": cell.get("mean_delta"),
                "mad": cell.get("mad"),
                "stability": cell.get("stability"),
                "stability_excl_identity": cell.get("stability_excl_identity"),
                "n_cells": cell.get("n_cells", 0),
                "n_observations": cell.get("n_observations", 0),
                "agentdiff_gap": gap.get("gap"),
            }
        )
    return out


def _model_cells(relation_cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-model Δ statistics combined exactly from per-relation ones (cell counts weight the
    mean Δ; MAD and stability add observation counts), so the model level costs no second pass
    over the cases. Relations outside MAD already carry zero observations."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in relation_cells:
        a = acc[row["model"]]
        n = row["n_cells"]
        a["n_cells"] += n
        a["sum_delta"] += row["mean_delta"] * n
        a["n_obs"] += row["n_observations"]
        a["n_stable"] += row["n_stable"]
        if row["relation_id"] != IDENTITY_RELATION:
            a["n_excl"] += row["n_observations"]
            a["sum_abs_excl"] += row["sum_abs_delta"]
            a["n_stable_excl"] += row["n_stable"]
    out = {}
    for model, a in acc.items():
        out[model] = {
            "n_cells": int(a["n_cells"]),
            "mean_delta": ratio(a["sum_delta"], a["n_cells"]),
            "n_observations": int(a["n_obs"]),
            "stability": ratio(a["n_stable"], a["n_obs"]),
            "n_observations_excl_identity": int(a["n_excl"]),
            "mad": ratio(a["sum_abs_excl"], a["n_excl"]),
            "stability_excl_identity": ratio(a["n_stable_excl"], a["n_excl"]),
        }
    return out


def agentdiff_gap(store, flt: CaseFilter | None = None) -> list[dict[str, Any]]:
    """Per model with side-tagged cases: the AgentDiff gap, its spread and the pooled rates.

    Columns: model, gap (mean over the model's (model, task) cells of meaning − presentation
    inconsistency, AgentDiff eqs. 1-2), sd_gap (over cells), n_cells, n_originals,
    meaning_rate / presentation_rate (mean side rates) and n_meaning / n_presentation (judged
    cases); see ``Store.side_gap``.
    """
    rows = store.side_gap(flt, by=("model",))
    return [row for row in rows if row["n_meaning"] or row["n_presentation"]]


def step_scores(store, flt: CaseFilter | None = None) -> list[dict[str, Any]]:
    """Per model × relation with step scores: AvgStepScore of source and follow-up outputs and
    its change under the relation (``step_score_delta``), over n scored cases."""
    return store.step_score_stats(flt, by=("model", "relation_id"))


def summarize(store, flt: CaseFilter | None = None) -> dict[str, Any]:
    """Everything the Analysis overview needs, each query run once.

    Returns ``rows`` (model × relation), ``models`` (per model), ``noise_floor`` (per model, per
    task), ``step_scores`` (model × relation AvgStepScore, where reference steps exist), ``gap``
    (AgentDiff, per model) and ``counts`` (``verdict_counts`` by model × relation, which
    ``app.analysis.stats.run_tests`` can reuse).
    """
    roles = relation_roles(store)
    outside_mad = tuple(sorted(roles.outside_mad))
    # Independent scans: run them side by side on separate connections.
    found = store.parallel_reads(
        {
            "task_counts": lambda s: s.verdict_counts(flt, by=("model", "relation_id", "task_id")),
            "cells": lambda s: s.cell_stats(
                flt, by=("model", "relation_id"), outside_mad=outside_mad
            ),
            "floors": lambda s: noise_floor(s, flt, roles=roles),
            "gaps": lambda s: agentdiff_gap(s, flt),
            "step_scores": lambda s: step_scores(s, flt),
        }
    )
    floors, task_counts, cells, gaps = (
        found[k] for k in ("floors", "task_counts", "cells", "gaps")
    )
    shared = {"floors": floors, "task_counts": task_counts, "cells": cells, "roles": roles}
    return {
        "rows": model_relation_rows(store, flt, **shared),
        "models": model_rows(store, flt, gaps=gaps, **shared),
        "noise_floor": floors,
        "gap": gaps,
        "step_scores": found["step_scores"],
        "counts": _sum_by(task_counts, ("model", "relation_id")),
    }


def breakdown(store, key: str, flt: CaseFilter | None = None) -> list[dict[str, Any]]:
    """Per model × value of ``samples.meta[key]`` (e.g. category, difficulty): rates and Δ.

    ``mean_delta`` here is over cases (a breakdown mixes relations).
    """
    out = []
    # Rows are per model, so scans split by model add up exactly: run the halves side by side.
    base = flt or CaseFilter()
    models = sorted(base.models) if base.models is not None else store.case_models()
    if not models:
        return []
    halves = [models[0::2], models[1::2]] if len(models) > 1 else [models]
    found = store.parallel_reads(
        {
            f"part{i}": (
                lambda s, part=part: s.meta_breakdown(
                    key, replace(base, models=tuple(part)), by=("model",)
                )
            )
            for i, part in enumerate(halves)
        }
    )
    rows = sorted(
        (row for part in found.values() for row in part),
        key=lambda r: (r["model"], meta_value_order(r["value"])),
    )
    for row in rows:
        n_pass, n_fail = row["n_pass"], row["n_fail"]
        low, high = wilson_interval(n_fail, n_pass + n_fail)
        out.append(
            {
                "model": row["model"],
                key: row["value"] if row["value"] is not None else MISSING_META,
                "samples": row["n_samples"],
                "n": row["n"],
                "pass": n_pass,
                "fail": n_fail,
                "skip": row["n_skip"],
                "error": row["n_error"],
                "violation_rate": violation_rate(n_pass, n_fail),
                "ci_low": low,
                "ci_high": high,
                "mean_delta": ratio(row["sum_delta"], row["n_delta"]),
                "inconsistency_rate": ratio(row["n_changed"], row["n_answered"]),
            }
        )
    return out


def box_stats(
    store, flt: CaseFilter | None = None, column: str = "delta", max_rows: int = 100_000
) -> tuple[list[dict[str, Any]], int]:
    """Box-plot statistics per model × relation of a per-case column (Δ or similarity).

    Quartiles by linear interpolation; whiskers at the most extreme values within 1.5 IQR of
    the box. Returns the rows and the sampling stride (1 = every case was used).
    """
    values, stride = store.value_sample(flt, column=column, max_rows=max_rows)
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for model, relation_id, value in values:
        groups[(model, relation_id)].append(value)
    rows = []
    for (model, relation_id), group in sorted(groups.items()):
        array = np.asarray(group, dtype=float)
        q1, median, q3 = np.quantile(array, [0.25, 0.5, 0.75])
        iqr = q3 - q1
        inside = array[(array >= q1 - 1.5 * iqr) & (array <= q3 + 1.5 * iqr)]
        rows.append(
            {
                "model": model,
                "relation_id": relation_id,
                "n": int(array.size),
                "min": float(array.min()),
                "q1": float(q1),
                "median": float(median),
                "q3": float(q3),
                "max": float(array.max()),
                "mean": float(array.mean()),
                "lowerfence": float(inside.min()),
                "upperfence": float(inside.max()),
            }
        )
    return rows, stride


# ------------------------------------------------------------------ severity (drill-down sets only)

_WORD = re.compile(r"\w+", re.UNICODE)


def parse_fields(value: Any) -> dict[str, str]:
    """A case's (decoded) input column — an object of fields, a list, or plain text — as a dict
    of strings."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    if isinstance(value, list):
        return {f"input_{i + 1}": str(v) for i, v in enumerate(value)}
    return {"text": str(value)}


def input_texts(source_input: Any, followup_input: Any) -> tuple[str, str]:
    """(source, follow-up) text of the fields the follow-up changed (all fields if none did).

    Fields are joined with a newline in name order; comparing only the changed fields keeps an
    untouched long context from diluting the normalised distances.
    """
    source, followup = parse_fields(source_input), parse_fields(followup_input)
    names = sorted(set(source) | set(followup))
    changed = [name for name in names if source.get(name, "") != followup.get(name, "")]
    chosen = changed or names
    return (
        "\n".join(source.get(name, "") for name in chosen),
        "\n".join(followup.get(name, "") for name in chosen),
    )


def normalized_levenshtein(a: str, b: str) -> float:
    """Levenshtein distance / max(len a, len b) (rapidfuzz); 0 for two empty strings."""
    return float(Levenshtein.normalized_distance(a, b))


def token_jaccard_distance(a: str, b: str) -> float:
    """1 − |A ∩ B| / |A ∪ B| over the sets of lower-cased word tokens; 0 if both are empty."""
    tokens_a = set(_WORD.findall(a.lower()))
    tokens_b = set(_WORD.findall(b.lower()))
    union = tokens_a | tokens_b
    if not union:
        return 0.0
    return 1.0 - len(tokens_a & tokens_b) / len(union)


def length_change_ratio(a: str, b: str) -> float:
    """|len(b) − len(a)| / len(a) in characters (len(a) taken as at least 1)."""
    return abs(len(b) - len(a)) / max(len(a), 1)


def severity_proxies(
    case: dict[str, Any], similarity: Callable[[str, str], float] | None = None
) -> dict[str, Any]:
    """AgentDiff's four severity proxies of one case's follow-up input against its source.

    ``cosine_distance`` = 1 − the cosine similarity of the two *inputs* (AgentDiff §4.1 applies
    the encoder to the (original, variant) question pairs): ``details["input_similarity"]`` when
    the validity gate stored it, else ``similarity(source, follow-up)`` of the changed fields
    when an embedding similarity is given, else None — never a proxy on the outputs.
    """
    source, followup = input_texts(case.get("source_input"), case.get("followup_input"))
    details = case.get("details")
    input_similarity = details.get("input_similarity") if isinstance(details, dict) else None
    cosine = None
    if isinstance(input_similarity, int | float):
        cosine = 1.0 - float(input_similarity)
    elif similarity is not None and case.get("followup_input") is not None:
        cosine = 1.0 - float(similarity(source, followup))
    return {
        "levenshtein": normalized_levenshtein(source, followup),
        "jaccard": token_jaccard_distance(source, followup),
        "cosine_distance": cosine,
        "length_change": length_change_ratio(source, followup),
    }


def _prefetch_inputs(embeddings, rows: list[dict[str, Any]]) -> None:
    """Embed every input text the proxies will compare, in one batch (cached per text)."""
    texts = []
    for row in rows:
        if row.get("followup_input") is not None:
            texts.extend(input_texts(row.get("source_input"), row.get("followup_input")))
    if texts:
        embeddings.prefetch(texts)


_ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def answer_changed(case: dict[str, Any]) -> bool | None:
    """Whether the follow-up answer differs from the source answer (None without both).

    Same rule as the SQL aggregate: equal ignoring ASCII letter case (SQLite NOCASE).
    """
    source, followup = case.get("source_answer"), case.get("followup_answer")
    if source is None or followup is None:
        return None
    return str(source).translate(_ASCII_FOLD) != str(followup).translate(_ASCII_FOLD)


def drilldown(
    store,
    flt: CaseFilter | None = None,
    *,
    model: str | None = None,
    relation_id: str | None = None,
    verdicts: Iterable[str] | None = None,
    limit: int = 500,
    embeddings=None,
) -> list[dict[str, Any]]:
    """The cases of one heatmap cell with their severity proxies and answer change attached.

    ``embeddings`` (an ``app.engine.embedder.EmbeddingCache``) gives the input cosine proxy.
    """
    rows = store.cell_cases(
        flt, model=model, relation_id=relation_id, verdicts=verdicts, limit=limit
    )
    similarity = None
    if embeddings is not None:
        _prefetch_inputs(embeddings, rows)
        similarity = embeddings.similarity
    for row in rows:
        row.update(severity_proxies(row, similarity))
        row["answer_changed"] = answer_changed(row)
    return rows


def severity_table(
    store, flt: CaseFilter | None = None, limit: int = 2000, *, embeddings=None
) -> list[dict[str, Any]]:
    """Severity proxies for a bounded sample of cases (the scatter), with |Δ| and answer change.

    ``embeddings`` (an ``app.engine.embedder.EmbeddingCache``) gives the input cosine proxy; the
    inputs are embedded together, each distinct text once.
    """
    rows = store.severity_rows(flt, limit=limit)
    similarity = None
    if embeddings is not None:
        _prefetch_inputs(embeddings, rows)
        similarity = embeddings.similarity
    out = []
    for row in rows:
        proxies = severity_proxies(row, similarity)
        out.append(
            {
                "id": row["id"],
                "model": row["model"],
                "relation_id": row["relation_id"],
                "side": row["side"],
                "verdict": row["verdict"],
                "abs_delta": abs(row["delta"]) if row["delta"] is not None else None,
                "answer_changed": answer_changed(row),
                "output_similarity": row["output_similarity"],
                **proxies,
            }
        )
    return out


def compare_runs(store, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """Per relation: run A's and run B's n, violation rate, mean cell Δ, mean similarity, and
    ``violation_rate_change`` = B − A (one pass over both runs)."""
    if run_a == run_b:
        raise ValueError("pick two different runs to compare")
    flt = CaseFilter.make(run_ids=[run_a, run_b])
    tags = {run_a: "a", run_b: "b"}
    cells = {
        (r["run_id"], r["relation_id"]): r
        for r in store.cell_stats(flt, by=("run_id", "relation_id"))
    }
    results: dict[str, dict[str, Any]] = {}
    for counts in store.verdict_counts(flt, by=("run_id", "relation_id")):
        tag = tags[counts["run_id"]]
        rates = _rates(counts)
        relation_id = counts["relation_id"]
        entry = results.setdefault(relation_id, {"relation_id": relation_id})
        entry[f"{tag}_n"] = rates["n"]
        entry[f"{tag}_violation_rate"] = rates["violation_rate"]
        cell = cells.get((counts["run_id"], relation_id), {})
        entry[f"{tag}_mean_delta"] = cell.get("mean_delta")
        entry[f"{tag}_mean_similarity"] = rates["mean_similarity"]
    out = []
    for relation_id in sorted(results):
        entry = results[relation_id]
        for tag in ("a", "b"):
            for key in ("n", "violation_rate", "mean_delta", "mean_similarity"):
                entry.setdefault(f"{tag}_{key}", 0 if key == "n" else None)
        a, b = entry["a_violation_rate"], entry["b_violation_rate"]
        entry["violation_rate_change"] = b - a if a is not None and b is not None else None
        out.append(entry)
    return out


__all__ = [
    "IDENTITY_RELATION",
    "STABILITY_THRESHOLD",
    "Z95",
    "CaseFilter",
    "RelationRoles",
    "agentdiff_gap",
    "answer_changed",
    "box_stats",
    "breakdown",
    "compare_runs",
    "drilldown",
    "floor_rows",
    "input_texts",
    "length_change_ratio",
    "model_relation_rows",
    "model_rows",
    "net_of_floor",
    "net_violation",
    "noise_floor",
    "normalized_levenshtein",
    "ratio",
    "relation_roles",
    "severity_proxies",
    "severity_table",
    "summarize",
    "token_jaccard_distance",
    "violation_rate",
    "wilson_interval",
]
