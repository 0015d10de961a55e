"""How much input one run takes: rows, characters per line, and the limits as users read them."""

from __future__ import annotations

from collections.abc import Iterable

from app.inputs.errors import InputError

MAX_LINE_CHARS = 100_000
MAX_ROWS = 5_000


def check_line_lengths(lines: Iterable[str], label: str = "line") -> None:
    """Refuse the first line longer than ``MAX_LINE_CHARS`` (numbered from 1, as ``label`` N)."""
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(
                f"{label} {number} is {len(line):,} characters long; the limit is "
                f"{MAX_LINE_CHARS:,} characters per line. Shorten it or split the input."
            )


def check_row_count(count: int, limit: int = MAX_ROWS) -> None:
    """Refuse more rows than one run takes."""
    if count > limit:
        raise InputError(
            f"the input has {count:,} rows; at most {limit:,} rows can be run at once. "
            "Split it into smaller files."
        )


def megabytes(limit: int) -> str:
    """A limit in bytes as a message shows it (``20 MB``)."""
    return f"{limit / 1024 / 1024:g} MB"
