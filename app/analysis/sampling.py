"""Which cells of the analysis rest on adaptive runs, and what those runs saved.

An adaptive run (`run --precision` / `--budget`, core/sampling.py) sends part of its grid and
stops each model × relation cell when its confidence sequence is narrow enough. Its cells' rates
are honest estimates, but they rest on fewer cases than a full run's, and a cell that pools an
adaptive run with a full-grid run pools two different samplings. The analysis, `report --json`
and the HTML report use this view to say so: per cell, which runs are adaptive and which full
grid, and each adaptive run's confidence-sequence interval at its stop, beside the Wilson
interval the rows already carry.

Nothing is computed when no run in the filter is adaptive: the documents of full-grid runs stay
as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.analysis.catalogue.formats import format_interval_percent
from core.case_filter import CaseFilter
from core.sampling import ADAPTIVE, FULL_GRID, MIXED, RunSampling

MIXED_NOTE = (
    "pools adaptive and full-grid runs: its cases were not sampled one way, read its rate with care"
)


@dataclass(frozen=True)
class RunInterval:
    """One adaptive run's confidence-sequence interval for a cell, at its stop."""

    run_id: str
    inputs: int
    violations: int
    low: float
    high: float
    stopped: bool


@dataclass
class CellSampling:
    """How one model × relation cell's cases were sampled."""

    model: str
    relation_id: str
    adaptive_runs: list[str] = field(default_factory=list)
    full_grid_runs: list[str] = field(default_factory=list)
    intervals: list[RunInterval] = field(default_factory=list)

    @property
    def sampling(self) -> str:
        if self.adaptive_runs and self.full_grid_runs:
            return MIXED
        return ADAPTIVE if self.adaptive_runs else FULL_GRID

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "relation_id": self.relation_id,
            "sampling": self.sampling,
            "adaptive_runs": list(self.adaptive_runs),
            "full_grid_runs": list(self.full_grid_runs),
            "cs_intervals": [vars(interval) for interval in self.intervals],
            "note": MIXED_NOTE if self.sampling == MIXED else "",
        }


@dataclass(frozen=True)
class AdaptiveRun:
    run_id: str
    model: str
    status: str
    sampling: RunSampling

    def to_dict(self) -> dict[str, Any]:
        sampling = self.sampling.to_dict()
        del sampling["cells"]  # per cell, under the cells' own entries
        return {"run_id": self.run_id, "model": self.model, "status": self.status, **sampling}


@dataclass
class SamplingView:
    """The adaptive runs in a filter and every cell their cases touch."""

    runs: list[AdaptiveRun] = field(default_factory=list)
    cells: dict[tuple[str, str], CellSampling] = field(default_factory=dict)

    @property
    def any_adaptive(self) -> bool:
        return bool(self.runs)

    @property
    def mixed_cells(self) -> list[CellSampling]:
        return [cell for cell in self.cells.values() if cell.sampling == MIXED]

    @property
    def calls_saved(self) -> int:
        return sum(run.sampling.calls_saved for run in self.runs)

    def cell(self, model: str, relation_id: str) -> CellSampling | None:
        return self.cells.get((model, relation_id))

    def to_dict(self) -> dict[str, Any]:
        """The `sampling` section of `report --json`."""
        return {
            "adaptive_runs": [run.to_dict() for run in self.runs],
            "calls_saved": self.calls_saved,
            "cells": [cell.to_dict() for cell in self.cells.values()],
            "mixed_cells": [[c.model, c.relation_id] for c in self.mixed_cells],
        }

    def row_fields(self, model: str, relation_id: str) -> dict[str, Any]:
        """What a model × relation row adds: its sampling and, when one adaptive run alone
        decided its stop, that run's confidence-sequence interval."""
        cell = self.cell(model, relation_id)
        if cell is None:
            return {"sampling": FULL_GRID, "cs_low": None, "cs_high": None}
        only = cell.intervals[0] if len(cell.intervals) == 1 else None
        return {
            "sampling": cell.sampling,
            "cs_low": only.low if only else None,
            "cs_high": only.high if only else None,
        }


def sampling_view(store, flt: CaseFilter | None = None) -> SamplingView:
    """The view for the cases matching ``flt``; empty (and no scan of the cases) when none of
    the runs it may touch is adaptive."""
    flt = flt or CaseFilter()
    samplings = store.run_samplings(flt.run_ids)
    if not samplings:
        return SamplingView()
    view = SamplingView()
    models: dict[str, str] = {}
    for row in store.verdict_counts(flt, by=("model", "relation_id", "run_id")):
        key = (row["model"], row["relation_id"])
        cell = view.cells.setdefault(key, CellSampling(*key))
        run_id = row["run_id"]
        if run_id not in samplings:
            cell.full_grid_runs.append(run_id)
            continue
        models[run_id] = row["model"]
        cell.adaptive_runs.append(run_id)
        cell.intervals += [
            RunInterval(run_id, c.inputs, c.violations, c.low, c.high, c.stopped)
            for c in samplings[run_id].cells
            if c.relation == row["relation_id"]
        ]
    view.runs = [
        AdaptiveRun(run_id, models[run_id], _status(store, run_id), samplings[run_id])
        for run_id in sorted(models)
    ]
    if not view.runs:
        return SamplingView()  # the adaptive runs had no case in the filter
    view.cells = _cells_touching_adaptive(view.cells)
    return view


def _status(store, run_id: str) -> str:
    run = store.run(run_id)
    return run.status if run is not None else ""


def _cells_touching_adaptive(
    cells: dict[tuple[str, str], CellSampling],
) -> dict[tuple[str, str], CellSampling]:
    """Only the cells an adaptive run has cases in, in model then relation order."""
    return {key: cell for key, cell in sorted(cells.items()) if cell.adaptive_runs}


def sampling_rows(view: SamplingView, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """For each cell an adaptive run touches, what to show: cases, rate and Wilson interval of
    the stored cases (from the model × relation ``rows``), and each adaptive run's
    confidence-sequence interval with the inputs it rests on. Texts, for a table."""
    by_cell = {(row["model"], row["relation_id"]): row for row in rows}
    shown = []
    for key, cell in view.cells.items():
        row = by_cell.get(key, {})
        rate = row.get("violation_rate")
        shown.append(
            {
                "model": cell.model,
                "relation": cell.relation_id,
                "sampling": cell.sampling,
                "cases": str(row.get("n", "—")),
                "violation rate": f"{rate * 100:.1f}%" if rate is not None else "—",
                "Wilson 95%": format_interval_percent(row.get("ci_low"), row.get("ci_high")) or "—",
                "confidence sequence 95%": "; ".join(
                    f"{format_interval_percent(i.low, i.high)} over {i.inputs} inputs"
                    + (" (stopped)" if i.stopped else "")
                    for i in cell.intervals
                )
                or "—",
            }
        )
    return shown


def run_rows(view: SamplingView) -> list[dict[str, str]]:
    """One row per adaptive run: what it asked for and the calls it used against the grid's."""
    return [
        {
            "run": run.run_id,
            "model": run.model,
            "status": run.status,
            "precision": f"±{run.sampling.precision:g}" if run.sampling.precision else "—",
            "budget": str(run.sampling.budget) if run.sampling.budget else "—",
            "calls used": str(run.sampling.calls_used),
            "full grid": str(run.sampling.full_grid_calls),
            "calls saved": str(run.sampling.calls_saved),
        }
        for run in view.runs
    ]
