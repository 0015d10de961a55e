"""Store verbs for the oracles' thresholds chosen in Triage: a relation's threshold override, the
verdicts a new threshold would flip, and recomputing (and logging) those verdicts.

A recomputed case keeps its first automatic verdict in ``original_verdict``; each change is
logged in ``verdict_history``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from core.case_filter import CaseFilter
from core.thresholds import threshold_rule
from core.types import decode_case_columns
from storage.case_filter import case_where
from storage.label_verbs import chosen_labels, label_timestamp

if TYPE_CHECKING:
    from sqlite_utils import Database


def _numeric_tasks_clause(numeric_tasks: Iterable[str] | None) -> tuple[str, list[Any]]:
    if numeric_tasks is None:
        return "", []
    tasks = list(numeric_tasks)
    marks = ",".join("?" * len(tasks)) or "NULL"
    return f"AND (c.oracle != 'numeric_within' OR c.task_id IN ({marks}))", tasks


class ThresholdVerbs:
    """Mixin of :class:`storage.store.Store`: threshold overrides and the verdict changes they
    make."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    def threshold_overrides(self) -> dict[str, float]:
        """Per-relation oracle thresholds chosen in Triage (applied to new verdicts too)."""
        rows = self._query("SELECT relation_id, threshold FROM threshold_overrides")
        return {row["relation_id"]: row["threshold"] for row in rows}

    def set_threshold_override(self, relation_id: str, threshold: float) -> None:
        with self._write():
            self._db.execute(
                "INSERT OR REPLACE INTO threshold_overrides (relation_id, threshold, created_at) "
                "VALUES (?, ?, ?)",
                [relation_id, float(threshold), label_timestamp()],
            )

    def threshold_cases(
        self,
        relation_id: str,
        oracles: Iterable[str],
        *,
        numeric_tasks: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """PASS/FAIL cases of a relation judged by one of ``oracles`` with a stored value.

        ``numeric_tasks`` (when given) limits numeric_within cases to those tasks — the ones
        whose ε is absolute, so the stored |Δ| compares with it directly.
        Rows: id, oracle, value, verdict, reason.
        """
        oracles = list(oracles)
        numeric_clause, numeric_params = _numeric_tasks_clause(numeric_tasks)
        flt = CaseFilter.make(relations=[relation_id], verdicts=["PASS", "FAIL"])
        where, params = case_where(
            flt, ["c.value IS NOT NULL", f"c.oracle IN ({','.join('?' * len(oracles))})"], alias="c"
        )
        return self._query(
            "SELECT c.id, c.oracle, c.value, c.verdict, c.reason FROM cases c "
            f"{where} {numeric_clause} ORDER BY c.id",
            [*params, *oracles, *numeric_params],
        )

    def count_threshold_flips(
        self,
        relation_id: str,
        oracle: str,
        threshold: float,
        *,
        numeric_tasks: Iterable[str] | None = None,
    ) -> int:
        """How many stored PASS/FAIL verdicts of the relation a new threshold would flip."""
        fails = threshold_rule(oracle).fail_sql("c.value")
        numeric_clause, numeric_params = _numeric_tasks_clause(numeric_tasks)
        flt = CaseFilter.make(relations=[relation_id], verdicts=["PASS", "FAIL"])
        where, params = case_where(flt, ["c.oracle = ?", "c.value IS NOT NULL"], alias="c")
        row = self._db.execute(
            f"SELECT count(*) FROM cases c {where} "
            f"{numeric_clause} AND (c.verdict = 'FAIL') != ({fails})",
            [*params, oracle, *numeric_params, threshold],
        ).fetchone()
        return int(row[0])

    def labeled_threshold_cases(
        self,
        oracles: Iterable[str],
        run_ids: Iterable[str] | None = None,
        *,
        numeric_tasks: Iterable[str] | None = None,
        labeler: str | None = None,
    ) -> list[dict[str, Any]]:
        """Cases labeled confirmed / fp_oracle whose oracle compares a value with a threshold
        (``numeric_tasks`` as in ``threshold_cases``)."""
        oracles = list(oracles)
        prefix, params = chosen_labels(labeler)
        flt = CaseFilter.make(run_ids=run_ids, verdicts=["PASS", "FAIL"])
        where, filter_params = case_where(flt, alias="c")  # never empty: it names the verdicts
        numeric_clause, numeric_params = _numeric_tasks_clause(numeric_tasks)
        rows = self._query(
            prefix
            + "SELECT c.id, c.relation_id, c.oracle, c.value, c.verdict, c.details, ch.label "
            f"FROM chosen ch CROSS JOIN cases c ON c.id = ch.case_id {where} "
            "AND c.value IS NOT NULL AND ch.label IN ('confirmed', 'fp_oracle') "
            f"AND c.oracle IN ({','.join('?' * len(oracles))}) {numeric_clause} "
            "ORDER BY c.relation_id, c.oracle, c.value",
            [*params, *filter_params, *oracles, *numeric_params],
        )
        return [decode_case_columns(row) for row in rows]

    def record_verdict_changes(
        self, relation_id: str, threshold: float, changes: list[dict[str, Any]]
    ) -> None:
        """Write recomputed verdicts, log them, keep the first automatic verdict, set the override.

        ``changes``: rows with id, old_verdict, new_verdict, old_reason, new_reason. One
        transaction (part of the caller's, if any).
        """
        stamp = label_timestamp()
        with self._write():
            self._db.conn.executemany(
                "UPDATE cases SET original_verdict = coalesce(original_verdict, verdict), "
                "verdict = ?, reason = ? WHERE id = ?",
                [(c["new_verdict"], c["new_reason"], c["id"]) for c in changes],
            )
            self._db.conn.executemany(
                "INSERT INTO verdict_history (case_id, relation_id, old_verdict, new_verdict, "
                "old_reason, new_reason, threshold, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        c["id"],
                        relation_id,
                        c["old_verdict"],
                        c["new_verdict"],
                        c["old_reason"] or "",
                        c["new_reason"],
                        float(threshold),
                        stamp,
                    )
                    for c in changes
                ],
            )
            self.set_threshold_override(relation_id, threshold)

    def recompute_verdicts(
        self,
        relation_id: str,
        oracles: Iterable[str],
        threshold: float,
        changes_for: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        *,
        numeric_tasks: Iterable[str] | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Read the relation's ``threshold_cases``, let ``changes_for`` decide the new verdicts,
        and ``record_verdict_changes`` — all in one write transaction, so no other writer can
        change the cases between the read and the write. An exception from ``changes_for``
        writes nothing. Returns (the cases considered, the changes written).
        """
        with self._write():
            rows = self.threshold_cases(relation_id, oracles, numeric_tasks=numeric_tasks)
            changes = changes_for(rows)
            self.record_verdict_changes(relation_id, threshold, changes)
        return rows, changes
