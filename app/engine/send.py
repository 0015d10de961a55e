"""Sending a run's planned cases: every call at once (the client paces them), finished cases
handed to the run's workers in batches, and a clean stop on cancel, stall or tear-down.

A run killed at any moment keeps its finished cases and the answers that arrived: a rerun
resumes without repeating them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures

from app.engine.calls import CallCache, case_calls
from app.engine.plan import PlannedCase
from app.engine.progress import Progress, ProgressCallback
from app.engine.write import RunWorkers
from core.tasks import Task
from core.types import Case
from storage.run_verbs import HEARTBEAT_EVERY_S

FLUSH_EVERY = 16
FLUSH_AFTER_S = 1.0
# At most this many cases are judged in one batch (a few seconds of embedding on two cores),
# and a run stopped from outside (Ctrl-C, SIGTERM, a Streamlit rerun) judges what finished
# for at most TEARDOWN_S more: the rest need no call to be made again, their answers are kept.
BATCH_MOST = 64
TEARDOWN_S = 2.0
# A run whose cases stop finishing for this long (an endpoint that accepts connections and never
# answers, with retries still going) is stopped and marked interrupted; a rerun resumes it.
STALL_AFTER_S = 300.0


class SendLoop:
    """Sends one run's cases that need calls, and saves every case as it settles."""

    def __init__(
        self,
        task: Task,
        calls: CallCache,
        workers: RunWorkers,
        state: Progress,
        progress: ProgressCallback | None,
        cancel: threading.Event,
        stall_after_s: float = STALL_AFTER_S,
    ) -> None:
        self.task, self.calls, self.workers = task, calls, workers
        self.state, self.progress, self.cancel = state, progress, cancel
        self.stall_after_s = stall_after_s
        self.stop_reason = ""
        self._finished: list[PlannedCase] = []
        self._saving: Future | None = None  # the batch the workers are judging and saving
        self._saving_size = 0
        self._waiter: tuple[Future, asyncio.Future] | None = None  # the loop's view of _saving

    async def run(self, todo: list[PlannedCase]) -> str:
        """Send ``todo``'s calls and save every case; the run's status ("done", "cancelled",
        "interrupted")."""
        to_call: list[PlannedCase] = []
        for case in todo:
            settled_now = case.followup is None or case.skip_reason or case.error
            (self._finished if settled_now else to_call).append(case)
        self.state.done += len(self._finished)
        self.calls.hand_answers_to(self.workers.store_answers)
        # Calls queue on the client's semaphore in case order (source, then its follow-up), so
        # cases finish steadily from the start.
        pending = {asyncio.ensure_future(self._send(c)) for c in to_call}
        status = "done"
        completed = False
        try:
            status, pending = await self._send_all(pending)
            await self._save_the_rest(pending, status)
            completed = True
        finally:
            for future in pending:
                future.cancel()
            if pending and status == "done":
                status = "cancelled" if self.cancel.is_set() else "interrupted"
            self._keep_what_finished(completed)
        return status

    async def _send(self, case: PlannedCase) -> PlannedCase:
        wanted = case_calls(self.task, case)
        results = await asyncio.gather(
            *(self.calls.complete(msgs, rep) for msgs, rep in wanted.values())
        )
        case.outputs = dict(zip(wanted, results, strict=True))
        return case

    async def _send_all(self, pending: set) -> tuple[str, set]:
        """Wait for the cases, saving them in batches, until all are done or the run stops."""
        last_flush = last_beat = last_progress = time.monotonic()
        while pending:
            self._collect()
            status = self._stop_status(last_progress)
            if status:
                return status, pending
            # Save in batches (one embedding batch each), and at least every FLUSH_AFTER_S
            # so a killed run loses little. One batch at a time: the next one gathers while
            # the writer thread works, and calls keep flowing meanwhile.
            overdue = time.monotonic() - last_flush > FLUSH_AFTER_S
            if (
                self._saving is None
                and self._finished
                and (len(self._finished) >= FLUSH_EVERY or overdue)
            ):
                self._saving = self._save_batch()
                last_flush = time.monotonic()
            elif overdue:  # a batch is still being judged: its answers are kept already
                self._save_answers_now()
                last_flush = time.monotonic()
            # Woken by an answered case or by the judged batch (the next one then starts at
            # once: the embedder does not wait for the poll).
            saved = self._saving_waiter()
            done, _ = await asyncio.wait(
                pending | saved, timeout=0.2, return_when=asyncio.FIRST_COMPLETED
            )
            done -= saved
            pending -= done
            for future in done:
                self._finished.append(future.result())
                self.state.done += 1
            self._note_unjudged()
            if done:
                last_progress = time.monotonic()
            if time.monotonic() - last_beat > HEARTBEAT_EVERY_S:
                self.workers.heartbeat()
                last_beat = time.monotonic()
            if self.progress and done:
                self.progress(self.state)
        return "done", pending

    def _stop_status(self, last_progress: float) -> str | None:
        if self.cancel.is_set():
            return "cancelled"
        if self.workers.halted is not None:
            return "interrupted"
        if time.monotonic() - last_progress > self.stall_after_s:
            self.stop_reason = (
                f"no case finished for {self.stall_after_s / 60:g} min; "
                "stopped (run again to resume)"
            )
            return "interrupted"
        return None

    async def _save_the_rest(self, pending: set, status: str) -> None:
        if pending:
            # Stopped early (cancel, stall): no new call may start while the batch in the
            # writer finishes, which can take seconds (the embedding model may be loading).
            for future in pending:
                future.cancel()
        if self._saving is not None:
            self._save_answers_now()  # the last answers need not wait for the batch before
            await asyncio.wrap_future(self._saving)
            self._collect()
        while status == "done" and self._finished:
            self._saving = self._save_batch()
            await asyncio.wrap_future(self._saving)
            self._collect()

    def _keep_what_finished(self, completed: bool) -> None:
        """Whatever finished is kept, even when the caller is being torn down: every answer at
        once, and the cases while TEARDOWN_S lasts (a torn-down run must end within seconds; a
        case left unsaved costs no call, its answers are stored). This waits for the writer
        thread (blocking the loop is fine while the run ends)."""
        self._save_answers_now()
        self.calls.stop_handing_over()
        ends_at = time.monotonic() + TEARDOWN_S
        saving, workers = self._saving, self.workers
        if saving is not None and not completed:
            wait_for_futures([saving], timeout=TEARDOWN_S)
            workers.evaluation_abandoned = not saving.done()
        if saving is not None and not workers.evaluation_abandoned:
            count_cases(saving.result(), self.state, self.progress)
        while not workers.evaluation_abandoned:
            count_cases(self._save_batch().result(), self.state, None)
            if not self._finished or time.monotonic() > ends_at:
                break

    def _collect(self) -> None:
        if self._saving is not None and self._saving.done():
            self._saving_size = 0
            self._note_unjudged()
            count_cases(self._saving.result(), self.state, self.progress)
            self._saving = None

    def _saving_waiter(self) -> set[asyncio.Future]:
        """An asyncio future done with the batch being judged (empty set when none is)."""
        if self._saving is None:
            return set()
        if self._waiter is None or self._waiter[0] is not self._saving:
            waiter = asyncio.wrap_future(self._saving)
            # Its outcome is read from the batch's own future (``_collect``), not from this.
            waiter.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._waiter = (self._saving, waiter)
        return {self._waiter[1]}

    def _note_unjudged(self) -> None:
        self.state.unjudged = len(self._finished) + self._saving_size

    def _save_answers_now(self) -> None:
        answers = self.calls.take_answers()
        if answers:
            self.workers.store_answers(answers)

    def _save_batch(self) -> Future:
        self._save_answers_now()
        batch = self._finished[:BATCH_MOST]
        self._finished[:] = self._finished[BATCH_MOST:]
        self._saving_size = len(batch)
        return self.workers.save(batch)


def count_cases(cases: list[Case], state: Progress, progress: ProgressCallback | None) -> None:
    for case in cases:
        state.verdicts[case.verdict.value] += 1
    if progress and cases:
        progress(state)
