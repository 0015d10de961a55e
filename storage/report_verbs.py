"""Store verbs for reports, exports and imports (``app.reports``) and the metric breakdowns."""

from __future__ import annotations

from typing import Any

from core.types import Case, Endpoint, Sample


class ReportVerbs:
    """Mixin of :class:`storage.store.Store`: reads and writes the reporting code needs."""

    def case_models(self) -> list[str]:
        """Every model that has cases, sorted by name."""
        return [r["model"] for r in self._query("SELECT DISTINCT model FROM cases ORDER BY 1")]

    def case_column_names(self) -> list[str]:
        """The columns of the cases table, in table order (an empty export's CSV header)."""
        return [r["name"] for r in self._query("PRAGMA table_info(cases)")]

    def replace_imported_run(
        self,
        run_id: str,
        *,
        endpoint: Endpoint,
        task_id: str,
        config: dict[str, Any],
        samples: list[Sample],
        dataset: str,
        cases: list[Case],
    ) -> None:
        """Write an imported run and its cases, all or nothing, as a finished run.

        Importing the same data again gives the same run id: the run's earlier cases are deleted
        first, so the import replaces them instead of duplicating them.
        """
        with self._write():
            self.save_run(
                run_id,
                endpoint=endpoint,
                task_id=task_id,
                config=config,
                samples=samples,
                dataset=dataset,
                n_planned=len(cases),
            )
            self._db.execute("DELETE FROM cases WHERE run_id = ?", [run_id])
            self.record_cases(cases)
            self.finish_run(run_id, "done")
