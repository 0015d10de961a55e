"""The paper metrics per model × relation and per model, computed from the SQL aggregates that
``app.analysis.aggregates`` fetches once per filter (``storage.analysis_verbs``).

Every number on the Analysis page, in ``report --json`` and in the HTML report comes from this
module and the ones it builds on, so each is computed once: ``app.analysis.rates`` (counts,
violation rates, Wilson intervals), ``app.analysis.noise_floor`` (the floor and net rates),
``app.analysis.relation_roles`` (which relations are floor, invariance or outside MAD) and
``app.analysis.severity`` (the drill-down proxies). Names, formats and one-line definitions: the
catalogue in ``app.analysis.catalogue``. The definitions:

**Counts (per case).** ``n`` all cases; ``pass`` / ``fail`` / ``skip`` / ``error`` by verdict;
``invalid_followup`` the SKIPs whose reason starts with ``invalid_followup`` (validity gate; part of
``skip``, shown separately). SKIP and ERROR are never counted as passes or violations.

**Violation rate** = fail / (pass + fail), with a **Wilson 95% score interval** (z = 1.959964):
centre = (p + z²/2n) / (1 + z²/n), half-width = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n), clipped to
[0, 1]; ``None`` when pass + fail = 0.

**Δ metrics.** Δ = score_followup − score_source (only when the sample has a reference). A *cell*
is one (model, task, sample, relation); its Δ is the mean Δ of its observations and
``mean_delta`` is the mean cell Δ. MAD and stability are the SI paper's (§3.1, Table 3), over its
8 ``si.*`` transformations only, per *observation* (one judged case with a Δ; repeats are not
averaged before the absolute value; ``si.identity`` counts once per sample × repeat, as the noise
floor counts it): **MAD** (eq. 6) = mean |Δ| over the 7 non-identity transformations (the
contrastive control included); **stability** = share of observations with |Δ| < 0.05 over all 8,
identity included (the paper's 19 × 8 denominator); ``stability_excl_identity`` the same over the
7. A per-relation row restricts both to its relation: ``mad`` is None for identity, and both are
None for relations outside the SI family. The wider **invariance stability** (model level) is the
same share over every relation whose expectation is "equivalent".
**AvgStepScore** (eq. 4) = the mean over the output's reasoning steps of each step's highest
cosine to any reference step; ``step_score`` averages the source outputs' and the follow-ups',
``step_score_delta`` the change (follow-up − source) per case.

**Judged cases only.** Similarity, inconsistency, Δ, MAD, stability, the AgentDiff gap and the
statistical tests read only PASS/FAIL cases: a SKIP (the validity gate's, or an oracle's
``precondition: …``) or an ERROR measured nothing about robustness.

**Mean similarity** = mean ``output_similarity`` (cosine of the two outputs' embeddings) over judged
cases. **Inconsistency rate** = share of judged cases whose follow-up answer differs from the source
answer, among cases with both answers; "differs" is the oracles' answer equivalence for the task's
answer type (``app.analysis.consistency``: "5.4 km" and "5.4" are one answer).

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

from collections import defaultdict
from dataclasses import replace
from typing import Any

import numpy as np

from app.analysis.aggregates import MODEL_RELATION, Aggregates, fetch_aggregates
from app.analysis.catalogue.definitions import VIOLATION_RATE
from app.analysis.catalogue.formats import MISSING_META, meta_value_order
from app.analysis.consistency import answer_types, same_answers
from app.analysis.noise_floor import net_violation
from app.analysis.rates import Rates, ratio, sum_by, sum_counts
from core.case_filter import CaseFilter
from storage.delta_verbs import CELL_SUM_KEYS, cell_ratios


def model_relation_rows(found: Aggregates) -> list[dict[str, Any]]:
    """One row per model × relation (× task, when the cells were fetched by task): counts,
    violation rate + CI, Δ metrics, floor.

    Columns: model, relation_id, [task_id], n, pass, fail, skip, error, invalid_followup,
    violation_rate, ci_low, ci_high, noise_floor, net_violation_rate, mean_delta, mad, stability,
    n_cells, mean_similarity, inconsistency_rate, n_answered (see the module docstring).
    ``noise_floor`` / ``net_violation_rate`` are set for invariance relations only.
    """
    by = found.cells_by
    cell_by_key = {tuple(r[c] for c in by): r for r in found.cells}
    per_task: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in found.task_counts:
        per_task[tuple(row[c] for c in by)].append(row)
    rows = []
    for key, members in sorted(per_task.items()):
        counts = {**dict(zip(by, key, strict=True)), **sum_counts(members)}
        cell = cell_by_key.get(key, {})
        rates = Rates.of(counts)
        floor = net = None
        if counts["relation_id"] in found.roles.invariance:
            floor, net = net_violation(members, found.floors.get(counts["model"], {}))
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                **rates.columns(),
                "noise_floor": floor,
                "net_violation_rate": net,
                "mean_delta": cell.get("mean_delta"),
                "mad": cell.get("mad"),
                "stability": cell.get("stability"),
                "n_cells": cell.get("n_cells", 0),
                "n_observations": cell.get("n_observations", 0),
            }
        )
    return rows


def model_rows(found: Aggregates) -> list[dict[str, Any]]:
    """One row per model: non-floor rates, MAD, stability (with / without identity, and over
    every invariance relation), floor.

    Counts and rates sum the model's non-floor relations; ``noise_floor`` and
    ``net_violation_rate`` are over its invariance relations, task by task (see
    :func:`net_violation`); ``mad``, ``stability``, ``stability_excl_identity`` and
    ``invariance_stability`` come from the model's cells; ``agentdiff_gap`` from its gap row.
    """
    roles = found.roles
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in found.task_counts:
        by_model[row["model"]].append(row)
    cell_by_model = _model_cells(found.cells)
    gap_by_model = {r["model"]: r for r in found.gaps}
    out = []
    for model in sorted(by_model):
        rows = by_model[model]
        non_floor = [r for r in rows if r["relation_id"] not in roles.noise_floor]
        rates = Rates.of(sum_counts(non_floor))
        invariance = [r for r in rows if r["relation_id"] in roles.invariance]
        floor, net = net_violation(invariance, found.floors.get(model, {}))
        cell = cell_by_model.get(model, {})
        gap = gap_by_model.get(model, {})
        out.append(
            {
                "model": model,
                "relations": len({r["relation_id"] for r in non_floor}),
                **rates.columns(),
                "n_all": sum(r["n"] for r in rows),
                "noise_floor": floor,
                "net_violation_rate": net,
                "mean_delta": cell.get("mean_delta"),
                "mad": cell.get("mad"),
                "stability": cell.get("stability"),
                "stability_excl_identity": cell.get("stability_excl_identity"),
                "invariance_stability": cell.get("invariance_stability"),
                "n_cells": cell.get("n_cells", 0),
                "n_observations": cell.get("n_observations", 0),
                "n_mad_observations": cell.get("n_mad", 0),
                "n_stability_observations": cell.get("n_paper", 0),
                "agentdiff_gap": gap.get("gap"),
            }
        )
    return out


def _model_cells(relation_cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-model Δ statistics combined exactly from per-relation ones (cell counts weight the
    mean Δ; MAD and the stabilities add their observation sums), so the model level costs no
    second pass over the cases."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in relation_cells:
        a = acc[row["model"]]
        a["n_cells"] += row["n_cells"]
        a["sum_delta"] += row["mean_delta"] * row["n_cells"]
        for key in CELL_SUM_KEYS:
            a[key] += row[key]
    out = {}
    for model, a in acc.items():
        sums = {key: int(a[key]) if key.startswith("n_") else a[key] for key in CELL_SUM_KEYS}
        out[model] = {
            "n_cells": int(a["n_cells"]),
            "mean_delta": ratio(a["sum_delta"], a["n_cells"]),
            **sums,
            **cell_ratios(sums),
        }
    return out


def summarize(store, flt: CaseFilter) -> dict[str, Any]:
    """Everything the Analysis overview needs, from one :func:`fetch_aggregates`.

    Returns ``n_cases`` (the cases matching ``flt``), ``rows`` (model × relation), ``models`` (per model), ``noise_floor`` (per model, per
    task), ``step_scores`` (model × relation AvgStepScore, where reference steps exist), ``gap``
    (AgentDiff, per model), and for ``app.analysis.stats.run_tests`` ``counts``
    (``verdict_counts`` by model × relation) and ``roles`` (the relation roles counted with).
    """
    return summary_of(fetch_aggregates(store, flt))


def summary_of(found: Aggregates) -> dict[str, Any]:
    """:func:`summarize`'s document computed from aggregates already fetched."""
    return {
        "n_cases": found.n_cases,
        "rows": model_relation_rows(found),
        "models": model_rows(found),
        "noise_floor": found.floors,
        "gap": found.gaps,
        "step_scores": found.step_scores,
        "counts": sum_by(found.task_counts, MODEL_RELATION),
        "roles": found.roles,
    }


def breakdown(store, key: str, flt: CaseFilter) -> list[dict[str, Any]]:
    """Per model × value of ``samples.meta[key]`` (e.g. category, difficulty): rates and Δ.

    ``mean_delta`` here is over cases (a breakdown mixes relations).
    """
    return [
        {
            "model": row["model"],
            key: row["value"] if row["value"] is not None else MISSING_META,
            "samples": row["n_samples"],
            **Rates.of_verdicts(row).columns(),
            "mean_delta": ratio(row["sum_delta"], row["n_delta"]),
            "inconsistency_rate": ratio(row["n_changed"], row["n_answered"]),
        }
        for row in _meta_counts(store, key, flt)
    ]


def _meta_counts(store, key: str, flt: CaseFilter) -> list[dict[str, Any]]:
    """``Store.meta_breakdown`` by model, sorted by model then value."""
    # Rows are per model, so scans split by model add up exactly: run the halves side by side.
    models = sorted(flt.models) if flt.models is not None else store.case_models()
    if not models:
        return []
    halves = [models[0::2], models[1::2]] if len(models) > 1 else [models]
    same = same_answers(store, answer_types(store))

    def counted(reader, part: list[str]) -> list[dict[str, Any]]:
        part_flt = replace(flt, models=tuple(part))
        return reader.meta_breakdown(key, part_flt, by=("model",), same_answers=same)

    found = store.parallel_reads(
        {f"part{i}": (lambda s, part=part: counted(s, part)) for i, part in enumerate(halves)}
    )
    return sorted(
        (row for part in found.values() for row in part),
        key=lambda r: (r["model"], meta_value_order(r["value"])),
    )


def box_stats(
    store, flt: CaseFilter, column: str = "delta", max_rows: int = 100_000
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
        rates = Rates.of_verdicts(counts)
        relation_id = counts["relation_id"]
        entry = results.setdefault(relation_id, {"relation_id": relation_id})
        entry[f"{tag}_n"] = rates.n
        entry[f"{tag}_{VIOLATION_RATE}"] = rates.violation_rate
        cell = cells.get((counts["run_id"], relation_id), {})
        entry[f"{tag}_mean_delta"] = cell.get("mean_delta")
        entry[f"{tag}_mean_similarity"] = ratio(counts["sum_similarity"], counts["n_similarity"])
    out = []
    for relation_id in sorted(results):
        entry = results[relation_id]
        for tag in ("a", "b"):
            for key in ("n", VIOLATION_RATE, "mean_delta", "mean_similarity"):
                entry.setdefault(f"{tag}_{key}", 0 if key == "n" else None)
        a, b = entry[f"a_{VIOLATION_RATE}"], entry[f"b_{VIOLATION_RATE}"]
        entry["violation_rate_change"] = b - a if a is not None and b is not None else None
        out.append(entry)
    return out
