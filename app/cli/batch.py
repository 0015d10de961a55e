"""`batch export`, `batch import` and `batch status`: a run answered through batch files."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from app.cli.common import DB_HELP, JSON_HELP, CliError, open_store
from app.cli.plan import (
    RETRIES_DEFAULT,
    add_plan_options,
    check_key_is_set,
    check_run_options,
    endpoint_from_args,
    run_config_from_args,
)
from core.types import Endpoint

# Exit code of `batch import` when calls are still unanswered (import their results to finish).
EXIT_BATCH_MISSING = 3
# Inputs one `batch export` takes: sweeps too large to run interactively are what it is for.
BATCH_MAX_ROWS = 50_000


def _batch_endpoint_from_args(
    args: argparse.Namespace, url: str | None, model: str | None
) -> Endpoint:
    """Like ``endpoint_from_args`` without starting anything: a batch export sends nothing, so
    the embedded model (as a transformation endpoint) is named, not started."""
    if url in (None, "", "embedded"):
        from app.engine.model_server import embedded_endpoint

        endpoint = embedded_endpoint()
        return replace(endpoint, model=model) if model else endpoint
    return endpoint_from_args(args, url, model)


def cmd_batch_export(args: argparse.Namespace) -> int:
    from app.batch.export import BatchExportError, export_batch

    if args.endpoint in ("", "embedded"):
        raise CliError(
            "batch export needs the --endpoint URL and --model of the server that will answer "
            "the batch (the embedded model is not a batch engine)"
        )
    if args.max_lines < 1 or args.max_mb <= 0:
        raise CliError("--max-lines and --max-mb must be more than 0")
    check_run_options(args)
    if args.submit:  # only a submitted batch is sent with the key
        check_key_is_set(args, args.endpoint)
    store = open_store(args.db)
    config, task, samples = run_config_from_args(
        args, store, _batch_endpoint_from_args, max_rows=BATCH_MAX_ROWS
    )
    try:
        export = export_batch(
            store,
            config,
            task,
            samples,
            Path(args.out),
            max_lines=args.max_lines,
            max_bytes=int(args.max_mb * 1024 * 1024),
        )
    except BatchExportError as exc:
        raise CliError(str(exc)) from None
    if args.json and not args.submit:
        print(json.dumps(export.to_dict(), indent=2))
    else:
        for line in export.describe():
            print(line)
    if args.submit and export.files:
        from app.batch.remote_cli import submit_export

        return submit_export(
            args, export, store=store, import_results=_batch_importer(store), on_line=print
        )
    return 0


def _batch_importer(store):
    """What `--submit` and `batch status --wait` call with the downloaded result files:
    import them and say what happened."""
    from app.batch.importer import BatchImportError, import_results

    def import_and_say(paths):
        try:
            outcome = import_results(store, [Path(path) for path in paths])
        except BatchImportError as exc:  # refused whole: one line, nothing imported
            raise CliError(str(exc)) from None
        for line in outcome.describe():
            print(line)
        return outcome

    return import_and_say


def cmd_batch_status(args: argparse.Namespace) -> int:
    from app.batch.remote_cli import batch_status_command

    store = open_store(args.db, must_exist=True)
    return batch_status_command(
        args, store=store, import_results=_batch_importer(store), on_line=print
    )


def cmd_batch_import(args: argparse.Namespace) -> int:
    from app.batch.importer import BatchImportError, import_results

    store = open_store(args.db)
    try:
        outcome = import_results(store, [Path(path) for path in args.results])
    except BatchImportError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        for line in outcome.describe():
            print(line)
    return EXIT_BATCH_MISSING if outcome.missing else 0


def add_commands(sub) -> None:
    """``batch export``, ``batch import`` and ``batch status`` (the remote batch options add
    ``export --submit`` and what ``status`` reads)."""
    batch = sub.add_parser("batch", help="export a run as batch request files, import results")
    commands = batch.add_subparsers(dest="batch_command", required=True)

    p = export = commands.add_parser(
        "export",
        help="plan a run as `run` would and write its unanswered calls as a batch request file",
    )
    add_plan_options(p, endpoint_help="base URL of the server that will answer", batch=True)
    p.add_argument("--out", required=True, help="the request file (FILE.jsonl)")
    p.add_argument(
        "--max-lines",
        type=int,
        default=50_000,
        help="requests per file before a new numbered part (default 50,000, the Batch API's)",
    )
    p.add_argument(
        "--max-mb",
        type=float,
        default=200.0,
        help="MB per file before a new numbered part (default 200, the Batch API's)",
    )
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    # What `run` options set that a batch export has no use for (nothing is sent from here).
    p.set_defaults(
        func=cmd_batch_export,
        concurrency=None,
        timeout=None,
        retries=RETRIES_DEFAULT,
        rpm=None,
        tpm=None,
    )

    p = commands.add_parser(
        "import", help="read batch result files, judge the runs they answer, store the cases"
    )
    p.add_argument("results", nargs="+", help="result files (OpenAI Batch or vLLM output)")
    p.add_argument("--db", help=DB_HELP)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_batch_import)

    from app.batch.remote_cli import configure_remote_batch  # argparse only: no SDK import

    status = commands.add_parser(
        "status", help="a run's batches on the server (after `batch export --submit`)"
    )
    status.set_defaults(func=cmd_batch_status)
    configure_remote_batch(status, export)
