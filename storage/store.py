"""The one storage object: ``Store`` opens the database and carries every verb.

Datasette's rule for SQLite applies: one writer, many readers. Each ``Store`` owns one
connection; pages open a fresh ``Store`` per script run instead of caching a connection.

The verbs live in one mixin per subject (``*_verbs.py``), composed here, so callers keep one
object: ``store.save_run(…)``, ``store.add_label(…)``. The mixins use three private members
of the store: the connection (``_db``), raw queries (``_query``) and write transactions
(``_write``); nothing outside ``storage/`` touches them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from storage.analysis_verbs import AnalysisVerbs
from storage.answer_verbs import AnswerVerbs
from storage.baseline_verbs import BaselineVerbs, RunComparisonVerbs
from storage.batch_verbs import BatchVerbs
from storage.cache_verbs import CacheVerbs
from storage.case_verbs import CaseVerbs
from storage.database_file import check_db_path, default_db_path, sqlite_uri
from storage.delta_verbs import DeltaVerbs
from storage.errors import StoreOpenError, open_failure
from storage.gate_verbs import GateVerbs, RewriteYieldVerbs
from storage.label_verbs import LabelVerbs
from storage.migrations import apply_migrations, prepare_database, unknown_migrations
from storage.report_verbs import ReportVerbs
from storage.run_verbs import RunVerbs
from storage.shrink_round_verbs import ShrinkRoundVerbs
from storage.shrink_verbs import ShrinkVerbs
from storage.threshold_verbs import ThresholdVerbs
from storage.workspace_verbs import WorkspaceVerbs


class Store(
    WorkspaceVerbs,
    RunVerbs,
    CaseVerbs,
    CacheVerbs,
    LabelVerbs,
    ThresholdVerbs,
    AnalysisVerbs,
    DeltaVerbs,
    AnswerVerbs,
    ReportVerbs,
    GateVerbs,
    BaselineVerbs,
    RunComparisonVerbs,
    RewriteYieldVerbs,
    BatchVerbs,
    ShrinkVerbs,
    ShrinkRoundVerbs,
):
    """SQLite store. ``Store(":memory:")`` for tests; a path for real use."""

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
                raise open_failure(self.path, exc) from None
        else:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._db = Database(conn)
        try:
            self._prepare()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise open_failure(self.path, exc) from None
        except StoreOpenError:
            conn.close()
            raise

    def _prepare(self) -> None:
        """Set the connection up and bring the schema up to date."""
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._refuse_newer_schema()
        if self.path == ":memory:":
            apply_migrations(self._db)
        else:
            # Several processes may open (and create) the same file at once: WAL switching
            # and the check-then-apply of migrations happen under one cross-process lock.
            prepare_database(self._db, self.path)

    def _refuse_newer_schema(self) -> None:
        """A database written by a newer Morphscope (migrations this version does not know) is
        refused before anything reads or writes it, rather than failing halfway through a run."""
        unknown = unknown_migrations(self._db)
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
