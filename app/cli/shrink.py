"""`shrink`: the fewest of a FAIL case's edits that still flip the model's answer (ddmin).

    morphscope shrink CASE_ID [--db DB] [--repeats K/N] [--max-calls N] [--json]
    morphscope shrink --run RUN_ID [--relation R] [--limit N] [--json]
    morphscope shrink --run RUN_ID --batch-export OUT.jsonl   (round 1 of a batch shrink)
    morphscope shrink --batch-import RESULTS.jsonl --batch-export NEXT.jsonl   (the next rounds)
    morphscope shrink --summary [--run RUN_ID] [--json | --csv]   (edits that flip answers most
                                                                  often, as the Analysis tab)

Each candidate is judged through the engine's stages against the case's own run's endpoint (with
its key variable) and the call cache, so a candidate asked before costs no call. The result is
stored beside the case. Batch rounds (``app.batch.shrink_rounds``) write each ddmin level's
calls as a batch request file and advance the searches from its results. Exit codes: 0 done
(whatever each case's status), 2 bad case id, database or result file.
"""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.common import DB_HELP, JSON_HELP, CliError, open_store


def _repeats(text: str | None):
    from app.engine.shrink import Repeats

    if text is None:
        return None
    try:
        return Repeats.parse(text)
    except ValueError as exc:
        raise CliError(f"--repeats: {exc}") from None


def _case_ids(store, args: argparse.Namespace) -> list[str]:
    if args.case_id:
        return [args.case_id]
    if store.run(args.run) is None:
        raise CliError(f"no run {args.run!r} in this database")
    relations = (args.relation,) if args.relation else None
    cases = store.cases_for([args.run], verdicts=["FAIL"], relation_ids=relations, limit=args.limit)
    return [case.id for case in cases]


def _line(payload: dict) -> str:
    kept = "; ".join(e["shown"] for e in payload["kept_edits"])
    return (
        f"{payload['case_id']} {payload['relation_id']}: {payload['status']} · "
        f"{payload['edits_kept']} of {payload['edits_total']} edits · {payload['calls']} calls "
        f"({payload['confirmed'] or '-'})" + (f" · {kept}" if kept else "")
    )


def _summary(args: argparse.Namespace) -> int:
    """`shrink --summary`: the edits that flip answers most often, from the stored shrinks."""
    from app.analysis.shrunk_edits import flipping_edits, flipping_edits_csv

    store = open_store(args.db, must_exist=True)
    if args.run and store.run(args.run) is None:
        raise CliError(f"no run {args.run!r} in this database")
    table = flipping_edits(store.shrunk_edit_rows([args.run] if args.run else None))
    if args.json:
        print(json.dumps(table, indent=2, ensure_ascii=False))
        return 0
    if args.csv:
        sys.stdout.write(flipping_edits_csv(table))
        return 0
    for row in table:
        print(
            f"{row['relation_id']} · {row['model']} · {row['edit']}: {row['cases']} "
            f"{'case' if row['cases'] == 1 else 'cases'} ({row['share']:.0%})"
        )
    return 0


def _batch_rounds(args: argparse.Namespace) -> int:
    """`--batch-export` (round 1 of the run's or case's searches) or `--batch-import` (the
    next round of every search going on)."""
    from pathlib import Path

    from app.batch.importer import BatchImportError
    from app.batch.shrink_rounds import ShrinkRoundError, import_round, start_rounds
    from app.cli.run import start_embedder, stop_embedder
    from app.engine.embedder import EmbeddingCache

    repeats = _repeats(args.repeats)
    store = open_store(args.db, must_exist=True)
    case_ids = [] if args.batch_import else _case_ids(store, args)
    if args.case_id and store.case(args.case_id) is None:
        raise CliError(f"no case {args.case_id!r} in this database")
    out = Path(args.batch_export)
    embedder = start_embedder()
    try:
        embeddings = EmbeddingCache(embedder, store)
        if args.batch_import:
            paths = [Path(p) for p in args.batch_import]
            outcome = import_round(store, paths, embeddings, out)
        else:
            outcome = start_rounds(
                store, case_ids, embeddings, out, repeats=repeats, max_calls=args.max_calls
            )
    except (BatchImportError, ShrinkRoundError) as exc:
        raise CliError(str(exc)) from None
    finally:
        stop_embedder(embedder)
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2, ensure_ascii=False))
    else:
        for line in outcome.describe():
            print(line)
    return 0


def cmd_shrink(args: argparse.Namespace) -> int:
    if args.summary:
        return _summary(args)
    if args.batch_export:
        return _batch_rounds(args)
    from app.cli.run import start_embedder, stop_embedder
    from app.engine.embedder import EmbeddingCache
    from app.engine.shrink_oracle import ShrinkInputError, result_json, shrink_case

    repeats = _repeats(args.repeats)
    store = open_store(args.db, must_exist=True)
    case_ids = _case_ids(store, args)
    if args.case_id and store.case(args.case_id) is None:
        raise CliError(f"no case {args.case_id!r} in this database")
    embedder = start_embedder()
    results = []
    try:
        embeddings = EmbeddingCache(embedder, store)
        for case_id in case_ids:
            try:
                target, result = shrink_case(
                    store, case_id, embeddings, repeats=repeats, max_calls=args.max_calls
                )
            except ShrinkInputError as exc:
                if args.case_id:
                    raise CliError(str(exc)) from None
                print(f"{case_id}: {exc}", file=sys.stderr)
                continue
            payload = result_json(target, result)
            results.append(payload)
            if not args.json:
                print(_line(payload))
    finally:
        stop_embedder(embedder)
    if args.json:
        print(json.dumps(results[0] if args.case_id else results, indent=2, ensure_ascii=False))
    return 0


def shrink_argument_problem(args: argparse.Namespace) -> str | None:
    if args.csv and not args.summary:
        return "--csv goes with --summary"
    if args.summary:
        if args.json and args.csv:
            return "give --json or --csv, not both"
        if args.batch_export or args.batch_import:
            return "--summary reads stored shrinks: give no --batch-export or --batch-import"
        return "--summary reads stored shrinks: give no CASE_ID" if args.case_id else None
    if args.batch_import:
        if not args.batch_export:
            return "--batch-import needs --batch-export NEXT.jsonl for the next round's requests"
        if args.case_id or args.run or args.relation or args.limit is not None:
            return "--batch-import advances every search going on: give no CASE_ID or --run"
        return None
    if bool(args.case_id) == bool(args.run):
        return "give a CASE_ID or --run RUN_ID (one of them)"
    if args.case_id and (args.relation or args.limit is not None):
        return "--relation and --limit go with --run"
    if args.max_calls < 1:
        return "--max-calls must be at least 1"
    return None


def add_commands(sub) -> None:
    """`shrink`."""
    p = sub.add_parser("shrink", help="the fewest edits of a FAIL case that still flip it")
    p.add_argument("case_id", nargs="?", metavar="CASE_ID", help="the FAIL case to shrink")
    p.add_argument("--db", help=DB_HELP)
    p.add_argument("--run", metavar="RUN_ID", help="shrink the run's FAIL cases")
    p.add_argument("--relation", metavar="R", help="with --run: only this relation's cases")
    p.add_argument("--limit", type=int, metavar="N", help="with --run: at most N cases")
    p.add_argument(
        "--repeats", metavar="K/N",
        help="a candidate fails when it fails in K of N samples "
        "(default 2/3 when the endpoint samples or the noise floor is above 0, else 1/1)",
    )  # fmt: skip
    p.add_argument(
        "--max-calls", type=int, default=60, metavar="N", help="model calls per case (default 60)"
    )
    p.add_argument(
        "--summary", action="store_true",
        help="the kept edits of the stored shrinks (of --run, else all), by relation × model",
    )  # fmt: skip
    p.add_argument(
        "--batch-export", metavar="OUT.jsonl",
        help="write the searches' next ddmin level as batch requests (`batch export`'s format) "
        "instead of sending them: with CASE_ID or --run, round 1; with --batch-import, the next",
    )  # fmt: skip
    p.add_argument(
        "--batch-import", nargs="+", metavar="RESULTS.jsonl",
        help="the batch engine's results for the last round: judge them, advance every search "
        "going on, and write the next round to --batch-export",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument(
        "--csv", action="store_true",
        help="with --summary: print the table as CSV (the Analysis tab's download)",
    )  # fmt: skip
    p.set_defaults(func=cmd_shrink, argument_problem=shrink_argument_problem)
