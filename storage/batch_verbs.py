"""Store verbs for batch mode: the requests a batch export wrote, and remote batch jobs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.types import CallRequest, json_text
from storage.sql_helpers import chunks, now

if TYPE_CHECKING:
    from sqlite_utils import Database

# Run states of batch mode: exported and waiting for results, or imported with calls missing.
AWAITING_BATCH = "awaiting_batch"
PARTIAL = "partial"
BATCH_RUN_STATES = (AWAITING_BATCH, PARTIAL)

# SQLite allows 32,766 bound variables per statement; chunks stay well below it.
IN_CHUNK = 900


class BatchVerbs:
    """Mixin of :class:`storage.store.Store`: batch requests, batch jobs, batch run states."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    # ------------------------------------------------------------ requests

    def record_batch_requests(self, run_id: str, stage: str, rows: Iterable[CallRequest]) -> int:
        """Remember the requests exported for ``run_id`` (one transaction); a request exported
        again forgets the error an earlier result file gave it. Returns how many rows."""
        stamp = now()
        values = [
            (
                run_id,
                row.key,
                stage,
                row.base_url,
                row.model,
                json_text(row.params),
                json_text(row.messages),
                row.repeat_index,
                stamp,
            )
            for row in rows
        ]
        if not values:
            return 0
        with self._write():
            self._db.conn.executemany(
                "INSERT INTO batch_requests (run_id, key, stage, base_url, model, params, "
                "messages, repeat_index, exported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id, key) DO UPDATE SET stage = excluded.stage, "
                "exported_at = excluded.exported_at, error = NULL",
                values,
            )
        return len(values)

    def batch_requests_for_keys(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The exported request behind each known key (params and messages decoded), with
        ``run_ids``: every run that exported it. Unknown keys are absent."""
        found: dict[str, dict[str, Any]] = {}
        for chunk in chunks(list(dict.fromkeys(keys)), IN_CHUNK):
            marks = ",".join("?" * len(chunk))
            for row in self._query(
                f"SELECT * FROM batch_requests WHERE key IN ({marks}) ORDER BY run_id", chunk
            ):
                entry = found.get(row["key"])
                if entry is None:
                    entry = dict(row)
                    entry["params"] = json.loads(row["params"])
                    entry["messages"] = json.loads(row["messages"])
                    entry["run_ids"] = []
                    del entry["run_id"]
                    found[row["key"]] = entry
                entry["run_ids"].append(row["run_id"])
        return found

    def batch_request_keys(self, run_id: str, stage: str | None = None) -> list[str]:
        """The keys exported for a run (of one stage, if given)."""
        sql = "SELECT key FROM batch_requests WHERE run_id = ?"
        params: list[Any] = [run_id]
        if stage is not None:
            sql += " AND stage = ?"
            params.append(stage)
        return [row[0] for row in self._db.execute(sql, params).fetchall()]

    def set_batch_errors(self, errors: dict[str, str]) -> None:
        """Record the error a result file gave each key (in every run that exported it)."""
        if not errors:
            return
        with self._write():
            self._db.conn.executemany(
                "UPDATE batch_requests SET error = ? WHERE key = ?",
                [(reason, key) for key, reason in errors.items()],
            )

    def batch_errors(self, run_id: str) -> list[dict[str, Any]]:
        """The run's exported requests that a result file answered with an error."""
        rows = self._query(
            "SELECT key, model, params, messages, error FROM batch_requests "
            "WHERE run_id = ? AND error IS NOT NULL",
            [run_id],
        )
        for row in rows:
            row["params"] = json.loads(row["params"])
            row["messages"] = json.loads(row["messages"])
        return rows

    def cached_call_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` the call cache holds (chunked queries, not one per key)."""
        found: set[str] = set()
        for chunk in chunks(list(dict.fromkeys(keys)), IN_CHUNK):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT key FROM calls WHERE key IN ({marks})", chunk)
            found.update(row[0] for row in rows.fetchall())
        return found

    # ------------------------------------------------------------ run states

    def set_run_status(self, run_id: str, status: str) -> None:
        """Set a run's state without finishing it (``awaiting_batch`` after an export, ``partial``
        after an import with calls missing)."""
        with self._write():
            self._db.execute("UPDATE runs SET status = ? WHERE id = ?", [status, run_id])

    # ------------------------------------------------------------ remote jobs

    def record_batch_job(
        self,
        run_id: str,
        part: int,
        *,
        stage: str,
        remote_batch_id: str | None,
        input_file_id: str | None,
        status: str,
    ) -> None:
        """Remember a part file submitted to a Files + Batches server (replaces an older one)."""
        with self._write():
            self._db.execute(
                "INSERT OR REPLACE INTO batch_jobs (run_id, part, stage, remote_batch_id, "
                "input_file_id, status, counts, updated_at) VALUES (?, ?, ?, ?, ?, ?, '{}', ?)",
                [run_id, part, stage, remote_batch_id, input_file_id, status, now()],
            )

    def update_batch_job(self, run_id: str, part: int, **fields: Any) -> None:
        """Change a job's columns (``status``, ``output_file_id``, ``counts`` as a dict, …)."""
        allowed = {
            "stage",
            "remote_batch_id",
            "input_file_id",
            "output_file_id",
            "error_file_id",
            "status",
            "counts",
        }
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"unknown batch job field(s): {', '.join(sorted(unknown))}")
        if "counts" in fields:
            fields["counts"] = json_text(fields["counts"] or {})
        fields["updated_at"] = now()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._write():
            self._db.execute(
                f"UPDATE batch_jobs SET {assignments} WHERE run_id = ? AND part = ?",
                [*fields.values(), run_id, part],
            )

    def forget_batch_jobs(self, run_id: str) -> None:
        """Drop a run's remote jobs (a new submission of another stage replaces them)."""
        with self._write():
            self._db.execute("DELETE FROM batch_jobs WHERE run_id = ?", [run_id])

    def batch_jobs(self, run_id: str) -> list[dict[str, Any]]:
        """A run's submitted parts, in part order (``counts`` decoded)."""
        rows = self._query("SELECT * FROM batch_jobs WHERE run_id = ? ORDER BY part", [run_id])
        for row in rows:
            row["counts"] = json.loads(row["counts"] or "{}")
        return rows
