"""A value made once per process, on first use, by whichever thread asks first."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def process_wide(make: Callable[[], T]) -> Callable[[], T]:
    """``make`` called once, under a lock (two Streamlit sessions asking at the same moment get
    the same object), its result returned on every later call."""
    lock = threading.Lock()
    made: list[T] = []

    @functools.wraps(make)
    def get() -> T:
        with lock:
            if not made:
                made.append(make())
            return made[0]

    return get
