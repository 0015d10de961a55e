"""Small helpers shared by the report, export and HTML modules."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from core.case_filter import CaseFilter


def now() -> str:
    """The current UTC time, to the second (a report's ``generated_at``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def json_safe(value: Any) -> Any:
    """JSON-safe copy: NaN / inf → None, numpy scalars → Python, tuples → lists."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def case_filter(
    run_ids: Iterable[str] | None = None, flt: CaseFilter | None = None, **filters: Any
) -> CaseFilter:
    """``flt`` when given, else a filter built from the run ids and keyword filters."""
    if flt is not None:
        return flt
    return CaseFilter.make(run_ids=run_ids, **filters)
