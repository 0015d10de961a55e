"""Which cases a query looks at: ``CaseFilter``, the one builder of WHERE clauses over ``cases``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

from storage.endpoint_models import MODEL_LABEL_OF_ROW


def _as_tuple(values: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


@dataclass(frozen=True)
class CaseFilter:
    """Which cases a query looks at. ``None`` means "any"; an empty tuple matches nothing.

    The one builder of WHERE clauses over ``cases``: the analysis verbs, ``cases_for`` and the
    Triage verbs all filter through it. ``date_from`` / ``date_to`` are inclusive calendar dates
    (``YYYY-MM-DD`` or ``date``) on the *run's* start time (``runs.created_at``, UTC), so a run is
    either wholly in or wholly out.
    """

    run_ids: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    relations: tuple[str, ...] | None = None
    date_from: str | None = None
    date_to: str | None = None
    verdicts: tuple[str, ...] | None = None
    case_ids: tuple[str, ...] | None = None

    @classmethod
    def make(
        cls,
        run_ids: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
        relations: Iterable[str] | None = None,
        date_from: str | date | None = None,
        date_to: str | date | None = None,
        verdicts: Iterable[str] | None = None,
        case_ids: Iterable[str] | None = None,
    ) -> CaseFilter:
        """Build a filter from any iterables / dates (normalised so it is hashable for caches)."""
        return cls(
            run_ids=_as_tuple(run_ids),
            models=_as_tuple(models),
            tasks=_as_tuple(tasks),
            relations=_as_tuple(relations),
            date_from=str(date_from) if date_from else None,
            date_to=str(date_to) if date_to else None,
            verdicts=None if verdicts is None else tuple(str(v) for v in verdicts),
            case_ids=_as_tuple(case_ids),
        )

    def with_relations(self, relations: Iterable[str] | None) -> CaseFilter:
        return replace(self, relations=_as_tuple(relations))

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for reports)."""
        return {
            "run_ids": list(self.run_ids) if self.run_ids is not None else None,
            "models": list(self.models) if self.models is not None else None,
            "tasks": list(self.tasks) if self.tasks is not None else None,
            "relations": list(self.relations) if self.relations is not None else None,
            "date_from": self.date_from,
            "date_to": self.date_to,
        }

    def where(self, extra: Iterable[str] = (), *, alias: str = "") -> tuple[str, list[Any]]:
        """``WHERE …`` (or "") over ``cases``, with its parameters.

        ``alias`` names the cases table in the query (``"c"`` → ``c.run_id IN …``). ``extra``
        clauses are appended last, so their parameters follow the filter's.
        """
        clauses, params = self.conditions(alias=alias)
        clauses.extend(extra)
        return ("WHERE " + " AND ".join(clauses) if clauses else ""), params

    def conditions(self, *, alias: str = "") -> tuple[list[str], list[Any]]:
        """The filter's conditions (to be joined with AND) and their parameters."""
        prefix = f"{alias}." if alias else ""
        clauses: list[str] = []
        params: list[Any] = []
        for column, values in (
            ("run_id", self.run_ids),
            ("verdict", self.verdicts),
            ("model", self.models),
            ("task_id", self.tasks),
            ("relation_id", self.relations),
            ("id", self.case_ids),
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
        if self.date_from or self.date_to:
            run_clauses = []
            if self.date_from:
                run_clauses.append("created_at >= ?")
                params.append(_day(self.date_from).isoformat())
            if self.date_to:
                run_clauses.append("created_at < ?")
                params.append((_day(self.date_to) + timedelta(days=1)).isoformat())
            clauses.append(
                f"{prefix}run_id IN (SELECT id FROM runs WHERE {' AND '.join(run_clauses)})"
            )
        return clauses, params


def _day(value: str | date) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError as exc:
        raise ValueError(f"not a date (expected YYYY-MM-DD): {value!r}") from exc
