"""`gate` (the release gate: stored runs against thresholds and a baseline, with CI outputs) and
`baseline set` / `baseline show` (the run each task is compared with).

The release gate decides whether a model passes a build; it is not the validity gate that
rejects follow-ups before they are sent. Exit codes: 0 every relation holds, 1 a relation failed
its threshold or regressed, 2 bad settings or input or nothing to judge, 3 the judged runs hold
ERROR cases (unless ``--allow-errors``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.common import DB_HELP, CliError, open_store, read_text_file


def _settings(args: argparse.Namespace):
    from app.analysis.release_thresholds import (
        GateConfigError,
        GateSettings,
        check_rate,
        parse_relation_limit,
        settings_from_toml,
    )

    try:
        settings = (
            settings_from_toml(read_text_file(args.config)) if args.config else GateSettings()
        )
    except GateConfigError as exc:
        raise CliError(f"{args.config}: {exc}") from None
    try:
        return settings.with_overrides(
            max_rate=None if args.max is None else check_rate(args.max, "--max"),
            relation_max=tuple(parse_relation_limit(text) for text in args.relation_max),
            mode=args.mode,
            allow_errors=args.allow_errors,
            max_increase=(
                None
                if args.max_increase is None
                else check_rate(args.max_increase, "--max-increase")
            ),
        )
    except GateConfigError as exc:
        raise CliError(str(exc)) from None


def _write(path: str, write) -> None:
    try:
        write(Path(path))
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_outputs(args: argparse.Namespace, store, report) -> None:
    from app.reports.gate_summary import markdown_summary

    if args.junit:
        from app.reports.gate_junit import write_junit

        _write(args.junit, lambda path: write_junit(store, report, path))
    if args.markdown:
        text = markdown_summary(store, report)
        _write(args.markdown, lambda path: path.write_text(text, encoding="utf-8"))


def cmd_gate(args: argparse.Namespace) -> int:
    from app.analysis.release_report import BaselineChoice, GateInputError, evaluate_gate
    from app.reports.common import json_safe
    from app.reports.gate_summary import github_annotations, text_lines

    settings = _settings(args)  # a bad setting is refused before the database is opened
    if args.baseline and args.baseline_model:
        raise CliError("give --baseline or --baseline-model, not both")
    store = open_store(args.db, must_exist=True, reports=True)
    choice = BaselineChoice(
        run_id=args.baseline, model=args.baseline_model, use_stored=not args.no_baseline
    )
    try:
        report = evaluate_gate(store, list(args.run), settings, choice)
    except GateInputError as exc:
        raise CliError(str(exc)) from None
    _write_outputs(args, store, report)
    if args.github:
        for line in github_annotations(report):
            print(line)
    if args.json:
        print(json.dumps(json_safe(report.as_dict()), indent=2))
    else:
        stream = sys.stderr if args.github else sys.stdout
        for line in text_lines(report):
            print(line, file=stream)
    return report.exit_code


def cmd_baseline(args: argparse.Namespace) -> int:
    from app.reports.common import json_safe

    if args.action == "set":
        if not args.run_id:
            raise CliError("baseline set needs a RUN_ID")
        store = open_store(args.db, must_exist=True)
        try:
            approved = store.set_baseline(args.run_id, note=args.note)
        except KeyError:
            raise CliError(f"no run {args.run_id!r} in the database") from None
        print(
            f"run {approved.run_id} ({approved.model}) is the baseline of task {approved.task_id}"
        )
        return 0
    if args.run_id:
        raise CliError(f"unexpected argument {args.run_id!r} (did you mean `baseline set`?)")
    store = open_store(args.db, must_exist=True)
    approved = store.baselines()
    if args.json:
        print(json.dumps(json_safe([vars(b) for b in approved]), indent=2))
    elif not approved:
        print("no baseline set (morphscope baseline set RUN_ID)")
    for baseline in [] if args.json else approved:
        note = f" — {baseline.note}" if baseline.note else ""
        print(
            f"{baseline.task_id:20} {baseline.run_id}  {baseline.model}  set {baseline.set_at}{note}"
        )
    return 0


def add_commands(sub) -> None:
    """`gate` and `baseline`."""
    from app.analysis.release_thresholds import MODE_HELP, MODES

    p = sub.add_parser("gate", help="judge stored runs against thresholds (CI gate, exit 0/1/2/3)")
    p.add_argument("--db", help=DB_HELP)
    p.add_argument(
        "--run", action="append", default=[], metavar="RUN_ID",
        help="a run to judge (repeatable; default: the latest run of each model × task)",
    )  # fmt: skip
    p.add_argument("--max", type=float, help="the highest violation rate of every relation (0–1)")
    p.add_argument(
        "--relation-max", action="append", default=[], metavar="REL=RATE",
        help="one relation's highest rate (repeatable; REL may be a glob such as 'char.*')",
    )  # fmt: skip
    p.add_argument(
        "--config", help="TOML file of thresholds (max, [relations], [tasks.ID], mode …)"
    )
    p.add_argument(
        "--mode", choices=MODES,
        help="; ".join(f"{mode}: {text}" for mode, text in MODE_HELP.items()).replace("%", "%%") + " (default significant)",
    )  # fmt: skip
    p.add_argument(
        "--allow-errors", action="store_true", help="ERROR cases do not fail the gate (exit 3)"
    )
    p.add_argument(
        "--baseline", metavar="RUN_ID", help="compare each run with this run (same task)"
    )
    p.add_argument(
        "--baseline-model", metavar="NAME", help="compare with NAME's latest run on the same task"
    )
    p.add_argument(
        "--no-baseline", action="store_true", help="ignore the baseline stored by `baseline set`"
    )
    p.add_argument(
        "--max-increase", type=float,
        help="rise of a rate over the baseline's that is tolerated (default 0)",
    )  # fmt: skip
    p.add_argument(
        "--junit", metavar="FILE", help="write a JUnit XML report (one suite per relation)"
    )
    p.add_argument(
        "--markdown", metavar="FILE", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)"
    )
    # Both write to stdout: GitHub reads workflow commands there, a JSON reader wants JSON only.
    stdout_format = p.add_mutually_exclusive_group()
    stdout_format.add_argument(
        "--github", action="store_true",
        help="print ::error annotations for GitHub Actions (the table goes to stderr)",
    )  # fmt: skip
    stdout_format.add_argument(
        "--json", action="store_true", help="print the whole verdict as JSON"
    )
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("baseline", help="set or show the baseline run each task is compared with")
    p.add_argument(
        "action", choices=["set", "show"], help="set RUN_ID as its task's baseline, or show them"
    )
    p.add_argument("run_id", nargs="?", help="the run to approve (with set)")
    p.add_argument("--note", default="", help="why this run is the baseline (with set)")
    p.add_argument("--db", help=DB_HELP)
    p.add_argument("--json", action="store_true", help="print the baselines as JSON (with show)")
    p.set_defaults(func=cmd_baseline)
