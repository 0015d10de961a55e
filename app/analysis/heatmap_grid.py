"""A model × relation heatmap's cells: what each holds and prints, before any drawing.

:func:`heatmap_grid` reads the rows ``app.analysis.metrics.summarize`` produces into a
:class:`HeatmapGrid`: the metric's title and colour scale (from ``app.analysis.catalogue``), the
models and relations sorted by name, and each filled cell with its n and 95% interval (where a
metric's cell finds them: its ``HeatmapScale`` in the catalogue). Both heatmaps of
``app.analysis.heatmaps`` draw this grid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from app.analysis.catalogue.definitions import (
    HEATMAP_METRICS,
    CellInterval,
    HeatmapScale,
    heatmap_title,
)
from app.analysis.catalogue.formats import format_interval_percent, format_value
from app.analysis.figures import Rows, as_frame
from app.analysis.heatmap_colours import ColourScale
from app.analysis.proportions import wilson_interval

WIDE_INTERVAL = 0.30
"""A 95% interval wider than this (30 percentage points) marks a rate as uncertain: too few
cases to tell it apart from its neighbours (e.g. 100% from 4 cases spans 51–100%)."""

FEW_CASES = 10
"""Below this many cases a value without an interval is marked uncertain too."""

FEW_CASES_LEGEND = "dashed outline: few cases, read with care"
"""The legend entry of the mark both heatmaps draw around an uncertain cell (its colour still
follows its value alone: a faded 100% looked paler than a solid 56%)."""

# ---------------------------------------------------------------- cells


@dataclass(frozen=True)
class HeatmapCell:
    """One model × relation cell: the value, how many cases it rests on (``n``: the denominator
    of the rate, or the observations behind a mean) and its 95% interval where one is known."""

    model: str
    relation_id: str
    value: float | None
    n: int
    low: float | None = None
    high: float | None = None

    @property
    def uncertain(self) -> bool:
        """Too few cases to read the colour at face value: the interval is wider than
        ``WIDE_INTERVAL``, or (no interval) fewer than ``FEW_CASES`` cases."""
        if self.low is not None and self.high is not None:
            return self.high - self.low > WIDE_INTERVAL
        return self.n < FEW_CASES

    def interval_text(self) -> str:
        return format_interval_percent(self.low, self.high)


def _number(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    return None if value is None or pd.isna(value) else float(value)


def _count(row: Mapping[str, Any], *keys: str) -> int:
    return sum(int(row.get(key) or 0) for key in keys)


Interval = tuple[float | None, float | None]


def _row_interval(row: Mapping[str, Any], value: float, n: int) -> Interval:
    return _number(row, "ci_low"), _number(row, "ci_high")


def _row_interval_less_floor(row: Mapping[str, Any], value: float, n: int) -> Interval:
    # the floor is taken as fixed: its own uncertainty is not added
    floor = _number(row, "noise_floor")
    ci_low, ci_high = _row_interval(row, value, n)
    if floor is None or ci_low is None or ci_high is None:
        return None, None
    return max(0.0, ci_low - floor), max(0.0, ci_high - floor)


def _wilson_over_n(row: Mapping[str, Any], value: float, n: int) -> Interval:
    return wilson_interval(round(value * n), n) if n else (None, None)


_INTERVALS: dict[CellInterval, Callable[[Mapping[str, Any], float, int], Interval]] = {
    CellInterval.NONE: lambda row, value, n: (None, None),
    CellInterval.ROW: _row_interval,
    CellInterval.ROW_LESS_FLOOR: _row_interval_less_floor,
    CellInterval.WILSON_OVER_N: _wilson_over_n,
}


def heatmap_cell(row: Mapping[str, Any], metric: str) -> HeatmapCell:
    """The cell of ``metric`` for one model × relation row of ``app.analysis.metrics.summarize``.

    Its n and interval follow the metric's heatmap scale in the catalogue: rates carry a Wilson
    95% interval (the violation rate its own; the net rate that interval less the noise floor;
    the inconsistency rate one over the cases with both answers), means carry n only.
    """
    found = HEATMAP_METRICS.get(metric)
    scale = found.heatmap if found else None
    value = _number(row, metric)
    # n behind a rate is its denominator, the judged (PASS + FAIL) cases, not SKIPs and ERRORs
    judged = _count(row, "pass", "fail") if "pass" in row else _count(row, "n")
    n = (_count(row, scale.n_key) if scale and scale.n_key else 0) or judged
    low = high = None
    if value is not None and scale is not None:
        low, high = _INTERVALS[scale.interval](row, value, n)
    return HeatmapCell(str(row["model"]), str(row["relation_id"]), value, n, low, high)


def heatmap_cells(rows: Rows, metric: str) -> list[HeatmapCell]:
    """Every filled cell of a heatmap of ``metric`` (rows without a value are left out)."""
    return [
        cell
        for cell in (heatmap_cell(row, metric) for row in as_frame(rows).to_dict("records"))
        if cell.value is not None
    ]


# How many relation columns a heatmap cell's printed text fits in (at the page's usual width,
# ~900 px of plot): beyond the first, n and interval overlapped their neighbours; beyond the
# second, even the value did. Wider heatmaps print less; the tooltip always carries everything.
CELL_DETAIL_MAX_COLUMNS = 12
CELL_VALUE_MAX_COLUMNS = 24


def heatmap_cell_text(n_columns: int) -> str:
    """What each cell of a heatmap with ``n_columns`` relations prints: ``"value, n and 95%
    interval"``, ``"value"`` or ``""`` (nothing: hover a cell)."""
    if n_columns <= CELL_DETAIL_MAX_COLUMNS:
        return "value, n and 95% interval"
    return "value" if n_columns <= CELL_VALUE_MAX_COLUMNS else ""


def prints_detail(printed: str) -> bool:
    """Whether cells print n and the interval under the value (see :func:`heatmap_cell_text`)."""
    return printed.startswith("value,")


# ---------------------------------------------------------------- the grid both renderers draw


@dataclass(frozen=True)
class HeatmapGrid:
    """What a heatmap of one metric draws: its title and colour scale, the models and relations
    (sorted by name) and the filled cells, in the order of the rows they came from."""

    label: str
    scale: HeatmapScale
    models: list[str]
    relations: list[str]
    cells: list[HeatmapCell]

    @property
    def number_format(self) -> str:
        return self.scale.number_format

    @property
    def percent(self) -> bool:
        """A share in [0, 1] printed as a percentage: the legend's ticks are percentages too."""
        return self.scale.value_range == (0.0, 1.0) and self.number_format.endswith("%")

    @property
    def has_intervals(self) -> bool:
        """Whether any cell has an interval (else tooltips leave the interval line out)."""
        return any(cell.interval_text() for cell in self.cells)

    def colours(self) -> ColourScale:
        """The metric's ramp over its pinned range, else over the values shown."""
        values = [cell.value for cell in self.cells if cell.value is not None]
        low, high = self.scale.value_range or (min(values, default=0.0), max(values, default=1.0))
        return ColourScale.over(self.scale.colours, low, high, self.scale.midpoint)

    def cells_by_position(self) -> dict[tuple[str, str], HeatmapCell]:
        """The cells by (model, relation_id)."""
        return {(cell.model, cell.relation_id): cell for cell in self.cells}


def heatmap_grid(rows: Rows, metric: str) -> HeatmapGrid:
    """The grid of ``metric`` over ``rows`` (raises ``ValueError`` for a metric a heatmap cannot
    show); no rows give an empty grid."""
    label = heatmap_title(metric)
    scale = HEATMAP_METRICS[metric].heatmap
    assert scale is not None  # a metric with a title has a scale
    df = as_frame(rows)
    if df.empty:
        return HeatmapGrid(label, scale, [], [], [])
    return HeatmapGrid(
        label,
        scale,
        models=sorted(df["model"].astype(str).unique()),
        relations=sorted(df["relation_id"].astype(str).unique()),
        cells=heatmap_cells(df, metric),
    )


# ---------------------------------------------------------------- the page's legend


@dataclass(frozen=True)
class HeatmapLegend:
    """What the page's heatmap legend says, drawn beside the chart rather than inside it: inside,
    Vega starts a top legend where the cells start (after the model names), so on a 390 px phone
    half of it lay beyond the screen's edge, in the heatmap's sideways scroll.

    ``stops`` are the colour ramp's (position 0…1, hex colour), the same as the cells'; ``ticks``
    the low end, middle and high end of the scale, as (position, printed value); ``few_cases``
    whether any cell is outlined dashed (then the legend names :data:`FEW_CASES_LEGEND`)."""

    title: str
    stops: tuple[tuple[float, str], ...]
    ticks: tuple[tuple[float, str], ...]
    few_cases: bool


def heatmap_legend(grid: HeatmapGrid) -> HeatmapLegend:
    """The legend of ``grid``'s heatmap: its ramp, its ends and middle in the metric's format."""
    colours = grid.colours()
    last = len(colours.stops) - 1
    stops = tuple((i / last, colour) for i, colour in enumerate(colours.hex_stops()))
    middle = (colours.low + colours.high) / 2
    ticks = tuple(
        (position, format_value(value, grid.number_format))
        for position, value in ((0.0, colours.low), (0.5, middle), (1.0, colours.high))
    )
    return HeatmapLegend(grid.label, stops, ticks, any(cell.uncertain for cell in grid.cells))
