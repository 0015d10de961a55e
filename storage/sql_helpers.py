"""Small helpers the store's verbs share: the time stamped on written rows, and long id lists cut
into chunks for ``IN (…)`` (SQLite allows 32,766 bound variables per statement)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime


def now() -> str:
    """The current UTC time as stored on rows (ISO 8601, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def chunks(items: list[str], size: int) -> Iterator[list[str]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
