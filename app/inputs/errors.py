"""The one error every input check raises, and how its messages list what is wrong.

Every reader here either returns a complete result or raises ``InputError`` with a message meant
for the user (what is wrong, where, and what to do); nothing is ever half-parsed.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_LISTED = 10  # how many offending rows an error message names


class InputError(ValueError):
    """Bad user input; ``message`` is written for the person who supplied it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def listing(items: Sequence[str]) -> str:
    """The first ``MAX_LISTED`` items, comma-separated, and how many more there are."""
    shown = ", ".join(items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown
