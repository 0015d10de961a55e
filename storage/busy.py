"""A database that another writer holds locked: what counts as busy, and the retry that every
write of the store goes through.

A write first waits up to the connection's busy timeout (``BEGIN IMMEDIATE`` in ``Store._write``);
one that still finds the database locked (another process holding a long transaction) is tried
again a few times, with growing pauses, before the failure is raised.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

BUSY_RETRIES = 5
BUSY_PAUSE_S = 0.2


def is_busy_error(exc: BaseException) -> bool:
    """True for SQLite's transient "database is locked" / "busy" failures."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def retry_when_busy(write: Callable[[], None]) -> None:
    """Run ``write`` (one whole write transaction), again after a pause while the database is
    busy; any other failure, or the last busy one, is raised."""
    for attempt in range(BUSY_RETRIES):
        try:
            write()
            return
        except sqlite3.OperationalError as exc:
            if not is_busy_error(exc) or attempt == BUSY_RETRIES - 1:
                raise
            time.sleep(BUSY_PAUSE_S * (attempt + 1))
