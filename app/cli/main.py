"""The CLI: relations, transform, run, report, export, import, batch.

Each command group is a module with ``add_commands(sub)``, which adds its sub-commands (each
with ``func``, and optionally ``argument_problem``) to the parser; a new group is a new module and
its entry in :data:`COMMAND_GROUPS`. ``main`` parses, runs the command and turns every failure
into one line on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys

from app.cli import batch, relations, reports, run
from app.cli.common import EXIT_STOPPED, CliError, close_stores, log
from app.cli.failures import NewFiles, SigtermAsCtrlC, database_failure_line

# The command groups, in the order `--help` lists their commands.
COMMAND_GROUPS = (relations, run, reports, batch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="Morphscope CLI")
    parser.add_argument("--verbose", "-v", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.add_commands(sub)
    return parser


def _run_closing_stores(args: argparse.Namespace) -> int:
    from storage import DatabaseFailure

    try:
        return args.func(args)
    except DatabaseFailure as exc:
        # Explained before the stores close: closing checkpoints the write-ahead log away, and
        # with it the file that shows a full disk or the file size limit.
        log.debug("database failure", exc_info=True)
        raise CliError(database_failure_line(exc, args)) from None
    finally:
        close_stores()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # Numbers argparse accepts but the command cannot use: refused as argparse refuses a value.
    argument_problem = getattr(args, "argument_problem", None)
    problem = argument_problem(args) if argument_problem else None
    if problem:
        parser.error(problem)
    from storage import DatabaseFailure, default_db_path
    from storage.errors import RunStoppedError, disk_full_reason

    new_files = NewFiles(args)
    terminated = SigtermAsCtrlC()
    try:
        with terminated:
            return _run_closing_stores(args)
    except RunStoppedError as exc:  # run's row deleted, disk full: what was stored stays
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_STOPPED
    except CliError as exc:
        new_files.remove()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, DatabaseFailure, RecursionError) as exc:
        # Bad input that slipped past the checks above: still one line, never a traceback.
        log.debug("unexpected error", exc_info=True)
        new_files.remove()
        full = disk_full_reason(exc, getattr(args, "db", None) or default_db_path())
        if full:
            print(f"error: the disk is full: {full}; rerun when there is space", file=sys.stderr)
        else:
            print(f"error: {database_failure_line(exc, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if terminated.received:
            print(
                "\nterminated: finished cases and every answer are saved; "
                "run the same command to resume",
                file=sys.stderr,
            )
            return EXIT_STOPPED
        print(
            "\ninterrupted: finished cases are saved; run the same command to resume",
            file=sys.stderr,
        )
        return 130
