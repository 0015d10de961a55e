"""Store verbs for runs: creating (or reopening) a run with its samples, its heartbeat while a
process runs it, finishing it, listing and deleting runs.

A run stored as "running" whose process is gone reads "interrupted" (``run_is_stale``).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.engine_version import ENGINE_VERSION
from core.records import Run
from core.sampling import RunSampling
from core.types import Endpoint, Sample, json_text
from storage.busy import retry_when_busy
from storage.errors import RunDeletedError
from storage.sql_helpers import now

if TYPE_CHECKING:
    from sqlite_utils import Database

# Who runs a run: "host:pid". A run whose owner is a dead process on this host, or whose
# heartbeat is older than STALE_AFTER_S (a process elsewhere, or frozen), is not running any more.
RUN_OWNER = f"{socket.gethostname()}:{os.getpid()}"
HEARTBEAT_EVERY_S = 5.0
STALE_AFTER_S = 120.0
# A run's row with how many cases it has (``_run_record`` reads it).
_RUN_ROWS = (
    "SELECT r.*, (SELECT count(*) FROM cases c WHERE c.run_id = r.id) AS n_cases FROM runs r"
)


@dataclass(frozen=True)
class RunDefinition:
    """What a stored run is made of: its id, the endpoint that answers it, the task, the full
    run configuration (enough to run it again), its samples in order and the dataset's name."""

    run_id: str
    endpoint: Endpoint
    task_id: str
    config: dict[str, Any]
    samples: Sequence[Sample]
    dataset: str | None = None


class RunVerbs:
    """Mixin of :class:`storage.store.Store`: runs, their samples and their liveness."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    def save_run(
        self,
        run: RunDefinition,
        *,
        n_planned: int = 0,
        created_at: str | None = None,
        engine_version: int | None = ENGINE_VERSION,
    ) -> None:
        """Create the run (or reopen it for resuming) together with its samples, atomically.

        ``created_at`` is the run's start time (default: now); importers and fixtures that
        rebuild an older run give their own. ``engine_version`` is stamped on the run (a reopened
        run keeps its stamp when it is None: a repair stamps it once every case is judged again).
        """

        def write() -> None:
            with self._write():
                self._save_samples(run.samples)
                existing = self._query("SELECT id FROM runs WHERE id = ?", [run.run_id])
                if existing:
                    self._db.execute(
                        # A reopened run is sent anew: how an earlier adaptive pass sampled it
                        # no longer describes it (an adaptive pass stores its own at the end).
                        "UPDATE runs SET status = 'running', finished_at = NULL, n_planned = ?, "
                        "sampling = NULL, "
                        "owner = ?, heartbeat_at = ?, "
                        "engine_version = coalesce(?, engine_version) WHERE id = ?",
                        [n_planned, RUN_OWNER, now(), engine_version, run.run_id],
                    )
                    return
                self._db["runs"].insert(
                    {
                        "id": run.run_id,
                        "created_at": created_at or now(),
                        "finished_at": None,
                        "status": "running",
                        "owner": RUN_OWNER,
                        "heartbeat_at": now(),
                        "endpoint_name": run.endpoint.name,
                        "model": run.endpoint.model,
                        "task_id": run.task_id,
                        "dataset": run.dataset,
                        "config": json_text(run.config),
                        "n_planned": n_planned,
                        "engine_version": engine_version,
                    }
                )
                self._db["run_samples"].insert_all(
                    {"run_id": run.run_id, "position": i, "sample_id": s.id}
                    for i, s in enumerate(run.samples)
                )

        retry_when_busy(write)

    def _save_samples(self, samples: Sequence[Sample]) -> None:
        # In batches, not one statement pair per sample: 50,000 inputs (a batch export) took
        # 10 s one by one.
        self._db["samples"].upsert_all(
            (
                {
                    "id": sample.id,
                    "fields": json_text(sample.fields),
                    "reference": sample.reference,
                    "reference_steps": json_text(list(sample.reference_steps)),
                    "meta": json_text(sample.meta),
                }
                for sample in samples
            ),
            pk="id",
        )

    def stamp_engine_version(self, run_id: str, version: int = ENGINE_VERSION) -> None:
        """The run's cases are all judged by engine ``version`` now (a repaired run)."""

        def write() -> None:
            with self._write():
                self._db.execute(
                    "UPDATE runs SET engine_version = ? WHERE id = ?", [version, run_id]
                )

        retry_when_busy(write)

    def finish_run(self, run_id: str, status: str) -> None:
        def write() -> None:
            with self._write():
                self._db.execute(
                    "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                    [status, now(), run_id],
                )

        retry_when_busy(write)

    def save_run_sampling(self, run_id: str, sampling: RunSampling) -> None:
        """Store how an adaptive run sampled its grid (read back by ``run_samplings``)."""

        def write() -> None:
            with self._write():
                self._db.execute(
                    "UPDATE runs SET sampling = ? WHERE id = ?",
                    [json_text(sampling.to_dict()), run_id],
                )

        retry_when_busy(write)

    def run_samplings(self, run_ids: Iterable[str] | None = None) -> dict[str, RunSampling]:
        """The adaptive runs among ``run_ids`` (default: every run), each with its sampling."""
        rows = self._query("SELECT id, sampling FROM runs WHERE sampling IS NOT NULL")
        wanted = set(run_ids) if run_ids is not None else None
        found = {}
        for row in rows:
            if wanted is not None and row["id"] not in wanted:
                continue
            try:
                found[row["id"]] = RunSampling.from_dict(json.loads(row["sampling"]))
            except (ValueError, TypeError, AttributeError):
                continue  # a row another tool wrote badly reads as a full-grid run
        return found

    def heartbeat(self, run_id: str) -> None:
        """The running process is alive and working on ``run_id`` (see ``run_is_stale``).
        Raises RunDeletedError when the run's row is gone."""
        updated = 0

        def write() -> None:
            nonlocal updated
            with self._write():
                updated = self._db.execute(
                    "UPDATE runs SET heartbeat_at = ?, owner = ? WHERE id = ?",
                    [now(), RUN_OWNER, run_id],
                ).rowcount

        retry_when_busy(write)
        if not updated:
            raise RunDeletedError(run_id)

    def runs(self) -> list[Run]:
        """Every run, newest first."""
        rows = self._query(f"{_RUN_ROWS} ORDER BY r.created_at DESC, r.id")
        return [_run_record(row) for row in rows]

    def run(self, run_id: str) -> Run | None:
        rows = self._query(f"{_RUN_ROWS} WHERE r.id = ?", [run_id])
        return _run_record(rows[0]) if rows else None

    def run_samples(self, run_id: str) -> list[Sample]:
        """The run's samples in their original order (to resume or repeat it)."""
        rows = self._query(
            "SELECT s.* FROM run_samples rs JOIN samples s ON s.id = rs.sample_id "
            "WHERE rs.run_id = ? ORDER BY rs.position",
            [run_id],
        )
        return [
            Sample(
                fields=json.loads(row["fields"]),
                reference=row["reference"],
                reference_steps=tuple(json.loads(row["reference_steps"])),
                meta=json.loads(row["meta"]),
            )
            for row in rows
        ]

    def delete_run(self, run_id: str) -> int:
        """Delete a run with its cases (their labels and verdict history go with them).

        Samples and cached calls stay: other runs share them. Returns how many cases went.
        """
        with self._write():
            n_cases = self._db.execute(
                "SELECT count(*) FROM cases WHERE run_id = ?", [run_id]
            ).fetchone()[0]
            # Children first, explicitly: the cascade needs foreign keys on, and a database
            # written by another tool may hold rows that predate them.
            self._db.execute(
                "DELETE FROM labels WHERE case_id IN (SELECT id FROM cases WHERE run_id = ?)",
                [run_id],
            )
            self._db.execute(
                "DELETE FROM verdict_history WHERE case_id IN "
                "(SELECT id FROM cases WHERE run_id = ?)",
                [run_id],
            )
            self._db.execute("DELETE FROM cases WHERE run_id = ?", [run_id])
            self._db.execute("DELETE FROM run_samples WHERE run_id = ?", [run_id])
            # Its submitted batches go; its exported requests stay, so a result file that
            # arrives later (paid for) still fills the call cache for a re-export.
            self._db.execute("DELETE FROM batch_jobs WHERE run_id = ?", [run_id])
            self._db.execute("DELETE FROM runs WHERE id = ?", [run_id])
        return n_cases


def run_is_stale(row: dict[str, Any], at: datetime | None = None) -> bool:
    """True when a run stored as "running" has no live process behind it any more."""
    if row.get("status") != "running":
        return False
    owner = row.get("owner") or ""
    host, _, pid = owner.rpartition(":")
    if host == socket.gethostname() and pid.isdigit() and not _process_alive(int(pid)):
        return True
    beat = row.get("heartbeat_at")
    if not beat:
        return True  # written before runs had heartbeats: no process of this version owns it
    try:
        age = ((at or datetime.now(UTC)) - datetime.fromisoformat(beat)).total_seconds()
    except ValueError:
        return True
    return age > STALE_AFTER_S


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, owned by someone else (or the check is not possible here)
    return True


def _run_record(row: dict[str, Any]) -> Run:
    """The row as a ``Run``: its config decoded, a dead "running" run read "interrupted"."""
    try:
        config = json.loads(row["config"] or "{}")
    except ValueError:
        config = {}  # a row another tool wrote badly: the run still lists, with no settings
    return Run(
        id=row["id"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
        status="interrupted" if run_is_stale(row) else row["status"],
        endpoint_name=row["endpoint_name"],
        model=row["model"],
        task_id=row["task_id"],
        dataset=row["dataset"],
        config=config if isinstance(config, dict) else {},
        n_planned=row["n_planned"],
        n_cases=row["n_cases"],
        owner=row.get("owner"),
        heartbeat_at=row.get("heartbeat_at"),
        engine_version=row.get("engine_version"),
    )
