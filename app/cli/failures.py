"""How a command ends when it goes wrong: SIGTERM taken as Ctrl-C, the database files a failed
command created removed again, an unexpected error said in one line."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any


class NewFiles:
    """The database files a command creates: removed again when the command fails on bad input,
    so a mistake leaves nothing behind. Only a database that holds nothing and that no other
    process has open is removed: another process may have written into the new file since (and
    a side file of a database that existed before is never touched: it may hold another
    process's commits)."""

    SUFFIXES = ("", "-wal", "-shm", "-journal")

    def __init__(self, args: argparse.Namespace) -> None:
        db = getattr(args, "db", None)
        self.paths = [Path(f"{db}{suffix}") for suffix in self.SUFFIXES] if db else []
        self.absent = [path for path in self.paths if not path.exists()]
        existing = (
            [parent for parent in Path(db).absolute().parents if parent.exists()] if db else []
        )
        self.first_existing_folder = existing[0] if existing else None
        self.folder = Path(db).absolute().parent if db else None

    def remove(self) -> None:
        from storage.database_file import remove_unused_database

        if not self.paths or self.paths[0] not in self.absent:
            return
        if not remove_unused_database(self.paths[0], self.absent):
            return
        # Folders made for the database, from the innermost, while they are empty.
        folder = self.folder
        while folder is not None and folder != self.first_existing_folder:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent


class SigtermAsCtrlC:
    """SIGTERM (systemd, ``docker stop``, CI) handled as Ctrl-C is: a run stops at once, marked
    interrupted (resumable) with every answer it received kept, and the command ends with one
    line. Ctrl-C's own handler does the work (asyncio's cancels the run's task), so both take
    the same path; where SIGINT is ignored (a background job) it is a KeyboardInterrupt."""

    def __init__(self) -> None:
        self.received = False
        self._previous: Any = None

    def __enter__(self) -> SigtermAsCtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.received = True
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint):
            on_sigint(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt


def one_line(exc: BaseException) -> str:
    """An unexpected error as one line: its type and first line, never a traceback."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no details'}"


def database_failure_line(exc: BaseException, args: argparse.Namespace) -> str:
    """A full disk, a damaged database, or one that cannot be opened or created, said plainly;
    any other failure as its type and first line."""
    from storage import default_db_path
    from storage.errors import disk_full_reason
    from storage.health import failure_line

    db = getattr(args, "db", None) or default_db_path()
    full = disk_full_reason(exc, db)
    if full:
        return f"the disk is full: {full}; rerun when there is space"
    return failure_line(exc, db) or one_line(exc)
