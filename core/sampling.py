"""How a run sampled its grid: in full, or adaptively (`run --precision H` / `--budget N`).

An adaptive run sends only part of the inputs × relations grid, so its cells rest on fewer cases
than the grid plans and its stop was chosen by looking at the data. What it did is stored with
the run (``RunSampling``) so that the analysis and the reports can say so: the precision and the
budget asked for, the calls used against the full grid's, and per cell the anytime-valid
confidence-sequence interval (core/confidence_sequence.py) that decided the stop.

A run that stopped before its grid was complete is stored with a status of its own, never plain
"done": ``STATUS_PRECISION`` or ``STATUS_BUDGET``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DONE = "done"
STATUS_PRECISION = "done (precision reached)"
STATUS_BUDGET = "done (budget reached)"
# Statuses of a run that ended of its own accord: every case sent, or an adaptive stop.
FINISHED_STATUSES = (DONE, STATUS_PRECISION, STATUS_BUDGET)

FULL_GRID = "full grid"
ADAPTIVE = "adaptive"
MIXED = "mixed"


def finished(status: str) -> bool:
    """Whether a run with this status ended of its own accord (not stopped, not running)."""
    return status in FINISHED_STATUSES


@dataclass(frozen=True)
class SampledCell:
    """One model × relation of an adaptive run when it stopped: ``violations`` in ``inputs``
    observations (an input is a violation when any of its cases FAILs) and the 95%
    confidence-sequence interval [low, high] over them; ``stopped`` when it reached the
    precision before the inputs ran out."""

    model: str
    relation: str
    inputs: int
    violations: int
    low: float
    high: float
    stopped: bool = False

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def rate(self) -> float | None:
        return self.violations / self.inputs if self.inputs else None


@dataclass(frozen=True)
class RunSampling:
    """What an adaptive run asked for and did. ``calls_sent`` went to the model under test in
    its last pass, ``cache_hits`` came from the call cache. ``calls_used`` are the grid calls its
    stored cases stand for (each input's source per repeat, one call per case), set against
    ``full_grid_calls``, the same count for the whole grid."""

    precision: float | None
    budget: int | None
    round_size: int
    stop_reason: str
    calls_sent: int
    cache_hits: int
    calls_used: int
    full_grid_calls: int
    cells: list[SampledCell] = field(default_factory=list)

    @property
    def calls_saved(self) -> int:
        return max(self.full_grid_calls - self.calls_used, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "budget": self.budget,
            "round_size": self.round_size,
            "stop_reason": self.stop_reason,
            "calls_sent": self.calls_sent,
            "cache_hits": self.cache_hits,
            "calls_used": self.calls_used,
            "full_grid_calls": self.full_grid_calls,
            "calls_saved": self.calls_saved,
            "cells": [
                {**asdict(cell), "rate": cell.rate, "half_width": round(cell.half_width, 6)}
                for cell in self.cells
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSampling:
        fields = SampledCell.__dataclass_fields__
        cells = [
            SampledCell(**{key: value for key, value in cell.items() if key in fields})
            for cell in data.get("cells", [])
        ]
        return cls(
            precision=data.get("precision"),
            budget=data.get("budget"),
            round_size=int(data.get("round_size") or 0),
            stop_reason=str(data.get("stop_reason") or ""),
            calls_sent=int(data.get("calls_sent") or 0),
            cache_hits=int(data.get("cache_hits") or 0),
            calls_used=int(data.get("calls_used") or 0),
            full_grid_calls=int(data.get("full_grid_calls") or 0),
            cells=cells,
        )
