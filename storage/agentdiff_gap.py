"""The AgentDiff inconsistency gap (the AgentDiff paper's eqs. 1-2) of each group, from the
judged side-tagged cases counted per original in SQL (``AnalysisVerbs.side_gap``)."""

from __future__ import annotations

from typing import Any


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def gap_rows(per_original: list[dict[str, Any]], by: tuple[str, ...]) -> list[dict[str, Any]]:
    """The AgentDiff gap per group from per-(cell, relation, original) FAIL counts."""
    # cell → side → relation → per-original inconsistency shares
    shares: dict[tuple, dict[str, dict[str, list[float]]]] = {}
    originals: dict[tuple, set] = {}
    cases: dict[tuple, dict[str, int]] = {}
    for row in per_original:
        cell = (row["model"], row["task_id"])
        side = shares.setdefault(cell, {}).setdefault(row["side"], {})
        side.setdefault(row["relation_id"], []).append(row["n_fail"] / row["n"])
        group = tuple(row[c] for c in by)
        originals.setdefault(group, set()).add((*cell, row["sample_id"]))
        counted = cases.setdefault(group, {"meaning": 0, "presentation": 0})
        counted[row["side"]] += row["n"]
    gaps: dict[tuple, dict[str, list[float]]] = {}
    for (model, task_id), sides in shares.items():
        cell = {"model": model, "task_id": task_id}
        found = gaps.setdefault(tuple(cell[c] for c in by), {"gap": [], "m": [], "p": []})
        # Eq. 1 per relation (mean over its originals), then eq. 2: mean IR per side.
        rates = {
            side: _mean([_mean(values) for values in relations.values()])
            for side, relations in sides.items()
        }
        meaning, presentation = rates.get("meaning"), rates.get("presentation")
        if meaning is not None:
            found["m"].append(meaning)
        if presentation is not None:
            found["p"].append(presentation)
        if meaning is not None and presentation is not None:
            found["gap"].append(meaning - presentation)
    out = []
    for group in sorted(originals):
        found = gaps.get(group, {"gap": [], "m": [], "p": []})
        cell_gaps = found["gap"]
        sd = None
        if len(cell_gaps) >= 2:
            centre = _mean(cell_gaps)
            variance = sum((g - centre) ** 2 for g in cell_gaps) / (len(cell_gaps) - 1)
            sd = variance**0.5
        out.append(
            {
                **dict(zip(by, group, strict=True)),
                "n_cells": len(cell_gaps),
                "n_originals": len(originals[group]),
                "gap": _mean(cell_gaps),
                "sd_gap": sd,
                "meaning_rate": _mean(found["m"]),
                "presentation_rate": _mean(found["p"]),
                "n_meaning": cases[group]["meaning"],
                "n_presentation": cases[group]["presentation"],
            }
        )
    return out
