"""Which cases a query looks at: ``CaseFilter``. ``storage.case_filter`` turns it into SQL."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date
from typing import Any


def _as_tuple(values: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


@dataclass(frozen=True)
class CaseFilter:
    """Which cases a query looks at. ``None`` means "any"; an empty tuple matches nothing.

    The analysis verbs, ``cases_for`` and the Triage verbs all filter through it (its SQL is
    ``storage.case_filter.case_where``). ``date_from`` / ``date_to`` are inclusive calendar
    dates (``YYYY-MM-DD`` or ``date``) on the *run's* start time (``runs.created_at``, UTC), so a
    run is either wholly in or wholly out.
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
