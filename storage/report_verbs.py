"""Store verbs for reports, exports and imports (``app.reports``) and the metric breakdowns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.types import Case
from storage.run_verbs import RunDefinition

if TYPE_CHECKING:
    from sqlite_utils import Database


class ReportVerbs:
    """Mixin of :class:`storage.store.Store`: reads and writes the reporting code needs."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    def case_models(self) -> list[str]:
        """Every model that has cases, sorted by name."""
        return [r["model"] for r in self._query("SELECT DISTINCT model FROM cases ORDER BY 1")]

    def case_column_names(self) -> list[str]:
        """The columns of the cases table, in table order (an empty export's CSV header)."""
        return [r["name"] for r in self._query("PRAGMA table_info(cases)")]

    def replace_imported_run(self, run: RunDefinition, cases: list[Case]) -> None:
        """Write an imported run and its cases, all or nothing, as a finished run.

        Importing the same data again gives the same run id: the run's earlier cases are deleted
        first, so the import replaces them instead of duplicating them.
        """
        with self._write():
            self.save_run(run, n_planned=len(cases))
            self._db.execute("DELETE FROM cases WHERE run_id = ?", [run.run_id])
            self.record_cases(cases)
            self.finish_run(run.run_id, "done")
