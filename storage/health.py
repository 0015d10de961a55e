"""A database's health: what a command checks before it reports from a database, and the line
a failure to open or create the file comes down to.

A damaged file (pages overwritten, a copy cut short) can still open and answer most queries:
reports and exports would then present whatever the readable part holds as the whole.
``PRAGMA quick_check`` reads every page once and finds that damage.
"""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store imports this module
    from storage.store import Store

# Findings quoted in the message; quick_check stops looking after this many.
_FINDINGS = 3


def damage(store: Store) -> str | None:
    """What ``PRAGMA quick_check`` finds wrong with the store's database (its first findings, on
    one line), or None when the database is sound."""
    try:
        rows = store._db.execute(f"PRAGMA quick_check({_FINDINGS})").fetchall()
    except sqlite3.DatabaseError as exc:  # damage bad enough that the check cannot read on
        return str(exc)
    findings = [" ".join(str(row[0]).split()) for row in rows]
    if findings == ["ok"]:
        return None
    return "; ".join(findings)[:300]


def damaged_message(path: str | Path, finding: str) -> str:
    """The one line that tells the user a database is damaged and what to do about it."""
    quoted = shlex.quote(str(path))
    return (
        f"database {path} is damaged ({finding}); restore a copy or run `sqlite3 {quoted} .recover`"
    )


def damage_line(store: Store) -> str | None:
    """``damaged_message`` for the store's database when ``quick_check`` finds damage, else None."""
    finding = damage(store)
    return damaged_message(store.path, finding) if finding else None


def cannot_open_line(path: str | Path, exc: BaseException) -> str:
    """The line for SQLite's "unable to open database file" where the cheap path checks saw
    nothing wrong: an existing file that cannot be read, or (``/proc/x.db``) a folder that
    looks writable but takes no new files."""
    path = Path(path)
    if path.exists():
        return f"{path}: cannot be read ({exc})"
    return (
        f"cannot create the database {path}: {path.absolute().parent} does not take new files "
        f"({exc}); choose a path in an ordinary, writable folder"
    )


def failure_line(exc: BaseException, path: str | Path) -> str | None:
    """One readable line for a SQLite failure a command met on the database at ``path``: damage
    found while reading, or a file that cannot be opened or created. None for other failures."""
    if not isinstance(exc, sqlite3.Error):
        return None
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_CORRUPT") or "disk image is malformed" in str(exc):
        return damaged_message(path, str(exc))
    if name.startswith("SQLITE_CANTOPEN") or "unable to open database file" in str(exc):
        return cannot_open_line(path, exc)
    return None


def file_identity(path: str | Path) -> tuple[int, int, int] | None:
    """The database file's inode, size and modification time (None when it is missing): they
    change when the file is replaced or checkpointed, not at every commit, so a cached
    ``quick_check`` is repeated when the file changes and not at every write. Only looked up
    (``stat``), never opened: opening it outside SQLite would drop this process's locks."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns
