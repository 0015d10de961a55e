"""Store verbs for shrinking through batch files: the searches between rounds (each case's ddmin
state as JSON) and the requests each round wrote.

A round is stored in one transaction — every search's new state, the requests written for it,
and the searches that ended (their results go to ``shrink_results`` through ``save_shrink``) —
so an interrupted round leaves the previous one whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.types import CallRequest, json_text
from storage.sql_helpers import chunks, now

if TYPE_CHECKING:
    from sqlite_utils import Database

IN_CHUNK = 900  # keys per IN (…) query, well below SQLite's limit of bound variables


@dataclass(frozen=True)
class ShrinkSearchRow:
    """One case's search between rounds: ``state`` is ``DdminState.to_dict()``."""

    case_id: str
    run_id: str
    state: dict[str, Any]
    round: int


@dataclass(frozen=True)
class RoundRequest:
    """A request a round wrote for a case (a key two cases share is written once, kept twice)."""

    case_id: str
    round: int
    request: CallRequest


class ShrinkRoundVerbs:
    """Mixin of :class:`storage.store.Store`: batch rounds of shrinking."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    def save_shrink_round(
        self,
        searches: Iterable[ShrinkSearchRow],
        requests: Iterable[RoundRequest],
        ended: Iterable[str],
        *,
        restart: Iterable[str] = (),
    ) -> None:
        """Store a round: the searches going on, their new requests, the ended searches
        dropped; ``restart``: cases whose earlier searches and requests are forgotten first."""
        stamp = now()
        with self._write():  # type: ignore[attr-defined]
            conn = self._db.conn
            for case_id in restart:
                conn.execute("DELETE FROM shrink_searches WHERE case_id = ?", [case_id])
                conn.execute("DELETE FROM shrink_requests WHERE case_id = ?", [case_id])
            conn.executemany(
                "INSERT OR REPLACE INTO shrink_searches (case_id, run_id, state, round, "
                "updated_at) VALUES (?, ?, ?, ?, ?)",
                [(s.case_id, s.run_id, json_text(s.state), s.round, stamp) for s in searches],
            )
            conn.executemany(
                "INSERT INTO shrink_requests (case_id, key, round, base_url, model, params, "
                "messages, repeat_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(case_id, key) DO UPDATE SET round = excluded.round, error = NULL",
                [_request_values(r) for r in requests],
            )
            for case_id in ended:
                conn.execute("DELETE FROM shrink_searches WHERE case_id = ?", [case_id])

    def shrink_searches(self) -> list[ShrinkSearchRow]:
        """The searches going on, by case id."""
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT case_id, run_id, state, round FROM shrink_searches ORDER BY case_id", []
        )
        return [ShrinkSearchRow(**{**row, "state": json.loads(row["state"])}) for row in rows]

    def shrink_search_round(self, case_id: str) -> int | None:
        """The round a batch search of the case waits on, or None when none goes on."""
        row = self._db.execute(
            "SELECT round FROM shrink_searches WHERE case_id = ?", [case_id]
        ).fetchone()
        return None if row is None else int(row[0])

    def shrink_requests_for_keys(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The request behind each known key (params and messages decoded); unknown keys are
        absent."""
        found: dict[str, dict[str, Any]] = {}
        for chunk in chunks(list(dict.fromkeys(keys)), IN_CHUNK):
            marks = ",".join("?" * len(chunk))
            for row in self._query(  # type: ignore[attr-defined]
                "SELECT key, base_url, model, params, messages, repeat_index "
                f"FROM shrink_requests WHERE key IN ({marks})",
                chunk,
            ):
                found.setdefault(
                    row["key"],
                    {
                        **row,
                        "params": json.loads(row["params"]),
                        "messages": json.loads(row["messages"]),
                    },
                )
        return found

    def shrink_request_keys(self, case_id: str) -> set[str]:
        """Every key requested for the case's search so far (answered or not)."""
        rows = self._db.execute("SELECT key FROM shrink_requests WHERE case_id = ?", [case_id])
        return {row[0] for row in rows.fetchall()}

    def set_shrink_request_errors(self, errors: dict[str, str]) -> None:
        """The error a result line gave each key (in every case that requested it)."""
        if not errors:
            return
        with self._write():  # type: ignore[attr-defined]
            self._db.conn.executemany(
                "UPDATE shrink_requests SET error = ? WHERE key = ?",
                [(reason, key) for key, reason in errors.items()],
            )

    def shrink_request_errors(self, case_id: str) -> list[dict[str, Any]]:
        """The case's requests a result line answered with an error (params, messages decoded)."""
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT key, model, params, messages, error FROM shrink_requests "
            "WHERE case_id = ? AND error IS NOT NULL",
            [case_id],
        )
        return [
            {**row, "params": json.loads(row["params"]), "messages": json.loads(row["messages"])}
            for row in rows
        ]


def _request_values(row: RoundRequest) -> tuple:
    request = row.request
    return (
        row.case_id,
        request.key,
        row.round,
        request.base_url,
        request.model,
        json_text(request.params),
        json_text(request.messages),
        request.repeat_index,
    )
