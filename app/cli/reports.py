"""`report` (statistics per model × relation), `export` (the cases as a file) and `import`
(LLMorph logs as a run)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.common import DB_HELP, JSON_HELP, CliError, open_store
from app.reports.formats import EXPORT_FORMATS


def cmd_report(args: argparse.Namespace) -> int:
    from app.reports.summary import report_json, report_table

    store = open_store(args.db, must_exist=True, reports=True)
    if args.run and store.run(args.run) is None:
        raise CliError(f"no run {args.run!r} in {args.db}")
    report = report_json(store, args.run)
    state = store.run(args.run).status if args.run else ""
    if state in ("awaiting_batch", "partial"):
        print(f"note: run {args.run} is {state}: `batch import` its results", file=sys.stderr)
    for flagged in report["known_defects"]:
        print(
            f"warning: run {flagged['run_id']} ({flagged['model']}, {flagged['task_id']}): "
            f"{flagged['hint']} — {'; '.join(flagged['defects'])}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    for line in report_table(report):
        print(line)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from app.reports.exports import export_cases

    store = open_store(args.db, must_exist=True, reports=True)
    try:
        written = export_cases(
            store, args.format, Path(args.out), run_ids=[args.run] if args.run else None
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {written} cases to {args.out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from app.reports.llmorph import import_llmorph

    store = open_store(args.db)
    if args.format != "llmorph":
        raise CliError("only --format llmorph can be imported")
    try:
        run_id = import_llmorph(store, Path(args.file))
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from None  # the message already names the file
    print(f"imported as run {run_id}")
    return 0


def add_commands(sub) -> None:
    """`report`, `export` (one of the export formats) and `import`."""
    p = sub.add_parser("report", help="per model × relation statistics")
    p.add_argument("--db", required=True, help=DB_HELP)
    p.add_argument("--run", help="only this run (default: every run)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="export cases")
    p.add_argument("--db", required=True, help=DB_HELP)
    p.add_argument("--format", required=True, choices=list(EXPORT_FORMATS), help="the file format")
    p.add_argument("--out", required=True, help="the file to write")
    p.add_argument("--run", help="only this run (default: every run)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="import LLMorph JSON logs")
    p.add_argument("--db", required=True, help=DB_HELP)
    p.add_argument(
        "--format", required=True, choices=["llmorph"], help="the log format (LLMorph's JSON)"
    )
    p.add_argument("file", help="the log file to import as a run")
    p.set_defaults(func=cmd_import)
