"""`run` (relations over inputs against an endpoint, with a progress bar) and `delete-run`."""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.common import DB_HELP, EXIT_STOPPED, CliError, log, open_store
from app.cli.plan import (
    RETRIES_DEFAULT,
    add_plan_options,
    check_key_is_set,
    check_run_options,
    run_config_from_args,
)
from core.sampling import finished
from core.types import Endpoint


class StderrProgress:
    """A one-line progress bar on stderr."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet or not sys.stderr

    def __call__(self, progress) -> None:
        if self.quiet or not progress.total:
            return
        width = 30
        filled = int(width * progress.done / progress.total)
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(
            f"\r[{bar}] {progress.done}/{progress.total} cases · {progress.calls_made} calls · "
            f"{progress.cache_hits} cached{_load_text(progress)}{_judging_text(progress)}"
        )
        sys.stderr.flush()
        # The line ends once every case is answered and judged (judging may trail the calls).
        if progress.done >= progress.total and not getattr(progress, "unjudged", 0):
            sys.stderr.write("\n")


def _load_text(progress) -> str:
    """`` · concurrency 8/24 · 75.2 calls/s`` while an adaptive client reports its load."""
    load = getattr(progress, "load", None)
    return f" · {load.describe()}" if load is not None else ""


def _judging_text(progress) -> str:
    judging = getattr(progress, "judging_text", None)
    return judging() if judging is not None else ""


# Exit codes of `run`: 0 every case settled, 1 stopped early (resumable), 2 bad input or an
# endpoint that failed its pre-flight check, 3 finished with ERROR cases (a rerun retries them).
EXIT_ERRORS = 3


def start_embedder():
    """The embedder a run evaluates with, already loading: the model takes seconds to load in a
    process of its own, so it starts before anything else and its load overlaps reading the
    inputs, the pre-flight check, planning and the calls (not only the calls)."""
    from app.engine import workspace

    embedder = workspace.default_embedder()
    load = getattr(embedder, "load", None)
    if load is not None:
        try:
            load()
        except Exception:  # the run's first embedding tries again and reports the failure
            log.warning("could not start the embedding model", exc_info=True)
    return embedder


def stop_embedder(embedder) -> None:
    """End the embedder's process when the command is done with it (a rerun that embeds nothing
    must not leave a model loading behind it, nor wait for that load)."""
    stop = getattr(embedder, "stop", None)
    if stop is not None:
        stop()


def cmd_run(args: argparse.Namespace) -> int:
    check_run_options(args)
    if not args.dry_run:  # a preview sends nothing, so it needs no key
        check_key_is_set(args, args.endpoint, args.transformation_endpoint)
    embedder = start_embedder()
    try:
        return _dry_run(args, embedder) if args.dry_run else _run_command(args)
    finally:
        stop_embedder(embedder)


def _dry_run(args: argparse.Namespace, embedder) -> int:
    """The cost preview: what the run would send, from a store only read (or none at all)."""
    from pathlib import Path

    from storage import Store, StoreOpenError, default_db_path

    db_path = Path(args.db) if args.db else default_db_path()
    try:
        # No database yet: nothing is cached, and a preview must not create one.
        store = Store(db_path, read_only=True) if db_path.exists() else Store(":memory:")
    except StoreOpenError as exc:
        raise CliError(str(exc)) from None
    config, task, samples = run_config_from_args(args, store)
    preview = _preview(args, store, embedder, config, task, samples)
    if args.json:
        print(json.dumps(preview.to_dict(), indent=2))
    else:
        print("\n".join(preview.lines()))
    return 0


def _preview(args: argparse.Namespace, store, embedder, config, task, samples):
    """What the run would send (app/engine/preview.py); the store is only read."""
    from app.engine.preview import preview_run
    from app.engine.workspace import custom_relations

    return preview_run(
        store,
        embedder,
        config,
        task,
        samples,
        custom_relations=custom_relations(store),
        price_in=args.price_in,
        price_out=args.price_out,
        precision=args.precision,
        round_size=args.round_size,
    )


def _run_command(args: argparse.Namespace) -> int:
    from app.engine.run_setup import endpoint_problem
    from app.engine.workspace import make_runner

    store = open_store(args.db)
    config, task, samples = run_config_from_args(args, store)
    problem = endpoint_problem(config)
    if problem:
        raise CliError(f"{problem}; nothing was run")
    preview = None
    if args.compare_preview:  # made before anything is sent, from the same plan
        from app.engine import workspace

        preview = _preview(args, store, workspace.default_embedder(), config, task, samples)
        if not args.json:
            print("\n".join(preview.lines()[1:]), file=sys.stderr)
    if args.precision is not None or args.budget is not None:
        return _adaptive_run(args, store, config, task, samples, preview)
    runner = make_runner(store)  # with the default embedder, the one loading since the start
    runner.stall_after_s = args.stall_minutes * 60
    summary = runner.run_sync(config, task, samples, progress=StderrProgress(args.quiet))
    return _report_summary(args, summary, preview)


def _adaptive_run(args: argparse.Namespace, store, config, task, samples, preview=None) -> int:
    """`--precision`/`--budget`: the same run sent in rounds (app/engine/adaptive_run.py)."""
    from app.engine import workspace
    from app.engine.adaptive_run import AdaptiveRunner, AdaptiveSettings
    from app.engine.embedder import EmbeddingCache

    runner = AdaptiveRunner(
        store,
        EmbeddingCache(workspace.default_embedder(), store),
        custom_relations=workspace.custom_relations(store),
        stall_after_s=args.stall_minutes * 60,
    )
    settings = AdaptiveSettings(args.precision, args.budget, args.round_size)
    adaptive = runner.run_adaptive_sync(
        config, task, samples, settings, progress=StderrProgress(True)
    )
    if adaptive.run.error_line():
        print(
            f"warning: {adaptive.run.error_line()}; run the same command to retry them",
            file=sys.stderr,
        )
    if args.json:
        document = adaptive.to_dict()
        if preview is not None:
            document["preview"] = preview.to_dict()
        print(json.dumps(document, indent=2))
        return _exit_code(adaptive.run)
    sampling = adaptive.sampling
    print(
        f"run {adaptive.run.run_id}: {adaptive.run.status}; {sampling.calls_used} calls used of "
        f"the full grid's {sampling.full_grid_calls}, {sampling.calls_saved} saved "
        f"({sampling.calls_sent} sent, {sampling.cache_hits} from the cache)"
    )
    for cell in sampling.cells:
        stopped = "stopped at its precision" if cell.stopped else "not at its precision"
        print(
            f"  {cell.relation}: {cell.violations}/{cell.inputs} = {cell.rate or 0.0:.3f}, "
            f"confidence sequence [{cell.low:.3f}, {cell.high:.3f}] (±{cell.half_width:.3f}), "
            f"{stopped}"
        )
    if preview is not None:
        from app.engine.preview import comparison_line

        print(comparison_line(preview, adaptive.run))
    return _exit_code(adaptive.run)


def _exit_code(summary) -> int:
    if not finished(summary.status):  # an adaptive stop is a finished run, not a stopped one
        return EXIT_STOPPED
    return EXIT_ERRORS if summary.errors else 0


def _report_summary(args: argparse.Namespace, summary, preview=None) -> int:
    # The error line comes first: a run whose every case failed must not look like a result.
    if summary.error_line():
        print(
            f"warning: {summary.error_line()}; run the same command to retry them", file=sys.stderr
        )
    if summary.stop_reason:
        print(f"warning: {summary.stop_reason}", file=sys.stderr)
    if args.json:
        document = summary.to_dict()
        if preview is not None:
            document["preview"] = preview.to_dict()
        print(json.dumps(document, indent=2))
    else:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.verdicts.items()))
        retried = f", {summary.retried_errors} errored re-sent" if summary.retried_errors else ""
        print(
            f"run {summary.run_id}: {summary.cases} cases ({counts}); "
            f"{summary.calls_made} calls, {summary.cache_hits} cache hits{retried}, "
            f"{summary.elapsed_s:.1f} s"
        )
        if preview is not None:
            from app.engine.preview import comparison_line

            print(comparison_line(preview, summary))
    return _exit_code(summary)


def cmd_delete_run(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    if store.run(args.run_id) is None:
        raise CliError(f"no run {args.run_id!r} in {args.db}")
    n_cases = store.delete_run(args.run_id)
    print(f"deleted run {args.run_id} and its {n_cases} cases (with their labels)")
    return 0


def run_argument_problem(args: argparse.Namespace) -> str | None:
    """The first number of a `run` that no run could use (argparse took it), or None."""
    if args.repeats < 1:
        return "--repeats must be at least 1"
    if args.concurrency < 1:
        return "--concurrency must be at least 1"
    for flag in ("rpm", "tpm"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            return f"--{flag} must be at least 1"
    if args.retries < 0:
        return "--retries must be 0 or more"
    if args.timeout is not None and not 0 < args.timeout <= 3600:
        return "--timeout must be between 0 and 3600 seconds"
    if not 0 < args.stall_minutes <= 24 * 60:
        return "--stall-minutes must be more than 0"
    if args.precision is not None and not 0 < args.precision < 0.5:
        return "--precision must be a half-width between 0 and 0.5 (e.g. 0.05 for ±5%)"
    if args.budget is not None and args.budget < 1:
        return "--budget must be at least 1 call"
    if args.round_size < 1:
        return "--round-size must be at least 1"
    for flag in ("price_in", "price_out"):
        price = getattr(args, flag)
        if price is not None and not 0 <= price < 1e6:
            return (
                f"--{flag.replace('_', '-')} must be a price in USD per million tokens, 0 or more"
            )
    return None


def add_commands(sub) -> None:
    """`run` and `delete-run`."""
    p = sub.add_parser("run", help="run relations over inputs against an endpoint")
    add_plan_options(p, endpoint_help="base URL, or 'embedded' for the local model")
    p.add_argument(
        "--concurrency",
        type=int,
        default=Endpoint.concurrency,
        help=f"calls in flight at once (default {Endpoint.concurrency}; adapts to 429/503)",
    )
    p.add_argument(
        "--timeout", type=float, help="seconds one attempt of a call may take (default 60)"
    )
    p.add_argument(
        "--retries",
        type=int,
        default=RETRIES_DEFAULT,
        help=f"retries of a failed call (default {RETRIES_DEFAULT}); "
        "all attempts of one call together stop after 120 s or one --timeout",
    )
    p.add_argument(
        "--rpm", type=int, help="requests per minute the endpoint allows (calls are paced)"
    )
    p.add_argument(
        "--tpm",
        type=int,
        help="tokens per minute the endpoint allows (a call counts its prompt and max tokens)",
    )
    p.add_argument(
        "--stall-minutes",
        type=float,
        default=5.0,
        help="stop the run (resumable) when no case finished for this long (default 5)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing, write nothing: print the planned calls, the calls already cached, "
        "the tokens and the cost",
    )
    p.add_argument(
        "--precision",
        type=float,
        help="stop each relation once its anytime-valid 95%% interval is within ± this "
        "(e.g. 0.05); inputs are sent in rounds, in a seeded random order",
    )
    p.add_argument(
        "--budget",
        type=int,
        help="send at most this many calls to the model, widest intervals first",
    )
    p.add_argument(
        "--round-size",
        type=int,
        default=20,
        help="inputs per relation per round with --precision/--budget (default 20)",
    )
    p.add_argument(
        "--compare-preview",
        action="store_true",
        help="state the --dry-run preview before sending, and after the run compare the calls "
        "and tokens used with it",
    )
    p.add_argument("--price-in", type=float, help="USD per million prompt tokens (for the preview)")
    p.add_argument(
        "--price-out", type=float, help="USD per million completion tokens (for the preview)"
    )
    p.set_defaults(func=cmd_run, argument_problem=run_argument_problem)

    p = sub.add_parser("delete-run", help="delete a run with its cases and their labels")
    p.add_argument("run_id", help="the run to delete")
    p.add_argument("--db", required=True, help=DB_HELP)
    p.set_defaults(func=cmd_delete_run)
