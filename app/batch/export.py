"""``batch export``: plan a run exactly as ``run`` would and write its unanswered calls as a
batch request file.

The plan is the runner's own (``Runner.plan_sync``): the same run id, follow-ups, validity gate,
case ids and call keys, so ``batch import`` later judges the very cases an online run would
make. Only calls the call cache cannot answer are written, one line per distinct call.
LLM-prompted relations need their rewrites before their follow-ups exist: while any rewrite is
unanswered, the export writes those rewrites instead (stage 1 of 2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.batch.formats import MAX_BYTES, MAX_LINES, PartWriter, request_line
from app.clients.base import RetryPolicy
from app.clients.batch import BatchClient
from app.engine.calls import case_calls
from app.engine.progress import RunSummary
from app.engine.runner import Runner
from core.engine_version import ENGINE_VERSION
from core.identity import call_key
from core.run_config import RunConfig
from core.tasks import Task
from core.types import BATCH_KIND, CallRequest, Endpoint, Sample
from storage import Store
from storage.batch_verbs import AWAITING_BATCH
from storage.run_verbs import RunDefinition

# The two stages of an export: the model's calls, or first the rewrites LLM-prompted relations
# need (their follow-ups are made from the answers).
CALLS = "calls"
REWRITES = "rewrites"

RunnerFactory = Callable[[Store], Runner]


class BatchExportError(ValueError):
    """Request files that could not be written; the message says why in one line, and nothing
    was stored (no run awaits a file that does not exist)."""


def default_runner(store: Store) -> Runner:
    """The runner a ``run`` would use (the workspace's embedder and custom relations)."""
    from app.engine import workspace  # looked up when called, so a replaced ``make_runner`` is used

    return workspace.make_runner(store)


def as_batch(config: RunConfig) -> RunConfig:
    """The config with its endpoints of kind ``batch`` (same run id: see ``RunConfig.run_id``),
    so a stored batch run is never sent online by accident. The embedded model keeps its kind:
    its calls are keyed by the kind, not by its changing port."""

    def batch(endpoint: Endpoint | None) -> Endpoint | None:
        if endpoint is None or endpoint.embedded:
            return endpoint
        return replace(endpoint, kind=BATCH_KIND)

    return replace(
        config,
        endpoint=batch(config.endpoint),
        transformation_endpoint=batch(config.transformation_endpoint),
    )


@dataclass
class BatchExport:
    """What an export did: the run, its stage, the files written and how many lines."""

    run_id: str
    stage: str  # CALLS or REWRITES
    files: list[Path]
    requests: int  # lines written
    cached: int  # distinct calls (or rewrites) the call cache already answers
    cases: int  # cases planned
    lines_per_file: list[int] = field(default_factory=list)
    # When nothing was left to ask, the run was judged from the call cache at once.
    summary: RunSummary | None = None

    def describe(self) -> list[str]:
        """Plain lines for the CLI."""
        lines = [f"run {self.run_id}: {self.cases} cases planned"]
        if self.stage == REWRITES:
            lines.append(
                "stage 1 of 2: these are the rewrites LLM-prompted relations need; import the "
                "results, then export again"
            )
        for path, count in zip(self.files, self.lines_per_file, strict=True):
            lines.append(f"wrote {count} requests to {path}")
        if not self.requests:
            lines.append(f"0 requests: all {self.cached} calls are answered already")
            if self.summary is not None:
                lines.append(f"run {self.run_id} judged from the call cache: {self.summary.status}")
        elif self.cached:
            lines.append(f"{self.cached} calls were answered already and are not written")
        return lines

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "stage": self.stage,
            "files": [str(path) for path in self.files],
            "lines_per_file": self.lines_per_file,
            "requests": self.requests,
            "cached": self.cached,
            "cases": self.cases,
            "status": self.summary.status if self.summary else AWAITING_BATCH,
        }


def export_batch(
    store: Store,
    config: RunConfig,
    task: Task,
    samples: Sequence[Sample],
    out: Path,
    *,
    runner_factory: RunnerFactory = default_runner,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
) -> BatchExport:
    """Plan ``config`` over ``samples``, store it as a run awaiting batch results, and write one
    request line per distinct call not in the call cache to ``out`` (numbered parts past the
    limits). With nothing left to ask, the run is judged from the cache instead.

    The files are written before anything is stored: when they cannot be (a read-only folder),
    ``BatchExportError`` says why, no part is left behind, and the database is unchanged.
    """
    config = as_batch(config)
    clients: list[BatchClient] = []

    def batch_clients(endpoint: Endpoint, retry: RetryPolicy | None = None) -> BatchClient:
        client = BatchClient(endpoint)
        clients.append(client)
        return client

    runner = runner_factory(store)
    runner.client_factory = batch_clients
    plan = runner.plan_sync(config, task, samples)
    unanswered_rewrites = [
        (messages, params)
        for client in clients
        for messages, params in zip(client.unanswered, client.unanswered_params, strict=True)
    ]
    if unanswered_rewrites:
        stage = REWRITES
        requests = _rewrite_requests(config, unanswered_rewrites)
    else:
        stage = CALLS
        requests = _call_requests(config.endpoint, task, plan.cases)
    cached = store.cached_call_keys(requests)
    todo = [request for key, request in requests.items() if key not in cached]
    export = BatchExport(plan.run_id, stage, [], len(todo), len(cached), len(plan.cases))
    if todo:
        export.files, export.lines_per_file = _write_requests(
            Path(out), todo, max_lines=max_lines, max_bytes=max_bytes
        )
    try:
        _store_export(store, config, task, samples, plan, stage, todo)
    except BaseException:
        for path in export.files:  # no file without the run that says what it asks
            path.unlink(missing_ok=True)
        raise
    if not todo and stage == CALLS:
        export.summary = judge_from_cache(store, plan.run_id, runner_factory)
    return export


def _store_export(
    store: Store,
    config: RunConfig,
    task: Task,
    samples: Sequence[Sample],
    plan,
    stage: str,
    todo: list[CallRequest],
) -> None:
    """Store the run, and (with requests written) its requests and the ``awaiting_batch``
    state."""
    # A stored run keeps its engine stamp: judging it (the import) decides whether to repair it.
    stamp = None if store.run(plan.run_id) is not None else ENGINE_VERSION
    store.save_run(
        RunDefinition(
            plan.run_id,
            endpoint=config.endpoint,
            task_id=task.id,
            config=config.to_dict(),
            samples=list(samples),
            dataset=config.dataset,
        ),
        n_planned=len(plan.cases),
        engine_version=stamp,
    )
    if not todo and stage == CALLS:
        return
    store.record_batch_requests(plan.run_id, stage, todo)
    store.set_run_status(plan.run_id, AWAITING_BATCH)


def _write_requests(
    out: Path, todo: Sequence[CallRequest], *, max_lines: int, max_bytes: int
) -> tuple[list[Path], list[int]]:
    """Write the request lines (numbered parts past the limits); on failure no part is left
    and ``BatchExportError`` names the cause ("permission denied" for a read-only folder)."""
    try:
        with PartWriter(out, max_lines=max_lines, max_bytes=max_bytes) as writer:
            for request in todo:
                writer.write(
                    request_line(request.key, request.model, request.messages, request.params)
                )
    except OSError as exc:
        if isinstance(exc, PermissionError):
            reason = f"permission denied (is {out.parent} read-only?)"
        elif isinstance(exc, FileNotFoundError):
            reason = f"no folder {out.parent}"
        else:
            reason = (exc.strerror or str(exc)).lower()
        raise BatchExportError(f"cannot write {out}: {reason}; nothing was stored") from None
    return list(writer.parts), list(writer.lines_per_part)


def _call_requests(endpoint: Endpoint, task: Task, cases) -> dict[str, CallRequest]:
    """The distinct calls of the planned cases that have a follow-up to send."""
    params = endpoint.sampling_params()
    base_url = endpoint.cache_base_url
    requests: dict[str, CallRequest] = {}
    # Every relation's case of a sample asks for the same source call: its key (a hash of the
    # call as JSON) is computed once.
    keys: dict[tuple, str] = {}
    for case in cases:
        if case.followup is None or case.skip_reason or case.error:
            continue
        for messages, repeat in case_calls(task, case).values():
            call = (repeat, *(tuple(message.items()) for message in messages))
            key = keys.get(call)
            if key is None:
                key = keys[call] = call_key(base_url, endpoint.model, params, messages, repeat)
            if key not in requests:
                requests[key] = CallRequest(key, base_url, endpoint.model, params, messages, repeat)
    return requests


def _rewrite_requests(
    config: RunConfig, unanswered: list[tuple[list[dict], dict]]
) -> dict[str, CallRequest]:
    """The rewrites the planner asked for and the cache could not answer (its keys: the
    transformation endpoint's, with each rewrite candidate's parameters, as ``CallCache`` makes
    them)."""
    endpoint = config.transformation_endpoint or config.endpoint
    requests: dict[str, CallRequest] = {}
    for messages, params in unanswered:
        key = call_key(endpoint.cache_base_url, endpoint.model, params, messages, 0)
        requests.setdefault(
            key, CallRequest(key, endpoint.cache_base_url, endpoint.model, params, messages, 0)
        )
    return requests


def judge_from_cache(
    store: Store,
    run_id: str,
    runner_factory: RunnerFactory = default_runner,
    errors: dict[str, str] | None = None,
) -> RunSummary:
    """Run a stored run again with clients that never send: every case is judged from the call
    cache by the runner's own code; a call with no answer becomes an ERROR case ("not answered
    in the batch results yet", or the error its result line gave, by ``request_identity``)."""
    from app.engine.workspace import get_task

    stored = store.run(run_id)
    if stored is None:
        raise ValueError(f"no run {run_id!r} in this database")
    config = RunConfig.from_dict(stored.config)
    samples = store.run_samples(run_id)
    task = get_task(store, config.task_id)
    runner = runner_factory(store)
    runner.client_factory = lambda endpoint, retry=None: BatchClient(endpoint, errors)
    return runner.run_sync(config, task, samples)
