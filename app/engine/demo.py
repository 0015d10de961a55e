"""The one-click demo: the embedded model over the built-in datasets with a sensible relation set.

Small on purpose (a few minutes on two CPU cores) so Analysis and Triage have real content fast.
Every piece is an ordinary run through the same runner, so it is cached and resumable.

The demo runs in a background thread owned by :data:`DEMO_JOBS`, a module-level registry (one
job per database), so it is not tied to one Streamlit script run: it survives page switches and
reruns, and any page can show its progress or stop it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine.embedder import default_embedder
from app.engine.progress import Progress, RunSummary
from app.engine.workspace import get_task, make_runner
from app.inputs.datasets import load_dataset
from core.run_config import RunConfig
from core.types import Endpoint
from storage import Store

log = logging.getLogger(__name__)

# The demo samples: repeated answers differ, so the noise floor (si.identity) has something to
# measure. Every place that shows the demo's results says so.
DEMO_TEMPERATURE = 0.7


@dataclass(frozen=True)
class DemoPart:
    title: str
    task_id: str
    dataset_id: str
    n_samples: int
    relation_ids: tuple[str, ...]
    repeats: int = 1
    max_tokens: int = 64

    @property
    def weight(self) -> int:
        """A size estimate (samples × relations × repeats) to weigh the overall progress."""
        return self.n_samples * len(self.relation_ids) * self.repeats


DEMO_PARTS = (
    DemoPart(
        "Sentiment labels",
        "sentiment",
        "sentiment",
        16,
        ("si.identity", "char.leet", "sentence.uppercase", "word.negation", "ad.distractor"),
        repeats=2,
        max_tokens=16,
    ),
    DemoPart(
        "Short-context QA",
        "qa",
        "qa",
        8,
        ("si.identity", "char.swap_neighbours", "ad.format", "si.business"),
        max_tokens=48,
    ),
    DemoPart(
        "Multi-step reasoning",
        "reasoning",
        "reasoning",
        4,
        ("si.identity", "si.academic", "rrb.word_reversal"),
        max_tokens=160,
    ),
)


def run_demo(
    store: Store,
    endpoint: Endpoint,
    progress: Callable[[str, Progress], None] | None = None,
    parts: tuple[DemoPart, ...] = DEMO_PARTS,
    cancel: threading.Event | None = None,
    embedder_factory: Callable | None = None,
    part_done: Callable[[RunSummary], None] | None = None,
) -> list[RunSummary]:
    """Run every demo part against ``endpoint`` (normally the embedded model).

    A set ``cancel`` event stops the running part (its run reads "cancelled") and skips the rest.
    """
    runner = make_runner(store, embedder_factory or default_embedder)
    summaries = []
    for part in parts:
        if cancel is not None and cancel.is_set():
            break
        task = get_task(store, part.task_id)
        samples = load_dataset(part.dataset_id)[: part.n_samples]
        config = RunConfig(
            endpoint=replace(
                endpoint, max_tokens=part.max_tokens, temperature=DEMO_TEMPERATURE, seed=None
            ),
            task_id=task.id,
            relation_ids=part.relation_ids,
            repeats=part.repeats,
            seed=0,
            dataset=part.dataset_id,
        )
        callback = (lambda p, title=part.title: progress(title, p)) if progress else None
        summary = runner.run_sync(config, task, samples, progress=callback, cancel=cancel)
        summaries.append(summary)
        if part_done is not None:
            part_done(summary)
    return summaries


class DemoState(StrEnum):
    IDLE = "idle"
    STARTING = "starting"  # waiting for the model
    RUNNING = "running"
    STOPPING = "stopping"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def active(self) -> bool:
        return self in (DemoState.STARTING, DemoState.RUNNING, DemoState.STOPPING)


@dataclass(frozen=True)
class DemoStatus:
    """A snapshot of the demo job for one database, safe to read from any thread."""

    state: DemoState = DemoState.IDLE
    fraction: float = 0.0  # overall, over all parts
    message: str = ""
    parts_done: int = 0  # changes whenever new runs are complete (pages refresh their data)
    runs: int = 0
    cases: int = 0

    @property
    def active(self) -> bool:
        return self.state.active


def embedded_endpoint(wait_s: float = 300.0) -> Endpoint:
    """The embedded model's live endpoint, starting it if needed; raises when it cannot start."""
    from app.engine.model_server import ServerState, get_server

    server = get_server()
    server.ensure_started()
    status = server.wait_ready(wait_s)
    if status.state is not ServerState.READY:
        raise RuntimeError(f"the embedded model is not available: {status.message}")
    return server.endpoint()


class DemoJob:
    """One background demo run over one database: a thread, a stop event and a status."""

    def __init__(
        self,
        db_path: str,
        endpoint_source: Callable[[], Endpoint],
        parts: tuple[DemoPart, ...] = DEMO_PARTS,
        embedder_factory: Callable | None = None,
    ) -> None:
        self.db_path = db_path
        self.parts = parts
        self._endpoint_source = endpoint_source
        self._embedder_factory = embedder_factory
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._status = DemoStatus(DemoState.STARTING, message="Starting the model…")
        self._thread = threading.Thread(target=self._run, name="morphscope-demo", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the demo to stop: the running part stops sending, the rest is skipped."""
        self._cancel.set()
        with self._lock:
            if self._status.active:
                self._status = replace(self._status, state=DemoState.STOPPING, message="Stopping…")

    def status(self) -> DemoStatus:
        with self._lock:
            return self._status

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _update(self, **changes) -> None:
        with self._lock:
            if self._status.state is DemoState.STOPPING and "state" not in changes:
                changes["message"] = "Stopping…"
            self._status = replace(self._status, **changes)

    def _run(self) -> None:
        total_weight = sum(part.weight for part in self.parts) or 1
        weights_before = {}
        running = 0
        for part in self.parts:
            weights_before[part.title] = running
            running += part.weight
        weight_of = {part.title: part.weight for part in self.parts}
        number_of = {part.title: index for index, part in enumerate(self.parts, start=1)}

        def on_progress(title: str, progress: Progress) -> None:
            part_fraction = progress.done / progress.total if progress.total else 0.0
            overall = (weights_before[title] + part_fraction * weight_of[title]) / total_weight
            self._update(
                fraction=min(1.0, overall),
                message=f"{overall:.0%} overall · part {number_of[title]} of {len(self.parts)}, "
                f"{title}: {progress.done}/{progress.total} cases",
            )

        def on_part_done(summary: RunSummary) -> None:
            with self._lock:
                self._status = replace(
                    self._status,
                    parts_done=self._status.parts_done + 1,
                    runs=self._status.runs + 1,
                    cases=self._status.cases + summary.cases,
                )

        store = None
        try:
            endpoint = self._endpoint_source()
            if not self._cancel.is_set():
                self._update(state=DemoState.RUNNING, message="Running…")
            store = Store(self.db_path)
            run_demo(
                store,
                endpoint,
                on_progress,
                parts=self.parts,
                cancel=self._cancel,
                embedder_factory=self._embedder_factory,
                part_done=on_part_done,
            )
        except Exception as exc:  # the thread must end with a status, never a silent death
            log.exception("the demo failed")
            self._update(state=DemoState.FAILED, message=f"The demo failed: {exc}")
            return
        finally:
            if store is not None:
                store.close()
        done = self.status()
        if self._cancel.is_set():
            self._update(
                state=DemoState.STOPPED,
                message=f"Demo stopped: {_count(done.runs, 'run')}, {_count(done.cases, 'case')} "
                "kept (run it again to resume; finished cases come from the cache).",
            )
        else:
            self._update(
                state=DemoState.FINISHED,
                fraction=1.0,
                message=f"Demo finished: {_count(done.runs, 'run')}, {_count(done.cases, 'case')}, "
                f"sampled at temperature {DEMO_TEMPERATURE:g}.",
            )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class DemoJobs:
    """The registry of demo jobs, one per database path; at most one runs per database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, DemoJob] = {}

    def start(
        self,
        db_path: str,
        endpoint_source: Callable[[], Endpoint] | None = None,
        parts: tuple[DemoPart, ...] | None = None,
        embedder_factory: Callable | None = None,
    ) -> DemoJob:
        """Start the demo on ``db_path`` unless it is running there already (then that job)."""
        with self._lock:
            job = self._jobs.get(str(db_path))
            if job is not None and job.status().active:
                return job
            job = DemoJob(
                str(db_path),
                endpoint_source or embedded_endpoint,
                parts or DEMO_PARTS,
                embedder_factory,
            )
            self._jobs[str(db_path)] = job
            job.start()
            return job

    def get(self, db_path: str) -> DemoJob | None:
        with self._lock:
            return self._jobs.get(str(db_path))

    def status(self, db_path: str) -> DemoStatus:
        job = self.get(db_path)
        return job.status() if job is not None else DemoStatus()

    def stop(self, db_path: str) -> None:
        job = self.get(db_path)
        if job is not None:
            job.stop()

    def wait(self, db_path: str, timeout_s: float = 60.0) -> DemoStatus:
        """Block until the job on ``db_path`` ends (tests, the CLI)."""
        job = self.get(db_path)
        if job is None:
            return DemoStatus()
        deadline = time.monotonic() + timeout_s
        job.join(max(0.0, deadline - time.monotonic()))
        return job.status()


# Module-level on purpose: a Streamlit script run ends, the demo thread must not.
DEMO_JOBS = DemoJobs()
