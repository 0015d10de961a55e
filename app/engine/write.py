"""A run's two worker threads: one judges finished cases, one does every store write.

The event loop only sends calls. Judging (parsing, oracles, embedding) runs on one thread, and
every store write of the run on another, in batches: answers are cached every moment even while a
batch waits for the embedding model. A failure that stops the run (its row deleted from outside,
the disk full) halts it: nothing more is written, and the loop ends with a one-line reason.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from app.engine.plan import PlannedCase
from core.types import Case
from storage import Store
from storage.cache_verbs import CachedAnswer
from storage.errors import DiskFullError, RunStoppedError, disk_full_reason

log = logging.getLogger(__name__)


class RunWorkers:
    """The threads of one run, made when it starts and shut down when it ends."""

    def __init__(
        self, store: Store, run_id: str, judge: Callable[[list[PlannedCase]], list[Case]]
    ) -> None:
        self.store = store
        self.run_id = run_id
        self._judge = judge
        self.evaluator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="morphscope-eval")
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="morphscope-writer")
        # Set by the writer or evaluation thread when the run cannot go on: the loop stops.
        self.halted: Exception | None = None
        self.answers_saved = 0
        # A batch still being judged when the run was torn down is not waited for (the
        # embedding model may still be loading); its answers are stored already.
        self.evaluation_abandoned = False

    def store_answers(self, answers: list[CachedAnswer]) -> None:
        """Cache ``answers`` on the writer thread, soon."""
        self.writer.submit(self._store_answers, answers)

    def save(self, batch: list[PlannedCase]) -> Future:
        """Judge ``batch`` on the evaluation thread and record it on the writer thread; the
        future's result is the cases recorded."""
        return self.evaluator.submit(self._save, batch)

    def heartbeat(self) -> None:
        self.writer.submit(self._heartbeat)

    def shutdown(self) -> None:
        self.evaluator.shutdown(wait=not self.evaluation_abandoned, cancel_futures=True)
        self.writer.shutdown(wait=True)

    def raise_if_halted(self) -> None:
        """After the loop: a halted run ends with its one-line reason, what was stored kept."""
        halted = self.halted
        if halted is None:
            return
        if isinstance(halted, DiskFullError):
            with contextlib.suppress(Exception):  # most likely the disk is still full
                self.store.finish_run(self.run_id, "interrupted")
            raise DiskFullError(
                f"the disk is full: {halted}; {self.answers_saved} answers kept, rerun to finish"
            )
        raise halted

    def _store_answers(self, answers: list[CachedAnswer]) -> None:
        """On the writer thread: cache answers. A failure that stops the run is noted for the
        loop; any other loses only these cache entries, never the answers (the cases still get
        their verdicts)."""
        if self.halted is not None or not answers:
            return
        try:
            self.store.cache_calls(answers)
        except Exception as exc:
            if not self._halt_on(exc):
                log.warning(
                    "could not cache %d calls; their answers are kept", len(answers), exc_info=True
                )
            return
        self.answers_saved += sum(1 for answer in answers if answer.completion.ok)

    def _halt_on(self, exc: BaseException) -> bool:
        """Whether ``exc`` stops the run; if so the run is halted with a one-line reason."""
        if isinstance(exc, RunStoppedError):
            self.halted = self.halted or exc
            return True
        reason = disk_full_reason(exc, self.store.path)
        if reason is None:
            return False
        self.halted = self.halted or DiskFullError(reason)
        return True

    def _heartbeat(self) -> None:
        try:
            self.store.heartbeat(self.run_id)
        except Exception as exc:  # a missed heartbeat is harmless; the next one comes in seconds
            if not self._halt_on(exc):
                log.warning("could not record the run's heartbeat", exc_info=True)

    def _save(self, batch: list[PlannedCase]) -> list[Case]:
        """On the evaluation thread. Once the run is halted nothing more is recorded (the
        answers are cached: a rerun makes these cases again without calls)."""
        if not batch or self.halted is not None:
            return []
        cases = self._judge(batch)
        try:
            self.writer.submit(self.store.record_cases, cases).result()
        except Exception as exc:
            if self._halt_on(exc):
                return []
            raise
        return cases
