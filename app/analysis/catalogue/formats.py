"""How values are written: the units of the catalogue and one formatter per place that shows them.

Three places write numbers, each in its own way: the Analysis tables (:func:`format_shown`), the
HTML report (:func:`format_text`) and the ``report`` command's text table (:func:`format_fraction`,
:func:`format_interval`); charts label their cells with :func:`format_value`.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any


class Unit(StrEnum):
    """How a column's values are written."""

    TEXT = "text"  # names and ids, left-aligned
    COUNT = "count"  # whole numbers
    PERCENT = "percent"  # a share in [0, 1], shown as a percentage
    DECIMAL = "decimal"  # a real number, three decimals
    P_VALUE = "p_value"  # three significant digits ("<0.001" in the HTML report)


MISSING = "—"
"""What a table cell shows for a value that cannot be measured."""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


# ------------------------------------------------------------------ the HTML report


def format_text(value: Any, unit: Unit) -> str:
    """One value as the HTML report writes it ("—" when missing)."""
    if _missing(value):
        return MISSING
    if unit is Unit.PERCENT:
        return f"{value:.1%}"
    if unit is Unit.DECIMAL:
        return f"{value:.3f}"
    if unit is Unit.P_VALUE:
        return "<0.001" if value < 0.001 else f"{value:.3g}"
    return str(value)


# ------------------------------------------------------------------ the `report` command's table


def format_fraction(value: float | None, missing: str = MISSING) -> str:
    """A share in [0, 1] as the ``report`` command prints it (two decimals, not a percentage)."""
    return missing if value is None else f"{value:.2f}"


def format_interval(low: float | None, high: float | None) -> str:
    """A confidence interval as the ``report`` command prints it: ``[0.21, 0.94]``."""
    return f"[{format_fraction(low)}, {format_fraction(high)}]"


# ------------------------------------------------------------------ the Analysis tables


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, written without an exponent for the
    magnitudes Analysis shows (0.000123, 0.158, 12.3, 1,230)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(value, decimals)
    if decimals == 0:
        return f"{rounded:,.0f}"
    return f"{rounded:.{decimals}f}"


def format_p_value(value: float) -> str:
    """A p-value: "p < 0.001" below a thousandth, else three significant digits."""
    return "p < 0.001" if value < 0.001 else f"p = {significant(value)}"


def format_shown(value: Any, unit: Unit, *, scaled_percent: bool = False) -> str:
    """One value as the Analysis tables show it: percentages with one decimal, other decimals
    with three significant digits, p-values as "p < 0.001", counts with thousands separators,
    "—" when missing. ``scaled_percent``: a percent value already multiplied by 100."""
    if _missing(value):
        return MISSING
    if isinstance(value, str) or unit is Unit.TEXT:
        return str(value)
    if unit is Unit.PERCENT:
        return f"{value:.1f}%" if scaled_percent else f"{value:.1%}"
    if unit is Unit.P_VALUE:
        return format_p_value(float(value))
    if unit is Unit.COUNT:
        return f"{int(value):,}"
    return significant(float(value))


# ------------------------------------------------------------------ chart labels


def format_value(value: Any, fmt: str) -> str:
    """A chart label: the value in ``fmt`` (Python format spec), or "" when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return format(float(value), fmt)


def format_interval_percent(low: float | None, high: float | None) -> str:
    """A 95% interval of a rate for a chart label: "34–60%" ("" when unknown)."""
    if low is None or high is None:
        return ""
    return f"{low * 100:.0f}–{high * 100:.0f}%"


# ------------------------------------------------------------------ sample metadata values


MISSING_META = "(none)"
"""How a breakdown names the samples that lack the metadata key."""


def meta_value_order(value: Any) -> tuple[int, float, str]:
    """A sort key for sample metadata values, which mix types across samples (a "score" may be
    0.5 in one sample, "high" in another and missing in a third): numbers by value first, then
    text, then missing values — never a comparison between a number and a string."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return (0, float(value), "")
    if value is None or value == MISSING_META or isinstance(value, float):
        return (2, 0.0, "")
    return (1, 0.0, str(value))
