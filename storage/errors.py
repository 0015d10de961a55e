"""The failures the store reports, each worded as one line a user can act on: a database that
cannot be opened, a run stopped from outside, a disk that is full."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from storage.health import cannot_open_line

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


def open_failure(path: str, exc: sqlite3.Error) -> StoreOpenError:
    """A one-line StoreOpenError for SQLite's refusal to open or first read ``path``."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_NOTADB" or "file is not a database" in str(exc):
        return StoreOpenError(f"{path} is not a SQLite database")
    if name.startswith("SQLITE_CANTOPEN") or "unable to open database file" in str(exc):
        return StoreOpenError(cannot_open_line(path, exc))
    return StoreOpenError(f"{path}: cannot open the database ({exc})")


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
