"""A process-wide value is made once, even when threads ask for it at the same moment."""

from __future__ import annotations

import threading
import time

from core.once import process_wide


def test_threads_asking_at_once_get_one_object_made_once():
    made = []

    @process_wide
    def slow_to_make() -> object:
        made.append(1)
        time.sleep(0.05)  # long enough for every thread to be waiting on the first
        return object()

    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(slow_to_make())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1
    assert len(got) == 8 and all(g is got[0] for g in got)
    assert slow_to_make() is got[0]
    assert slow_to_make.__name__ == "slow_to_make"
