"""Send exported batch files to a server's Files + Batches API and bring the results back.

OpenAI's Batch API (and servers that copy it) takes a JSONL file of requests: upload it as a
file with purpose ``batch``, create a batch on ``/v1/chat/completions`` with a 24-hour window,
poll the batch until it ends, then download its output file (answered lines) and its error file
(lines that failed, or never ran because the batch expired or was cancelled). The downloaded
files are what ``batch import`` reads.

Every function takes and returns ``RemoteJob`` values (one per exported part) and accepts a
``save`` hook that is called whenever a job changes, so the caller can keep the jobs in its
store and pick them up again later (``batch status``). A failure that stops the whole exchange
(no Batch API on the server, a refused key, a server that stays unreachable) raises
``RemoteBatchError`` with a one-line message; a batch that fails, expires or is cancelled is
data: its status and errors are in the job. The API key is read from the endpoint's environment
variable when a client is made, and is never logged, stored or put in a message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import openai

from app.clients.endpoint_settings import resolve_api_key, validate_base_url
from core.records import Run
from core.types import Endpoint

log = logging.getLogger(__name__)

BATCH_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"  # the only window the Batch API offers
TERMINAL_STATES = frozenset({"completed", "failed", "expired", "cancelled"})
NO_BATCH_API = "this server does not offer the Batch API; export and run the file yourself"
# Backoff after a transient error (429, 5xx, connection): doubles up to this many seconds.
MAX_BACKOFF_S = 300.0
# Transient errors in a row for this long end a poll with a message (the jobs stay saved).
DEFAULT_PATIENCE_S = 900.0
SUBMIT_RETRIES = 3

T = TypeVar("T")
SaveJob = Callable[["RemoteJob"], None]


class RemoteBatchError(Exception):
    """The exchange with the server cannot go on; ``message`` says why in one line.

    ``jobs`` holds the jobs already submitted when it happened (they exist on the server)."""

    def __init__(self, message: str, jobs: Sequence[RemoteJob] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.jobs = list(jobs)


@dataclass(frozen=True)
class RequestCounts:
    """How many requests of a batch are answered, failed, and in all (the server's count)."""

    completed: int = 0
    failed: int = 0
    total: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"completed": self.completed, "failed": self.failed, "total": self.total}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RequestCounts:
        data = data or {}
        return cls(
            completed=int(data.get("completed") or 0),
            failed=int(data.get("failed") or 0),
            total=int(data.get("total") or 0),
        )


@dataclass(frozen=True)
class RemoteJob:
    """One exported part as a batch on the server."""

    part: int  # 1-based, in the order of the exported files
    remote_batch_id: str
    input_file_id: str
    status: str  # the server's batch status: validating, in_progress, …, completed
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: RequestCounts = field(default_factory=RequestCounts)
    stage: str = "calls"  # "calls", or "rewrites" for the first stage of LLM-prompted relations
    # The batch's own errors (why a batch failed), one line each; not per-request errors,
    # which are in the error file.
    errors: tuple[str, ...] = ()

    @property
    def terminal(self) -> bool:
        """The batch has ended (completed, failed, expired or cancelled): polling stops."""
        return self.status in TERMINAL_STATES

    @property
    def has_results(self) -> bool:
        """The server has written an output or error file to download."""
        return bool(self.output_file_id or self.error_file_id)

    def stored_fields(self) -> dict[str, Any]:
        """The columns a ``batch_jobs`` row keeps (for ``store.update_batch_job``)."""
        return {
            "stage": self.stage,
            "remote_batch_id": self.remote_batch_id,
            "input_file_id": self.input_file_id,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "status": self.status,
            "counts": self.counts.to_dict(),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> RemoteJob:
        """A job from a ``batch_jobs`` row as ``Store.batch_jobs`` hands it (``counts`` decoded)."""
        return cls(
            part=int(row["part"]),
            remote_batch_id=row["remote_batch_id"],
            input_file_id=row["input_file_id"],
            status=row.get("status") or "validating",
            output_file_id=row.get("output_file_id"),
            error_file_id=row.get("error_file_id"),
            counts=RequestCounts.from_dict(row.get("counts")),
            stage=row.get("stage") or "calls",
        )


# ---------------------------------------------------------------- the SDK, and its errors


def _client(endpoint: Endpoint, timeout_s: float = 120.0) -> openai.OpenAI:
    # Retries are ours (they know which calls are safe to repeat), hence max_retries=0.
    return openai.OpenAI(
        base_url=validate_base_url(endpoint.base_url),
        api_key=resolve_api_key(endpoint),
        timeout=timeout_s,
        max_retries=0,
    )


def _is_transient(exc: Exception) -> bool:
    """A failure worth trying again: the connection, a rate limit, a server error."""
    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return True
    return isinstance(exc, openai.APIStatusError) and (
        exc.status_code == 429 or exc.status_code >= 500
    )


def _describe(exc: Exception, endpoint: Endpoint, *, not_found: str) -> str:
    """A one-line message for a failed call (never the key: the SDK does not echo it)."""
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot reach {endpoint.base_url} ({type(exc).__name__})"
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if code in (404, 405):
            return not_found
        if code in (401, 403) and endpoint.api_key_env:
            return f"the server refused the API key ({code}); check ${endpoint.api_key_env}"
        if code in (401, 403):
            return f"the server wants an API key ({code}); give the endpoint its key variable"
        detail = _error_text(exc)
        return f"the server answered {code}" + (f": {detail}" if detail else "")
    return f"{type(exc).__name__}: {exc}"


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:200]
    return ""


def _require(result: Any, kind: type, jobs: Sequence[RemoteJob] = ()) -> Any:
    """The SDK hands back the raw text when a server answers HTML: not the Batch API."""
    if not isinstance(result, kind):
        raise RemoteBatchError(NO_BATCH_API, jobs)
    return result


def _retrying(
    call: Callable[[], T],
    endpoint: Endpoint,
    *,
    not_found: str,
    retry_if: Callable[[Exception], bool] = _is_transient,
    attempts: int = SUBMIT_RETRIES + 1,
    sleep: Callable[[float], None] = time.sleep,
    jobs: Sequence[RemoteJob] = (),
) -> T:
    """``call()``, tried again after transient failures with a doubling pause."""
    for attempt in range(attempts):
        try:
            return call()
        except openai.APIError as exc:
            message = _describe(exc, endpoint, not_found=not_found)
            if attempt + 1 >= attempts or not retry_if(exc):
                raise RemoteBatchError(message, jobs) from None
            log.info("%s; trying again", message)
            sleep(min(2.0**attempt, MAX_BACKOFF_S))
    raise AssertionError("unreachable")  # the loop returns or raises


def _job_from_batch(job: RemoteJob, batch: openai.types.Batch) -> RemoteJob:
    errors = ()
    if batch.errors and batch.errors.data:
        errors = tuple(
            " ".join(
                part
                for part in (
                    f"line {error.line}:" if error.line else "",
                    f"{error.code}:" if error.code else "",
                    error.message or "",
                )
                if part
            )
            for error in batch.errors.data
        )
    counts = batch.request_counts
    return replace(
        job,
        status=batch.status,
        output_file_id=batch.output_file_id,
        error_file_id=batch.error_file_id,
        counts=RequestCounts(counts.completed, counts.failed, counts.total)
        if counts
        else job.counts,
        errors=errors,
    )


# ---------------------------------------------------------------- submit, poll, download, cancel


def submit_parts(
    endpoint: Endpoint,
    files: Sequence[Path],
    *,
    stage: str = "calls",
    run_id: str | None = None,
    save: SaveJob | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[RemoteJob]:
    """Upload each part file and create one batch per part; the jobs, in the files' order.

    Raises ``RemoteBatchError`` when the server has no Batch API (404/405 on the upload), refuses
    the key, or stays unreachable; the error carries the jobs already created."""
    client = _client(endpoint)
    jobs: list[RemoteJob] = []
    for part, path in enumerate(files, start=1):

        def upload(path: Path = path) -> openai.types.FileObject:
            with path.open("rb") as handle:
                return client.files.create(file=(path.name, handle), purpose="batch")

        uploaded = _require(
            _retrying(upload, endpoint, not_found=NO_BATCH_API, sleep=sleep, jobs=jobs),
            openai.types.FileObject,
            jobs,
        )
        metadata = {"part": str(part), "stage": stage}
        if run_id:
            metadata["morphscope_run"] = run_id

        def create(file_id: str = uploaded.id, metadata: dict = metadata) -> openai.types.Batch:
            return client.batches.create(
                input_file_id=file_id,
                endpoint=BATCH_ENDPOINT,
                completion_window=COMPLETION_WINDOW,
                metadata=metadata,
            )

        # Only a 429 is retried here: after a 5xx or a dropped connection the batch may exist
        # already, and a second one would run (and be billed) twice.
        batch = _require(
            _retrying(
                create,
                endpoint,
                not_found=NO_BATCH_API,
                retry_if=lambda exc: isinstance(exc, openai.RateLimitError),
                sleep=sleep,
                jobs=jobs,
            ),
            openai.types.Batch,
            jobs,
        )
        job = _job_from_batch(
            RemoteJob(part, batch.id, uploaded.id, batch.status, stage=stage), batch
        )
        jobs.append(job)
        if save:
            save(job)
    return jobs


def poll(
    endpoint: Endpoint,
    jobs: Sequence[RemoteJob],
    *,
    on_progress: Callable[[RemoteJob], None] | None = None,
    interval_s: float = 30.0,
    timeout_s: float | None = None,
    save: SaveJob | None = None,
    on_retry: Callable[[str], None] | None = None,
    patience_s: float = DEFAULT_PATIENCE_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[RemoteJob]:
    """Ask the server about each unfinished job every ``interval_s`` until all have ended or
    ``timeout_s`` has passed (``None``: no limit; ``0``: one round); the jobs as they now are.

    ``on_progress`` and ``save`` get each job whose status or counts changed. A transient error
    (429, 5xx, connection) is told to ``on_retry`` (its message) and tried again after a
    doubling pause; after ``patience_s`` of nothing but such errors, or on any other error, it
    raises ``RemoteBatchError`` (every change seen so far has been saved)."""
    client = _client(endpoint)
    current = {job.part: job for job in jobs}
    deadline = None if timeout_s is None else clock() + timeout_s
    failures = 0
    failing_since: float | None = None
    while True:
        pause = interval_s
        for job in [job for job in current.values() if not job.terminal]:
            try:
                batch = _require(
                    client.batches.retrieve(job.remote_batch_id),
                    openai.types.Batch,
                    list(current.values()),
                )
            except openai.APIError as exc:
                message = _describe(
                    exc, endpoint, not_found=f"the server does not know batch {job.remote_batch_id}"
                )
                if not _is_transient(exc):
                    raise RemoteBatchError(message, list(current.values())) from None
                failing_since = clock() if failing_since is None else failing_since
                if clock() - failing_since >= patience_s:
                    raise RemoteBatchError(
                        f"{message}, for {patience_s:g} s; the batches stay on the server: "
                        "check them again later",
                        list(current.values()),
                    ) from None
                pause = min(max(interval_s, 1.0) * 2.0**failures, MAX_BACKOFF_S)
                failures += 1
                if on_retry:
                    on_retry(message)
                break
            failures, failing_since = 0, None
            updated = _job_from_batch(job, batch)
            if updated != job:
                current[job.part] = updated
                if save:
                    save(updated)
                if on_progress:
                    on_progress(updated)
        if all(job.terminal for job in current.values()):
            break
        if deadline is not None and clock() + pause >= deadline:
            break
        sleep(pause)
    return [current[job.part] for job in jobs]


def refresh(
    endpoint: Endpoint,
    jobs: Sequence[RemoteJob],
    *,
    save: SaveJob | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> list[RemoteJob]:
    """One round of ``poll``: the jobs as the server reports them now."""
    return poll(endpoint, jobs, timeout_s=0, save=save, on_retry=on_retry, interval_s=0)


def cancel(
    endpoint: Endpoint, jobs: Sequence[RemoteJob], *, save: SaveJob | None = None
) -> list[RemoteJob]:
    """Ask the server to cancel each unfinished job; the jobs as the server then reports them
    (``cancelling`` until a later poll shows ``cancelled`` with what had been answered)."""
    client = _client(endpoint)
    result = []
    for job in jobs:
        if not job.terminal:
            try:
                try:
                    batch = client.batches.cancel(job.remote_batch_id)
                except openai.ConflictError:  # it ended meanwhile: show how
                    batch = client.batches.retrieve(job.remote_batch_id)
            except openai.APIError as exc:
                message = _describe(exc, endpoint, not_found=NO_BATCH_API)
                raise RemoteBatchError(message, jobs) from None
            job = _job_from_batch(job, _require(batch, openai.types.Batch))
            if save:
                save(job)
        result.append(job)
    return result


def result_paths(job: RemoteJob, dest_dir: Path, prefix: str = "results") -> dict[str, Path]:
    """Where ``download_results`` puts a job's files: kind ("output"/"errors") → path."""
    stem = f"{prefix}-{job.stage}-{job.part:03d}"
    return {
        kind: dest_dir / f"{stem}-{kind}.jsonl"
        for kind, file_id in (("output", job.output_file_id), ("errors", job.error_file_id))
        if file_id
    }


def download_results(
    endpoint: Endpoint,
    jobs: Iterable[RemoteJob],
    dest_dir: Path,
    *,
    prefix: str = "results",
    sleep: Callable[[float], None] = time.sleep,
) -> list[Path]:
    """Download every output AND error file of the jobs into ``dest_dir``; the paths written.

    Expired and cancelled batches have files too (what was answered, and the lines that never
    ran): they are downloaded like those of a completed batch. A file is written under a
    temporary name and renamed when whole, so an interrupted download is never imported."""
    client = _client(endpoint)
    dest_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for job in jobs:
        file_ids = {"output": job.output_file_id, "errors": job.error_file_id}
        for kind, path in result_paths(job, dest_dir, prefix).items():
            file_id = file_ids[kind]
            partial = path.with_name(path.name + ".part")

            def fetch(file_id: str = file_id, partial: Path = partial) -> None:
                with (
                    client.files.with_streaming_response.content(file_id) as response,
                    partial.open("wb") as handle,
                ):
                    for chunk in response.iter_bytes():
                        handle.write(chunk)

            _retrying(
                fetch,
                endpoint,
                not_found=f"the server has no file {file_id} (batch {job.remote_batch_id})",
                sleep=sleep,
            )
            partial.replace(path)
            written.append(path)
    return written


# ---------------------------------------------------------------- keeping jobs in a store


def store_saver(store: Any, run_id: str) -> SaveJob:
    """A ``save`` hook that keeps jobs in the store's ``batch_jobs`` table: the first time a
    part is seen it is recorded, later changes update its row."""
    stored = store.batch_jobs(run_id)
    known = {row["part"] for row in stored}
    stages = {row["stage"] for row in stored}

    def save(job: RemoteJob) -> None:
        if stages and job.stage not in stages:
            # The run's next stage (its calls after its rewrites): the earlier stage's parts,
            # imported already, would otherwise mix with this one's under the same numbers.
            store.forget_batch_jobs(run_id)
            known.clear()
            stages.clear()
        stages.add(job.stage)
        if job.part not in known:
            store.record_batch_job(
                run_id,
                job.part,
                stage=job.stage,
                remote_batch_id=job.remote_batch_id,
                input_file_id=job.input_file_id,
                status=job.status,
            )
            known.add(job.part)
        # All fields, the ids included: a part submitted again gets a new batch.
        store.update_batch_job(run_id, job.part, **job.stored_fields())

    return save


def stored_jobs(store: Any, run_id: str) -> list[RemoteJob]:
    """The run's jobs as the store last saw them, in part order."""
    return sorted(
        (RemoteJob.from_row(row) for row in store.batch_jobs(run_id)), key=lambda job: job.part
    )


def endpoint_for_run(run: Run, stage: str = "calls") -> Endpoint:
    """The endpoint a run's batches go to: its model's, or for the rewrites stage, the
    transformation endpoint's (when it has one)."""
    config = run.config
    if stage == "rewrites" and config.get("transformation_endpoint"):
        return Endpoint.from_dict(config["transformation_endpoint"])
    return Endpoint.from_dict(config["endpoint"])
