"""A ``CaseFilter`` as SQL: the one builder of WHERE clauses over ``cases``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from core.case_filter import CaseFilter
from storage.endpoint_models import MODEL_LABEL_OF_ROW


def case_where(
    flt: CaseFilter, extra: Iterable[str] = (), *, alias: str = ""
) -> tuple[str, list[Any]]:
    """``WHERE …`` (or "") over ``cases``, with its parameters.

    ``alias`` names the cases table in the query (``"c"`` → ``c.run_id IN …``). ``extra``
    clauses are appended last, so their parameters follow the filter's.
    """
    clauses, params = case_conditions(flt, alias=alias)
    clauses.extend(extra)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), params


def case_conditions(flt: CaseFilter, *, alias: str = "") -> tuple[list[str], list[Any]]:
    """The filter's conditions (to be joined with AND) and their parameters."""
    prefix = f"{alias}." if alias else ""
    clauses: list[str] = []
    params: list[Any] = []
    for column, values in (
        ("run_id", flt.run_ids),
        ("verdict", flt.verdicts),
        ("model", flt.models),
        ("task_id", flt.tasks),
        ("relation_id", flt.relations),
        ("id", flt.case_ids),
    ):
        if values is None:
            continue
        if not values:
            clauses.append("0")
            continue
        marks = ",".join("?" * len(values))
        if column == "model" and any(" · " in value for value in values):
            # An "endpoint · model" label (a model name two endpoints share) also matches
            # rows of the bare cases table, as the labels' queries read it.
            label = MODEL_LABEL_OF_ROW.format(m=f"{prefix}model", r=f"{prefix}run_id")
            clauses.append(f"({prefix}model IN ({marks}) OR {label} IN ({marks}))")
            params.extend([*values, *values])
            continue
        clauses.append(f"{prefix}{column} IN ({marks})")
        params.extend(values)
    if flt.date_from or flt.date_to:
        run_clauses = []
        if flt.date_from:
            run_clauses.append("created_at >= ?")
            params.append(_day(flt.date_from).isoformat())
        if flt.date_to:
            run_clauses.append("created_at < ?")
            params.append((_day(flt.date_to) + timedelta(days=1)).isoformat())
        clauses.append(f"{prefix}run_id IN (SELECT id FROM runs WHERE {' AND '.join(run_clauses)})")
    return clauses, params


def _day(value: str | date) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError as exc:
        raise ValueError(f"not a date (expected YYYY-MM-DD): {value!r}") from exc
