"""Store verbs for shrunk violations: the result of shrinking a case, kept in its own table
linked to the case id (the case itself is never changed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from storage.case_filter import case_where
from storage.label_verbs import label_timestamp

if TYPE_CHECKING:
    from sqlite_utils import Database

    from core.case_filter import CaseFilter


@dataclass(frozen=True)
class StoredShrink:
    """One row of ``shrink_results``, decoded; ``kept_edits`` as the edits' dicts."""

    case_id: str
    run_id: str
    relation_id: str
    status: str
    reason: str
    edits_total: int
    kept_edits: list[dict[str, Any]]
    minimal_followup: dict[str, str]
    calls: int
    confirmed: str
    shrunk_at: str


class ShrinkVerbs:
    """Mixin of :class:`storage.store.Store`: shrink results by case."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    def save_shrink(
        self,
        *,
        case_id: str,
        run_id: str,
        relation_id: str,
        status: str,
        reason: str,
        edits_total: int,
        kept_edits: list[dict[str, Any]],
        minimal_followup: dict[str, str],
        calls: int,
        confirmed: str,
    ) -> None:
        """Record (or replace) the shrink of one case: the latest search is the one shown."""
        with self._write():  # type: ignore[attr-defined]
            self._db.execute(
                "INSERT OR REPLACE INTO shrink_results (case_id, run_id, relation_id, status, "
                "reason, edits_total, kept_edits, minimal_followup, calls, confirmed, shrunk_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    case_id,
                    run_id,
                    relation_id,
                    status,
                    reason,
                    edits_total,
                    json.dumps(kept_edits),
                    json.dumps(minimal_followup),
                    calls,
                    confirmed,
                    label_timestamp(),
                ],
            )

    def shrink_of(self, case_id: str) -> StoredShrink | None:
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT * FROM shrink_results WHERE case_id = ?", [case_id]
        )
        return _decoded(rows[0]) if rows else None

    def shrunk_edit_rows(
        self, run_ids: list[str] | None = None, flt: CaseFilter | None = None
    ) -> list[dict[str, Any]]:
        """Every stored shrink that kept a subset (minimal or budget reached) with its case's
        model — of ``run_ids`` and the cases ``flt`` selects, when given: ``relation_id``,
        ``model``, ``status``, ``edits_total``, ``kept_edits`` (dicts)."""
        kept = ["s.status IN ('minimal', 'budget reached')"]
        params: list[Any] = []
        if run_ids is not None:
            kept.append(f"s.run_id IN ({','.join('?' * len(run_ids)) or 'NULL'})")
            params += run_ids
        if flt is None:
            where = "WHERE " + " AND ".join(kept)
        else:
            where, filter_params = case_where(flt, kept, alias="c")
            params = [*filter_params, *params]  # the extra clauses come last
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT s.relation_id, c.model, s.status, s.edits_total, s.kept_edits "
            f"FROM shrink_results s JOIN cases c ON c.id = s.case_id {where} ORDER BY s.case_id",
            params,
        )
        return [{**row, "kept_edits": json.loads(row["kept_edits"])} for row in rows]

    def shrunk_examples(self, flt: CaseFilter, limit: int = 10) -> list[dict[str, Any]]:
        """Shrunk cases of the filter that kept a subset, fewest kept edits first: the stored
        shrink's columns (decoded) with the case's ``model`` and ``source_input``."""
        where, params = case_where(flt, ["s.status IN ('minimal', 'budget reached')"], alias="c")
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT s.*, c.model, c.source_input, c.source_answer, c.followup_answer "
            f"FROM shrink_results s JOIN cases c ON c.id = s.case_id {where} "
            "ORDER BY json_array_length(s.kept_edits), s.edits_total DESC, s.case_id "
            f"LIMIT {int(limit)}",
            params,
        )
        decoded = ("kept_edits", "minimal_followup", "source_input")
        return [{**row, **{k: json.loads(row[k]) for k in decoded}} for row in rows]

    def shrink_status_counts(self, flt: CaseFilter) -> dict[str, int]:
        """How many of the filter's cases have a stored shrink, by its status."""
        where, params = case_where(flt, alias="c")
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT s.status, COUNT(*) AS n FROM shrink_results s "
            f"JOIN cases c ON c.id = s.case_id {where} GROUP BY s.status ORDER BY s.status",
            params,
        )
        return {row["status"]: row["n"] for row in rows}

    def shrinks_of_run(self, run_id: str) -> list[StoredShrink]:
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT * FROM shrink_results WHERE run_id = ? ORDER BY case_id", [run_id]
        )
        return [_decoded(row) for row in rows]


def _decoded(row: dict[str, Any]) -> StoredShrink:
    return StoredShrink(
        **{
            **row,
            "kept_edits": json.loads(row["kept_edits"]),
            "minimal_followup": json.loads(row["minimal_followup"]),
        }
    )
