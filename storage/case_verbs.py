"""Store verbs for cases: recording the runner's finished cases, reading them back, deleting them.

A case is one judged (source, follow-up) pair of a run; its id is a content hash, so the same
case recorded again updates its row in place (``record_cases``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.case_filter import CaseFilter
from core.types import Case
from storage.busy import retry_when_busy
from storage.case_filter import case_where
from storage.errors import RunDeletedError
from storage.sql_helpers import chunks, now

if TYPE_CHECKING:
    from sqlite_utils import Database

_CASE_COLUMNS = Case.columns()
_CASE_ORDER = "run_id, sample_id, relation_id, followup_index, repeat_index"
# A true upsert: a case recorded again is updated in place (its labels stay attached), and the
# first automatic verdict a Triage threshold kept in original_verdict is not cleared.
_UPSERT_CASE = (
    f"INSERT INTO cases ({', '.join(_CASE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_CASE_COLUMNS))}) ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(
        f"{column} = coalesce(excluded.{column}, cases.{column})"
        if column == "original_verdict"
        else f"{column} = excluded.{column}"
        for column in _CASE_COLUMNS
        if column != "id"
    )
)


class CaseVerbs:
    """Mixin of :class:`storage.store.Store`: the cases of runs."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    # ------------------------------------------------------------ writing

    def record_cases(self, cases: Iterable[Case]) -> None:
        """Write finished cases in one transaction.

        An upsert, not INSERT OR REPLACE: replacing would delete the row and cascade away its
        labels and verdict history; a re-recorded case also keeps its ``original_verdict``.
        """
        rows = []
        stamp = now()
        for case in cases:
            row = case.to_row()
            if row["created_at"] is None:
                row["created_at"] = stamp
            rows.append(tuple(row[column] for column in _CASE_COLUMNS))
        if not rows:
            return

        def write() -> None:
            with self._write():
                self._db.conn.executemany(_UPSERT_CASE, rows)

        try:
            retry_when_busy(write)
        except sqlite3.IntegrityError:
            # A case's run is gone (deleted while this process ran it): say so, not "FOREIGN
            # KEY constraint failed".
            run_column = _CASE_COLUMNS.index("run_id")
            for run_id in sorted({row[run_column] for row in rows}):
                if not self._query("SELECT 1 FROM runs WHERE id = ?", [run_id]):
                    raise RunDeletedError(run_id) from None
            raise

    def delete_cases(self, case_ids: Iterable[str]) -> int:
        """Delete cases with their labels and verdict history; returns how many went."""
        ids = list(case_ids)
        deleted = 0

        def write() -> None:
            nonlocal deleted
            deleted = 0
            with self._write():
                for chunk in chunks(ids, 500):
                    marks = ", ".join("?" * len(chunk))
                    self._db.execute(f"DELETE FROM labels WHERE case_id IN ({marks})", chunk)
                    self._db.execute(
                        f"DELETE FROM verdict_history WHERE case_id IN ({marks})", chunk
                    )
                    deleted += self._db.execute(
                        f"DELETE FROM cases WHERE id IN ({marks})", chunk
                    ).rowcount

        retry_when_busy(write)
        return deleted

    # ------------------------------------------------------------ one run's cases

    def recorded_case_verdicts(self, run_id: str) -> dict[str, str]:
        """Each stored case of the run: its id → its verdict."""
        rows = self._db.execute(
            "SELECT id, verdict FROM cases WHERE run_id = ?", [run_id]
        ).fetchall()
        return {row[0]: row[1] for row in rows}

    def case_inputs(self, run_id: str) -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each stored case of the run: its id → (source input, follow-up input)."""
        rows = self._db.execute(
            "SELECT id, source_input, followup_input FROM cases WHERE run_id = ?", [run_id]
        ).fetchall()
        return {
            case_id: (json.loads(source or "{}"), json.loads(followup) if followup else None)
            for case_id, source, followup in rows
        }

    def run_error_reasons(self, run_id: str) -> list[str]:
        """The reasons of the run's ERROR cases."""
        rows = self._db.execute(
            "SELECT reason FROM cases WHERE run_id = ? AND verdict = 'ERROR'", [run_id]
        ).fetchall()
        return [row[0] for row in rows]

    def run_verdict_counts(self, run_id: str) -> dict[str, int]:
        """How many cases of the run have each verdict (verdicts without cases left out)."""
        rows = self._query(
            "SELECT verdict, count(*) AS n FROM cases WHERE run_id = ? GROUP BY verdict", [run_id]
        )
        return {row["verdict"]: row["n"] for row in rows}

    # ------------------------------------------------------------ reading

    def existing_case_ids(self, case_ids: Iterable[str]) -> set[str]:
        """Those of ``case_ids`` that are stored."""
        ids = list(case_ids)
        found: set[str] = set()
        for chunk in chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT id FROM cases WHERE id IN ({marks})", chunk)
            found.update(row[0] for row in rows.fetchall())
        return found

    def cases_for(
        self,
        run_ids: Iterable[str] | None = None,
        *,
        verdicts: Iterable[str] | None = None,
        relation_ids: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Case]:
        """Stored cases, decoded, in run, sample, relation, follow-up order."""
        flt = CaseFilter.make(
            run_ids=run_ids, models=models, relations=relation_ids, verdicts=verdicts
        )
        where, params = case_where(flt)
        sql = f"SELECT * FROM cases {where} ORDER BY {_CASE_ORDER}"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return [Case.from_row(row) for row in self._query(sql, params)]

    def case(self, case_id: str) -> Case | None:
        """One stored case, decoded, or None."""
        rows = self._query("SELECT * FROM cases WHERE id = ?", [case_id])
        return Case.from_row(rows[0]) if rows else None
