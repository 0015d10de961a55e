"""Runs that live beyond a page: each run works in its own thread, registered here, and pages poll
it for progress and its summary.

Why a thread of its own: a Streamlit script is interrupted by every click (a rerun), but only
between two ``st`` calls, so a run executed inside the script thread kept sending until its next
progress update and was then torn down. Here the script thread only watches; Cancel sets the
run's event, which the runner checks between cases (every 0.2 s), and a page switch or a reload
leaves the run going.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from app.clients.limiter import LiveLoad
from app.engine.adaptive_run import AdaptiveRunner, AdaptiveSettings
from app.engine.progress import Progress, RunSummary
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.sampling import RunSampling, SampledCell
from core.tasks import Task
from core.types import Sample
from storage import Store

log = logging.getLogger(__name__)

RunnerFactory = Callable[[Store], Runner]


@dataclass(frozen=True)
class ProgressSnapshot:
    """A run's progress at one moment, copied out of the runner's thread."""

    done: int = 0
    total: int = 0
    calls_made: int = 0
    cache_hits: int = 0
    load: LiveLoad | None = None  # live concurrency and calls/s, where the client adapts
    # An adaptive run's cells after its last round: each interval narrowing, and which stopped.
    cells: tuple[SampledCell, ...] = ()

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0


@dataclass
class RunJob:
    """One run working in the background; its fields are written by the run's thread only."""

    id: str
    run_id: str
    db_path: str
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: ProgressSnapshot = field(default_factory=ProgressSnapshot)
    summary: RunSummary | None = None
    sampling: RunSampling | None = None  # how an adaptive run sampled its grid
    error: str = ""  # one line; the details are in the log
    started: float = field(default_factory=time.monotonic)
    thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    @property
    def cancel_requested(self) -> bool:
        return self.cancel.is_set()

    def request_cancel(self) -> None:
        """Stop sending: no new case starts after this; finished cases are kept."""
        self.cancel.set()

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the run to end; True when it has."""
        if self.thread is not None:
            self.thread.join(timeout_s)
        return not self.running


_jobs: dict[str, RunJob] = {}
_lock = threading.Lock()
_ids = itertools.count(1)


def start_run(
    db_path: str,
    config: RunConfig,
    task: Task,
    samples: Sequence[Sample],
    runner_factory: RunnerFactory,
    adaptive: AdaptiveSettings | None = None,
) -> RunJob:
    """Start a run in a thread of its own (with its own database connection) and register it.
    With ``adaptive`` settings it is sent in rounds (``AdaptiveRunner``)."""
    job = RunJob(id=f"job-{next(_ids)}", run_id=config.run_id(samples), db_path=db_path)

    def on_progress(progress: Progress) -> None:
        job.progress = ProgressSnapshot(
            progress.done,
            progress.total,
            progress.calls_made,
            progress.cache_hits,
            progress.load,
            job.progress.cells,
        )

    def on_round(cells: list[SampledCell]) -> None:
        job.progress = replace(job.progress, cells=tuple(cells))

    def work() -> None:
        store = Store(db_path)
        try:
            runner = runner_factory(store)
            if adaptive is None:
                job.summary = runner.run_sync(
                    config, task, list(samples), progress=on_progress, cancel=job.cancel
                )
                return
            outcome = AdaptiveRunner.of(runner).run_adaptive_sync(
                config, task, list(samples), adaptive, progress=on_progress,
                cancel=job.cancel, on_round=on_round,
            )  # fmt: skip
            job.summary, job.sampling = outcome.run, outcome.sampling
        except Exception as exc:  # shown on the page as one line; the traceback goes to the log
            log.exception("background run %s failed", job.run_id)
            job.error = " ".join(f"{type(exc).__name__}: {exc}".split())
        finally:
            store.close()

    job.thread = threading.Thread(target=work, name=f"morphscope-{job.id}", daemon=True)
    with _lock:
        _jobs[job.id] = job
    job.thread.start()
    return job


def get_job(job_id: str | None) -> RunJob | None:
    """A registered run by its job id (None for an unknown id)."""
    with _lock:
        return _jobs.get(job_id) if job_id else None


def forget(job_id: str) -> None:
    """Drop an ended run from the registry once its summary has been collected."""
    with _lock:
        job = _jobs.get(job_id)
        if job is not None and not job.running:
            del _jobs[job_id]


def active_job(db_path: str) -> RunJob | None:
    """The newest run still working on this database (e.g. started before a reload), or None."""
    with _lock:
        running = [job for job in _jobs.values() if job.db_path == db_path and job.running]
    return max(running, key=lambda job: job.started, default=None)
