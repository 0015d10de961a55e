"""The CLI (`morphscope`, also `python -m app`): relations, transform, run, report, export,
import, batch, gate and baseline.

Each command group is a module with ``add_commands(sub)``, which adds its sub-commands (each
with ``func``, and optionally ``argument_problem``) to the parser; a new group is a new module and
its entry in :data:`COMMAND_GROUPS`. ``main`` parses, runs the command and turns every failure
into one line on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys

from app.cli import batch, gate, relations, reports, run, shrink
from app.cli.common import EXIT_STOPPED, CliError, close_stores, log
from app.cli.failures import NewFiles, SigtermAsCtrlC, database_failure_line

# The command groups, in the order `--help` lists their commands.
COMMAND_GROUPS = (relations, run, reports, batch, gate, shrink)


class _VersionAction(argparse.Action):
    """``--version``: the installed package's version, read only when asked for (the metadata
    lookup is not paid by every command's start)."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"morphscope {morphscope_version()}")
        parser.exit()


def morphscope_version() -> str:
    """The installed distribution's version, or pyproject.toml's when run from a checkout that
    was never installed (``python -m app`` straight from a clone)."""
    from importlib import metadata
    from pathlib import Path

    try:
        return metadata.version("morphscope")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]


def build_parser(prog: str = "morphscope") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Morphscope: metamorphic robustness testing of LLMs from the command line "
        "(the dashboard's engine; also `python -m app`).",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="log progress details")
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
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


def main(argv: list[str] | None = None, prog: str = "morphscope") -> int:
    parser = build_parser(prog)
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


def console(prog: str = "morphscope") -> int:
    """The `morphscope` console script (and ``python -m app``): run the command, return its exit
    code for ``sys.exit``."""
    import gc

    code = main(prog=prog)
    # The process ends next: exiting would otherwise have the collector walk every object of the
    # modules a command imported (a `run` imports the HTTP client, pandas, numpy…), about 0.2 s
    # of CPU after the work is done. Frozen objects are left to the OS; atexit handlers still run.
    gc.freeze()
    return code
