"""The one storage object. Verbs for runs, cases, the call cache, embeddings and settings.

Datasette's rule for SQLite applies: one writer, many readers. Each ``Store`` owns one
connection; pages open a fresh ``Store`` per script run instead of caching a connection.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlite_utils import Database

from core.engine_version import ENGINE_VERSION
from core.key_names import validate_api_key_env
from core.types import CallRequest, Case, Completion, Endpoint, Sample, content_hash, json_text
from storage.analysis import AnalysisQueries, CaseFilter, with_endpoint_label
from storage.batch_verbs import BatchVerbs
from storage.gate_verbs import GateVerbs
from storage.health import cannot_open_line
from storage.labels import LabelVerbs
from storage.migrations import migrations, prepare_database
from storage.report_verbs import ReportVerbs

DEFAULT_DB = Path("data/morphscope.db")


# What callers outside storage catch for a database failure, without importing sqlite3.
DatabaseFailure = sqlite3.Error


class StoreOpenError(ValueError):
    """The database cannot be opened as given; the message says why in one line."""


class RunStoppedError(Exception):
    """A run stopped by something outside it; the message says why in one line. What was
    stored stays, and the same run again resumes it."""


class RunDeletedError(RunStoppedError):
    """The run's row was deleted (``delete-run``, the dashboard) while a process ran it."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} was deleted while it ran; nothing more written")
        self.run_id = run_id


class DiskFullError(RunStoppedError):
    """The database could not grow: the disk, or the process's file size limit, is full."""


def sqlite_uri(path: str | Path, mode: str) -> str:
    """A ``file:`` URI for ``path``: '#', '?' and '%' in a file name are escaped, so the name is
    not cut short (which would open, or create, a different file)."""
    return f"file:{urllib.parse.quote(str(Path(path).resolve()))}?mode={mode}"


def check_db_path(path: str | Path, *, must_exist: bool = False) -> None:
    """Refuse, with a one-line StoreOpenError, a path that cannot hold a Morphscope database:
    a directory, a read-only file or folder, or (``must_exist``) a missing file. Cheap checks
    only; SQLite still has the last word (a file that is not SQLite is refused when the store
    first reads it).

    The file itself is never opened here, only looked up: this process may already hold SQLite
    connections to it, and on POSIX closing *any* descriptor of a file drops every lock the
    process holds on it. Another process would then take itself for the last connection and
    delete the WAL that this one keeps committing into, so those commits vanish after a crash
    (SQLite's "How To Corrupt An SQLite Database File", section 2.2).
    """
    path = Path(path)
    if path.is_dir():
        raise StoreOpenError(f"{path} is a directory, not a database file")
    if not path.exists():
        if must_exist:
            raise StoreOpenError(f"{path}: no such database")
        folder = next((p for p in path.absolute().parents if p.exists()), None)
        if folder is not None and not folder.is_dir():
            raise StoreOpenError(f"{path}: {folder} is not a folder")
        if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
            raise StoreOpenError(f"{path}: cannot create the database, {folder} is read-only")
        return
    # WAL mode writes beside the file (-wal, -shm), so the folder must be writable too.
    if not os.access(path, os.W_OK) or not os.access(path.absolute().parent, os.W_OK | os.X_OK):
        raise StoreOpenError(f"{path} is read-only (the file or its folder cannot be written)")


def _open_failure(path: str, exc: sqlite3.Error) -> StoreOpenError:
    """A one-line StoreOpenError for SQLite's refusal to open or first read ``path``."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_NOTADB" or "file is not a database" in str(exc):
        return StoreOpenError(f"{path} is not a SQLite database")
    if name.startswith("SQLITE_CANTOPEN") or "unable to open database file" in str(exc):
        return StoreOpenError(cannot_open_line(path, exc))
    return StoreOpenError(f"{path}: cannot open the database ({exc})")


def remove_unused_database(path: str | Path, files: Iterable[Path]) -> bool:
    """Remove ``files`` (the database at ``path`` and side files of it that a command created)
    only when the database holds no row in any table and no connection, in this process or
    another, has it open; True when it did. A database that holds anything stays: a command
    must never delete what another process wrote into a file it believes it created.

    The check goes through SQLite (an exclusive lock, which fails while any other connection
    is open), never through a file descriptor of its own (see ``check_db_path``).
    """
    path = Path(path)
    if path.exists():
        try:
            conn = sqlite3.connect(sqlite_uri(path, "rw"), uri=True, timeout=0)
        except sqlite3.Error:
            return False
        try:
            conn.isolation_level = None
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            conn.execute("BEGIN EXCLUSIVE")
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%' AND name != '_sqlite_migrations'"
                )
            ]
            if any(
                conn.execute(f"SELECT EXISTS (SELECT 1 FROM {_quoted(name)})").fetchone()[0]
                for name in tables
            ):
                return False
            conn.execute("ROLLBACK")
        except sqlite3.Error:  # in use (locked), or not a database: leave it alone
            return False
        finally:
            conn.close()
    for file in files:
        if file.is_file():
            file.unlink(missing_ok=True)
    return True


def _quoted(name: str) -> str:
    escaped = name.replace('"', '""')
    return f'"{escaped}"'


def default_db_path() -> Path:
    return Path(os.environ.get("MORPHSCOPE_DB") or DEFAULT_DB)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store(AnalysisQueries, LabelVerbs, ReportVerbs, GateVerbs, BatchVerbs):
    """SQLite store. ``Store(":memory:")`` for tests; a path for real use.

    Everything outside ``storage/`` reads and writes through the verbs below and in the mixins;
    the connection (``_db``), raw queries (``_query``) and write transactions (``_write``) are
    private to the package.
    """

    def __init__(self, path: str | Path | None = None, *, read_only: bool = False) -> None:
        path = default_db_path() if path is None else path
        self.path = str(path)
        # One write transaction at a time per connection: a thread that finds another thread's
        # transaction open must wait for it, not silently join it.
        self._write_lock = threading.RLock()
        if read_only:
            # An extra reader for parallel scans: no migrations, no writes (WAL allows many).
            uri = sqlite_uri(path, "ro")
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30)
            self._db = Database(conn)
            return
        if self.path != ":memory:":
            check_db_path(path)
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            except sqlite3.Error as exc:
                raise _open_failure(self.path, exc) from None
        else:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._db = Database(conn)
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._refuse_newer_schema()
            if self.path == ":memory:":
                migrations.apply(self._db)
            else:
                # Several processes may open (and create) the same file at once: WAL switching
                # and the check-then-apply of migrations happen under one cross-process lock.
                prepare_database(self._db, self.path)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _open_failure(self.path, exc) from None
        except StoreOpenError:
            conn.close()
            raise

    def _refuse_newer_schema(self) -> None:
        """A database written by a newer Morphscope (migrations this version does not know) is
        refused before anything reads or writes it, rather than failing halfway through a run."""
        if "_sqlite_migrations" not in self._db.table_names():
            return
        applied = {
            row["name"]
            for row in self._db.query(
                "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", [migrations.name]
            )
        }
        unknown = sorted(applied - {m.name for m in migrations._migrations})
        if unknown:
            raise StoreOpenError(
                f"{self.path} was written by a newer version of Morphscope (unknown schema "
                f"migration {unknown[-1]}); upgrade Morphscope to open it"
            )

    def _query(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows of a read query as dicts (storage-internal)."""
        return list(self._db.query(sql, params))

    @contextmanager
    def _write(self) -> Iterator[None]:
        """A write transaction that takes the write lock up front (``BEGIN IMMEDIATE``).

        A deferred transaction that reads first and writes later can fail with "database is
        locked" when another writer got in between; taking the lock at BEGIN makes it wait (up to
        the connection's timeout) instead. Nested use joins the outer transaction, and so do
        sqlite-utils' own helpers (they use savepoints inside an open transaction). An exception
        rolls the whole transaction back. Other threads sharing this ``Store`` wait their turn.
        """
        conn = self._db.conn
        with self._write_lock:
            if conn.in_transaction:
                yield
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                conn.rollback()
                raise
            try:
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

    def close(self) -> None:
        self._db.conn.close()

    def refresh_statistics(self) -> None:
        """Run ``ANALYZE`` so the query planner knows the indexes' sizes (after a bulk load)."""
        with self._write():
            self._db.execute("ANALYZE")

    def parallel_reads(
        self, jobs: dict[str, Callable[[Store], Any]], workers: int = 2
    ) -> dict[str, Any]:
        """Run read-only jobs at once, each on its own connection.

        SQLite releases the GIL while it scans, so independent aggregations over a large table
        finish in about the time of the slowest one. In-memory stores run them one by one.
        """
        if self.path == ":memory:" or len(jobs) < 2:
            return {name: job(self) for name, job in jobs.items()}

        def run(job: Callable[[Store], Any]) -> Any:
            reader = Store(self.path, read_only=True)
            try:
                return job(reader)
            finally:
                reader.close()

        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {name: pool.submit(run, job) for name, job in jobs.items()}
            return {name: future.result() for name, future in futures.items()}

    # ------------------------------------------------------------ endpoints

    def save_endpoint(self, endpoint: Endpoint) -> None:
        """Save (or replace) an endpoint. A key setting that looks like a key itself, not a
        variable's name, is refused with ValueError: keys are never written."""
        validate_api_key_env(endpoint.api_key_env)
        params = {
            "temperature": endpoint.temperature,
            "top_p": endpoint.top_p,
            "max_tokens": endpoint.max_tokens,
            "seed": endpoint.seed,
            "concurrency": endpoint.concurrency,
            "timeout_s": endpoint.timeout_s,
            "retries": endpoint.retries,
            "rpm_limit": endpoint.rpm_limit,
            "tpm_limit": endpoint.tpm_limit,
        }
        with self._write():
            self._db["endpoints"].upsert(
                {
                    "name": endpoint.name,
                    "base_url": endpoint.base_url,
                    "model": endpoint.model,
                    "api_key_env": endpoint.api_key_env,
                    "params": json_text(params),
                    "embedded": int(endpoint.embedded),
                    "kind": endpoint.kind,
                    "created_at": now(),
                },
                pk="name",
            )

    def endpoints(self) -> list[Endpoint]:
        rows = self._query("SELECT * FROM endpoints ORDER BY name")
        return [self._endpoint(row) for row in rows]

    def endpoint(self, name: str) -> Endpoint | None:
        rows = self._query("SELECT * FROM endpoints WHERE name = ?", [name])
        return self._endpoint(rows[0]) if rows else None

    def delete_endpoint(self, name: str) -> None:
        with self._write():
            self._db.execute("DELETE FROM endpoints WHERE name = ?", [name])

    @staticmethod
    def _endpoint(row: dict[str, Any]) -> Endpoint:
        params = json.loads(row["params"])
        return Endpoint(
            name=row["name"],
            base_url=row["base_url"],
            model=row["model"],
            api_key_env=row["api_key_env"],
            kind=row["kind"],
            **params,
        )

    # ------------------------------------------------------------ custom tasks & relations

    def save_task(self, task_id: str, name: str, template: str, answer_type: str, labels) -> None:
        with self._write():
            self._db["tasks"].upsert(
                {
                    "id": task_id,
                    "name": name,
                    "template": template,
                    "answer_type": answer_type,
                    "labels": json_text(list(labels)),
                    "created_at": now(),
                },
                pk="id",
            )

    def custom_task_rows(self) -> list[dict[str, Any]]:
        rows = self._query("SELECT * FROM tasks ORDER BY id")
        for row in rows:
            row["labels"] = json.loads(row["labels"])
        return rows

    def save_custom_relation(self, relation_id: str, spec: dict[str, Any]) -> None:
        with self._write():
            existing = self._query(
                "SELECT created_at FROM custom_relations WHERE id = ?", [relation_id]
            )
            self._db["custom_relations"].upsert(
                {
                    "id": relation_id,
                    "spec": json_text(spec),
                    "created_at": existing[0]["created_at"] if existing else now(),
                    "updated_at": now(),
                },
                pk="id",
            )

    def save_custom_relations(self, specs: Iterable[dict[str, Any]]) -> None:
        """Save several custom relations (each under its ``id``) in one transaction."""
        with self._write():
            for spec in specs:
                self.save_custom_relation(spec["id"], spec)

    def custom_relation_specs(self) -> dict[str, dict[str, Any]]:
        rows = self._query("SELECT id, spec FROM custom_relations ORDER BY id")
        return {row["id"]: json.loads(row["spec"]) for row in rows}

    def delete_custom_relation(self, relation_id: str) -> None:
        with self._write():
            self._db.execute("DELETE FROM custom_relations WHERE id = ?", [relation_id])

    # ------------------------------------------------------------ runs & samples

    def save_run(
        self,
        run_id: str,
        *,
        endpoint: Endpoint,
        task_id: str,
        config: dict[str, Any],
        samples: list[Sample],
        dataset: str | None = None,
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
                # In batches, not one statement pair per sample: 50,000 inputs (a batch export)
                # took 10 s one by one.
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
                existing = self._query("SELECT id FROM runs WHERE id = ?", [run_id])
                if existing:
                    self._db.execute(
                        "UPDATE runs SET status = 'running', finished_at = NULL, n_planned = ?, "
                        "owner = ?, heartbeat_at = ?, "
                        "engine_version = coalesce(?, engine_version) WHERE id = ?",
                        [n_planned, RUN_OWNER, now(), engine_version, run_id],
                    )
                    return
                self._db["runs"].insert(
                    {
                        "id": run_id,
                        "created_at": created_at or now(),
                        "finished_at": None,
                        "status": "running",
                        "owner": RUN_OWNER,
                        "heartbeat_at": now(),
                        "endpoint_name": endpoint.name,
                        "model": endpoint.model,
                        "task_id": task_id,
                        "dataset": dataset,
                        "config": json_text(config),
                        "n_planned": n_planned,
                        "engine_version": engine_version,
                    }
                )
                self._db["run_samples"].insert_all(
                    {"run_id": run_id, "position": i, "sample_id": s.id}
                    for i, s in enumerate(samples)
                )

        _retry_when_busy(write)

    def stamp_engine_version(self, run_id: str, version: int = ENGINE_VERSION) -> None:
        """The run's cases are all judged by engine ``version`` now (a repaired run)."""

        def write() -> None:
            with self._write():
                self._db.execute(
                    "UPDATE runs SET engine_version = ? WHERE id = ?", [version, run_id]
                )

        _retry_when_busy(write)

    def case_inputs(self, run_id: str) -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each stored case of the run: its id → (source input, follow-up input)."""
        rows = self._db.execute(
            "SELECT id, source_input, followup_input FROM cases WHERE run_id = ?", [run_id]
        ).fetchall()
        return {
            case_id: (json.loads(source or "{}"), json.loads(followup) if followup else None)
            for case_id, source, followup in rows
        }

    def delete_cases(self, case_ids: Iterable[str]) -> int:
        """Delete cases with their labels and verdict history; returns how many went."""
        ids = list(case_ids)
        deleted = 0

        def write() -> None:
            nonlocal deleted
            deleted = 0
            with self._write():
                for chunk in _chunks(ids, 500):
                    marks = ", ".join("?" * len(chunk))
                    self._db.execute(f"DELETE FROM labels WHERE case_id IN ({marks})", chunk)
                    self._db.execute(
                        f"DELETE FROM verdict_history WHERE case_id IN ({marks})", chunk
                    )
                    deleted += self._db.execute(
                        f"DELETE FROM cases WHERE id IN ({marks})", chunk
                    ).rowcount

        _retry_when_busy(write)
        return deleted

    def finish_run(self, run_id: str, status: str) -> None:
        def write() -> None:
            with self._write():
                self._db.execute(
                    "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                    [status, now(), run_id],
                )

        _retry_when_busy(write)

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

        _retry_when_busy(write)
        if not updated:
            raise RunDeletedError(run_id)

    def runs(self) -> list[dict[str, Any]]:
        """Every run, newest first, with ``n_cases`` and ``endpoint`` ("endpoint · model", what
        lists show: two endpoints may serve models of the same name); a dead "running" run reads
        "interrupted"."""
        rows = self._query(
            "SELECT r.*, (SELECT count(*) FROM cases c WHERE c.run_id = r.id) AS n_cases "
            "FROM runs r ORDER BY r.created_at DESC, r.id"
        )
        return [with_endpoint_label(_with_live_status(row)) for row in rows]

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self._query("SELECT * FROM runs WHERE id = ?", [run_id])
        if not rows:
            return None
        row = _with_live_status(rows[0])
        row["config"] = json.loads(row["config"])
        return row

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

    # ------------------------------------------------------------ cases

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
            _retry_when_busy(write)
        except sqlite3.IntegrityError:
            # A case's run is gone (deleted while this process ran it): say so, not "FOREIGN
            # KEY constraint failed".
            run_column = _CASE_COLUMNS.index("run_id")
            for run_id in sorted({row[run_column] for row in rows}):
                if not self._query("SELECT 1 FROM runs WHERE id = ?", [run_id]):
                    raise RunDeletedError(run_id) from None
            raise

    def recorded_case_ids(self, run_id: str) -> set[str]:
        rows = self._db.execute("SELECT id FROM cases WHERE run_id = ?", [run_id]).fetchall()
        return {row[0] for row in rows}

    def recorded_case_verdicts(self, run_id: str) -> dict[str, str]:
        """Each stored case of the run: its id → its verdict."""
        rows = self._db.execute(
            "SELECT id, verdict FROM cases WHERE run_id = ?", [run_id]
        ).fetchall()
        return {row[0]: row[1] for row in rows}

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

    def existing_case_ids(self, case_ids: Iterable[str]) -> set[str]:
        """Those of ``case_ids`` that are stored."""
        ids = list(case_ids)
        found: set[str] = set()
        for chunk in _chunks(ids, 500):
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
        where, params = flt.where()
        sql = f"SELECT * FROM cases {where} ORDER BY {_CASE_ORDER}"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return [Case.from_row(row) for row in self._query(sql, params)]

    def case(self, case_id: str) -> Case | None:
        """One stored case, decoded, or None."""
        rows = self._query("SELECT * FROM cases WHERE id = ?", [case_id])
        return Case.from_row(rows[0]) if rows else None

    def threshold_overrides(self) -> dict[str, float]:
        """Per-relation oracle thresholds chosen in Triage (applied to new verdicts too)."""
        rows = self._query("SELECT relation_id, threshold FROM threshold_overrides")
        return {row["relation_id"]: row["threshold"] for row in rows}

    # ------------------------------------------------------------ call cache

    @staticmethod
    def call_key(base_url: str, model: str, params: dict, messages: list, repeat_index: int) -> str:
        return content_hash(
            {
                "base_url": base_url.rstrip("/"),
                "model": model,
                "params": params,
                "messages": messages,
                "repeat": repeat_index,
            }
        )

    def cached_call(self, key: str) -> Completion | None:
        row = self._db.execute(
            "SELECT response, latency_ms, usage FROM calls WHERE key = ?", [key]
        ).fetchone()
        if row is None:
            return None
        return Completion(
            text=row[0], cached=True, latency_ms=row[1] or 0.0, usage=json.loads(row[2])
        )

    def cached_calls(self, keys: list[str]) -> dict[str, Completion]:
        """The cached answers among ``keys`` (a key with none is left out), in few queries."""
        found: dict[str, Completion] = {}
        for chunk in _chunks(keys, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, response, latency_ms, usage FROM calls WHERE key IN ({marks})", chunk
            ).fetchall()
            for key, response, latency_ms, usage in rows:
                found[key] = Completion(
                    text=response,
                    cached=True,
                    latency_ms=latency_ms or 0.0,
                    usage=json.loads(usage),
                )
        return found

    def cache_call(
        self,
        key: str,
        *,
        base_url: str,
        model: str,
        params: dict,
        messages: list,
        repeat_index: int,
        completion: Completion,
    ) -> None:
        """Only successful calls are cached: a failed call is retried on the next run."""
        self.cache_calls(
            [CachedAnswer(key, base_url, model, params, messages, repeat_index, completion)]
        )

    def cache_calls(self, answers: Iterable[CachedAnswer]) -> None:
        """Cache many answers in one transaction (the runner's writer thread batches them);
        failed calls are left out, so the next run sends them again."""
        stamp = now()
        rows = [_call_row(answer, stamp) for answer in answers if answer.completion.ok]
        if not rows:
            return

        def write() -> None:
            with self._write():
                self._db["calls"].insert_all(rows, replace=True)

        _retry_when_busy(write)

    def count_calls(self) -> int:
        return self._db.execute("SELECT count(*) FROM calls").fetchone()[0]

    # ------------------------------------------------------------ embeddings cache

    def cached_embeddings(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for chunk in _chunks(hashes, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks})",
                [model, *chunk],
            ).fetchall()
            for text_hash, blob in rows:
                found[text_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cache_embeddings(self, vectors: dict[str, np.ndarray], model: str) -> None:
        if not vectors:
            return
        rows = [(h, model, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()]

        def write() -> None:
            with self._write():
                self._db.conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (text_hash, model, vector) VALUES (?, ?, ?)",
                    rows,
                )

        _retry_when_busy(write)


@dataclass(frozen=True)
class CachedAnswer(CallRequest):
    """One answered call, as the call cache stores it (keyed by ``Store.call_key``)."""

    completion: Completion


def _call_row(answer: CachedAnswer, stamp: str) -> dict[str, Any]:
    return {
        "key": answer.key,
        "base_url": answer.base_url,
        "model": answer.model,
        "params": json_text(answer.params),
        "messages": json_text(answer.messages),
        "repeat_index": answer.repeat_index,
        "response": answer.completion.text,
        "latency_ms": answer.completion.latency_ms,
        "usage": json_text(answer.completion.usage),
        "created_at": stamp,
    }


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


# Who runs a run: "host:pid". A run whose owner is a dead process on this host, or whose
# heartbeat is older than STALE_AFTER_S (a process elsewhere, or frozen), is not running any more.
RUN_OWNER = f"{socket.gethostname()}:{os.getpid()}"
HEARTBEAT_EVERY_S = 5.0
STALE_AFTER_S = 120.0


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


def _with_live_status(row: dict[str, Any]) -> dict[str, Any]:
    if run_is_stale(row):
        row["status"] = "interrupted"
    return row


# A write that still finds the database locked after the connection's busy timeout (another
# process holding a long transaction) is tried again a few times before giving up.
BUSY_RETRIES = 5
BUSY_PAUSE_S = 0.2


def is_busy_error(exc: BaseException) -> bool:
    """True for SQLite's transient "database is locked" / "busy" failures."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def disk_full_reason(exc: BaseException, path: str | Path) -> str | None:
    """Why a failed write could not grow the database at ``path``, when the cause is a full
    disk or the process's file size limit (``ulimit -f``); None for any other failure."""
    if not isinstance(exc, sqlite3.OperationalError):
        return None
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "database or disk is full" in str(exc):
        return f"{path} ({exc})"
    if not name.startswith("SQLITE_IOERR") and "disk I/O error" not in str(exc):
        return None
    # A write past the size limit fails with EFBIG, which SQLite reports as a plain I/O error:
    # the limit, or the space left, tells the two apart.
    limit = _file_size_limit()
    if limit is not None:
        sizes = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-journal")]
        largest = max((p.stat().st_size for p in sizes if p.exists()), default=0)
        if largest + 65536 >= limit:
            return f"{path} reached the file size limit of {limit // 1024} KiB (ulimit -f)"
    try:
        free = shutil.disk_usage(Path(path).absolute().parent).free
    except OSError:
        return None
    if free < 1_048_576:
        return f"{path} ({free // 1024} KiB left on its disk)"
    return None


def _file_size_limit() -> int | None:
    """The process's limit on the size of a file it writes, in bytes (None: unlimited)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def _retry_when_busy(write: Callable[[], None]) -> None:
    for attempt in range(BUSY_RETRIES):
        try:
            write()
            return
        except sqlite3.OperationalError as exc:
            if not is_busy_error(exc) or attempt == BUSY_RETRIES - 1:
                raise
            time.sleep(BUSY_PAUSE_S * (attempt + 1))


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
