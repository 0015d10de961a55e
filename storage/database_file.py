"""The database file itself: where it is by default, the cheap checks before SQLite opens it,
and removing one that a command created but never used.

Nothing here opens the file outside SQLite: this process may already hold SQLite connections to
it, and on POSIX closing *any* descriptor of a file drops every lock the process holds on it.
Another process would then take itself for the last connection and delete the WAL that this one
keeps committing into, so those commits vanish after a crash (SQLite's "How To Corrupt An SQLite
Database File", section 2.2).
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Iterable
from pathlib import Path

from core.settings import settings
from storage.errors import StoreOpenError


def default_db_path() -> Path:
    return settings().db_path


def sqlite_uri(path: str | Path, mode: str) -> str:
    """A ``file:`` URI for ``path``: '#', '?' and '%' in a file name are escaped, so the name is
    not cut short (which would open, or create, a different file)."""
    return f"file:{urllib.parse.quote(str(Path(path).resolve()))}?mode={mode}"


def check_db_path(path: str | Path, *, must_exist: bool = False) -> None:
    """Refuse, with a one-line StoreOpenError, a path that cannot hold a Morphscope database:
    a directory, a read-only file or folder, or (``must_exist``) a missing file. Cheap checks
    only, the file is only looked up (see the module's docstring); SQLite still has the last
    word (a file that is not SQLite is refused when the store first reads it).
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


def remove_unused_database(path: str | Path, files: Iterable[Path]) -> bool:
    """Remove ``files`` (the database at ``path`` and side files of it that a command created)
    only when the database holds no row in any table and no connection, in this process or
    another, has it open; True when it did. A database that holds anything stays: a command
    must never delete what another process wrote into a file it believes it created.

    The check goes through SQLite (an exclusive lock, which fails while any other connection
    is open), never through a file descriptor of its own (see the module's docstring).
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
            if _holds_rows(conn):
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


def _holds_rows(conn: sqlite3.Connection) -> bool:
    """Whether any table but SQLite's own and the migrations' record holds a row."""
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name != '_sqlite_migrations'"
        )
    ]
    return any(
        conn.execute(f"SELECT EXISTS (SELECT 1 FROM {_quoted(name)})").fetchone()[0]
        for name in tables
    )


def _quoted(name: str) -> str:
    escaped = name.replace('"', '""')
    return f'"{escaped}"'
