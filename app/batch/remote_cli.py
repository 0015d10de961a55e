"""The command-line side of ``batch export --submit`` and ``batch status RUN_ID``.

``batch export --submit`` hands the exported part files to the endpoint's Files + Batches API,
polls with a progress line per change, downloads the output and error files and imports them.
``batch status RUN_ID`` shows the run's batches as the server reports them now; ``--wait``
polls until they end and imports the results (the way back after a submit that stopped
waiting), ``--cancel`` cancels them. The functions here return lines of text or hand them to an
``on_line`` callable; the CLI prints them.

Exit codes: 0 all batches completed and imported; 1 a batch failed, expired or was cancelled,
or the server could not be used (the message says which); 3 batches still running (check again
with ``batch status``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the SDK behind app.batch.remote takes 0.5 s to import: only when used
    from app.batch.remote import RemoteJob
    from core.types import Endpoint

EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_RUNNING = 3
DEFAULT_POLL_INTERVAL_S = 30.0

ImportResults = Callable[[list[Path]], Any]
OnLine = Callable[[str], None]


@dataclass
class RemoteOutcome:
    """What a submit or a status check came to: the jobs, the files downloaded, what
    ``import_results`` returned (None when nothing was imported), the lines said, the exit code."""

    jobs: list[RemoteJob]
    result_files: list[Path] = field(default_factory=list)
    imported: Any = None
    lines: list[str] = field(default_factory=list)
    exit_code: int = EXIT_DONE


# ---------------------------------------------------------------- argparse


def configure_remote_batch(
    parser_status: argparse.ArgumentParser, parser_export: argparse.ArgumentParser
) -> None:
    """Add ``--submit`` and its options to ``batch export``, and the arguments of
    ``batch status RUN_ID`` to its parser (``--db`` only where the parser lacks one)."""
    parser_export.add_argument(
        "--submit",
        action="store_true",
        help="upload the exported files to the endpoint's Batch API (Files + Batches), "
        "wait for the results and import them",
    )
    _add_polling_options(parser_export)
    parser_status.add_argument("run_id", help="the run whose batches to show")
    parser_status.add_argument(
        "--wait",
        action="store_true",
        help="poll until the batches end, then download and import their results",
    )
    parser_status.add_argument(
        "--cancel", action="store_true", help="cancel the run's unfinished batches"
    )
    _add_polling_options(parser_status)
    parser_status.add_argument("--json", action="store_true", help="print the jobs as JSON")
    if "--db" not in parser_status._option_string_actions:
        parser_status.add_argument(
            "--db", help="the SQLite database (default: $MORPHSCOPE_DB, else data/morphscope.db)"
        )


def _add_polling_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=DEFAULT_POLL_INTERVAL_S,
        metavar="SECONDS",
        help=f"how often to ask the server about the batches (default {DEFAULT_POLL_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--poll-timeout",
        type=float,
        metavar="SECONDS",
        help="stop waiting after this long; the batches go on (see `batch status`)",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        help="where to download the result files (default: a folder next to the database)",
    )


def default_results_dir(db_path: str | Path | None, run_id: str) -> Path:
    """Where results are downloaded unless ``--results-dir`` says: beside the database."""
    base = Path(db_path).parent if db_path else Path.cwd()
    return base / "batch-results" / run_id[:16]


# ---------------------------------------------------------------- lines


def progress_line(job: RemoteJob, parts: int) -> str:
    """One line for a job's state, e.g. ``part 1/2 (batch_abc): in_progress, 3 of 10 answered``."""
    counts = job.counts
    line = f"part {job.part}/{parts} ({job.remote_batch_id}): {job.status}"
    if counts.total:
        line += f", {counts.completed} of {counts.total} answered"
        if counts.failed:
            line += f", {counts.failed} failed"
    return line


def status_lines(
    jobs: Sequence[RemoteJob], run_id: str | None = None, run_status: str | None = None
) -> list[str]:
    """The jobs as lines: one per part, the batch's own errors under it, then a summary and
    what to do next (nothing once the run is judged: ``run_status`` ``done``)."""
    if not jobs:
        return ["no batches were submitted for this run (`batch export --submit` sends them)"]
    parts = max(job.part for job in jobs)
    lines: list[str] = []
    for job in jobs:
        lines.append(progress_line(job, parts))
        lines += [f"  error: {error}" for error in job.errors]
    by_status: dict[str, int] = {}
    for job in jobs:
        by_status[job.status] = by_status.get(job.status, 0) + 1
    summary = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    lines.append(f"{len(jobs)} batch{'es' if len(jobs) != 1 else ''}: {summary}")
    if run_id and not all(job.terminal for job in jobs):
        lines.append(f"wait for them and import: morphscope batch status {run_id} --wait")
    elif run_id and run_status != "done" and any(job.has_results for job in jobs):
        lines.append(f"download and import the results: morphscope batch status {run_id} --wait")
    return lines


def status_dict(jobs: Sequence[RemoteJob]) -> list[dict[str, Any]]:
    """The jobs as JSON-ready dicts (``--json``)."""
    return [{"part": job.part, **job.stored_fields(), "errors": list(job.errors)} for job in jobs]


# ---------------------------------------------------------------- submit, wait, import


def submit_and_import(
    endpoint: Endpoint,
    files: Sequence[Path],
    *,
    import_results: ImportResults,
    results_dir: Path,
    run_id: str | None = None,
    stage: str = "calls",
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
    timeout_s: float | None = None,
    save: Callable[[RemoteJob], None] | None = None,
    on_line: OnLine | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> RemoteOutcome:
    """Submit the exported part files, poll with progress lines, download the output and
    error files, and hand them to ``import_results``."""
    from app.batch.remote import RemoteBatchError, submit_parts

    outcome = RemoteOutcome(jobs=[])
    say = _sayer(outcome, on_line)
    files = [path for path in files if path.stat().st_size > 0]  # the API refuses empty files
    if not files:
        say("nothing to submit: the export wrote no requests")
        return outcome
    try:
        jobs = submit_parts(endpoint, files, stage=stage, run_id=run_id, save=save, sleep=sleep)
    except RemoteBatchError as error:
        outcome.jobs = error.jobs
        say(f"error: {error.message}")
        if error.jobs and run_id:
            say(f"submitted before that: {len(error.jobs)} part(s); see batch status {run_id}")
        outcome.exit_code = EXIT_FAILED
        return outcome
    for job, path in zip(jobs, files, strict=True):
        say(f"part {job.part}/{len(jobs)}: {path.name} submitted as batch {job.remote_batch_id}")
    return wait_and_import(
        endpoint,
        jobs,
        import_results=import_results,
        results_dir=results_dir,
        run_id=run_id,
        poll_interval_s=poll_interval_s,
        timeout_s=timeout_s,
        save=save,
        on_line=on_line,
        sleep=sleep,
        clock=clock,
        outcome=outcome,
    )


def wait_and_import(
    endpoint: Endpoint,
    jobs: Sequence[RemoteJob],
    *,
    import_results: ImportResults,
    results_dir: Path,
    run_id: str | None = None,
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
    timeout_s: float | None = None,
    save: Callable[[RemoteJob], None] | None = None,
    on_line: OnLine | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    outcome: RemoteOutcome | None = None,
) -> RemoteOutcome:
    """Poll the jobs until they end (or ``timeout_s``), then download and import their results.

    Batches that failed, expired or were cancelled are listed with their errors; the results
    they have (expired and cancelled batches keep what was answered) are imported all the same,
    and the exit code is 1."""
    from app.batch.remote import RemoteBatchError, download_results, poll

    outcome = outcome or RemoteOutcome(jobs=list(jobs))
    say = _sayer(outcome, on_line)
    parts = max((job.part for job in jobs), default=0)
    try:
        jobs = poll(
            endpoint,
            jobs,
            on_progress=lambda job: say(progress_line(job, parts)),
            on_retry=lambda message: say(f"{message}; trying again"),
            interval_s=poll_interval_s,
            timeout_s=timeout_s,
            save=save,
            sleep=sleep,
            clock=clock,
        )
    except RemoteBatchError as error:
        outcome.jobs = error.jobs or list(jobs)
        say(f"error: {error.message}")
        outcome.exit_code = EXIT_FAILED
        return outcome
    outcome.jobs = list(jobs)
    running = [job for job in jobs if not job.terminal]
    if running:
        later = f"morphscope batch status {run_id} --wait" if run_id else "batch status"
        say(f"{len(running)} of {len(jobs)} batches still running; check again later: {later}")
        outcome.exit_code = EXIT_RUNNING
        return outcome
    ended_badly = [job for job in jobs if job.status != "completed"]
    for job in ended_badly:
        say(f"part {job.part}: the batch {job.status}")
        for error in job.errors:
            say(f"  error: {error}")
    try:
        outcome.result_files = download_results(
            endpoint, [job for job in jobs if job.has_results], results_dir, sleep=sleep
        )
    except RemoteBatchError as error:
        say(f"error: {error.message}")
        outcome.exit_code = EXIT_FAILED
        return outcome
    if outcome.result_files:
        say(f"downloaded {len(outcome.result_files)} result file(s) to {results_dir}")
        outcome.imported = import_results(outcome.result_files)
    else:
        say("the server returned no results to import")
    outcome.exit_code = EXIT_FAILED if ended_badly else EXIT_DONE
    return outcome


def _sayer(outcome: RemoteOutcome, on_line: OnLine | None) -> OnLine:
    def say(line: str) -> None:
        outcome.lines.append(line)
        if on_line:
            on_line(line)

    return say


# ---------------------------------------------------------------- the two commands


def submit_export(
    args: argparse.Namespace,
    export: Any,
    *,
    store: Any,
    import_results: ImportResults,
    on_line: OnLine,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """``batch export --submit``, after the export wrote ``export.files`` for ``export.run_id``
    (stage ``export.stage``): submit them to the run's endpoint and import the results."""
    from app.batch.remote import endpoint_for_run, store_saver

    run = store.run(export.run_id)
    endpoint = endpoint_for_run(run, export.stage)
    results_dir = args.results_dir or default_results_dir(args.db, export.run_id)
    outcome = submit_and_import(
        endpoint,
        [Path(path) for path in export.files],
        import_results=import_results,
        results_dir=results_dir,
        run_id=export.run_id,
        stage=export.stage,
        poll_interval_s=args.poll_interval,
        timeout_s=args.poll_timeout,
        save=store_saver(store, export.run_id),
        on_line=on_line,
        sleep=sleep,
    )
    return outcome.exit_code


def batch_status_command(
    args: argparse.Namespace,
    *,
    store: Any,
    import_results: ImportResults,
    on_line: OnLine,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """``batch status RUN_ID [--wait] [--cancel] [--json]``: the run's batches as the server
    reports them now (the stored state when it cannot be reached)."""
    from app.batch.remote import (
        RemoteBatchError,
        cancel,
        endpoint_for_run,
        refresh,
        store_saver,
        stored_jobs,
    )

    run = store.run(args.run_id)
    if run is None:
        on_line(f"error: no run {args.run_id} in this database")
        return 2
    jobs = stored_jobs(store, args.run_id)
    if not jobs:
        for line in status_lines(jobs):
            on_line(line)
        return EXIT_DONE
    endpoint = endpoint_for_run(run, jobs[0].stage)
    save = store_saver(store, args.run_id)
    quiet = args.json  # JSON alone on stdout
    say: OnLine = (lambda line: None) if quiet else on_line
    exit_code = EXIT_DONE
    try:
        if args.cancel:
            jobs = cancel(endpoint, jobs, save=save)
    except RemoteBatchError as error:
        say(f"error: {error.message}")
        exit_code = EXIT_FAILED
    if args.wait and exit_code == EXIT_DONE:
        outcome = wait_and_import(
            endpoint,
            jobs,
            import_results=import_results,
            results_dir=args.results_dir or default_results_dir(args.db, args.run_id),
            run_id=args.run_id,
            poll_interval_s=args.poll_interval,
            timeout_s=args.poll_timeout,
            save=save,
            on_line=say,
            sleep=sleep,
        )
        jobs, exit_code = outcome.jobs, outcome.exit_code
    elif exit_code == EXIT_DONE:
        try:
            jobs = refresh(
                endpoint,
                jobs,
                save=save,
                on_retry=lambda message: say(f"{message}; showing the stored status"),
            )
        except RemoteBatchError as error:
            say(f"error: {error.message}; showing the stored status")
        if not quiet:
            for line in status_lines(jobs, args.run_id, run.status):
                on_line(line)
        exit_code = EXIT_DONE if all(job.terminal for job in jobs) else EXIT_RUNNING
    if quiet:
        on_line(json.dumps({"run_id": args.run_id, "jobs": status_dict(jobs)}, indent=2))
    return exit_code
