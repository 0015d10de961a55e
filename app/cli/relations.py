"""`relations` (the catalogue, and `relations import FILE`) and `transform` (one follow-up)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from app.cli.common import (
    API_KEY_ENV_HELP,
    DB_HELP,
    JSON_HELP,
    CliError,
    open_store,
    read_text_file,
)
from app.cli.plan import check_key_is_set, endpoint_from_args
from core.run_config import (
    DEFAULT_REWRITE_CANDIDATES,
    MAX_REWRITE_CANDIDATES,
    REWRITE_CANDIDATES_HELP,
)
from core.types import Sample

if TYPE_CHECKING:
    from relations.apply import Candidates
    from relations.base import Rewriter


def cmd_relations(args: argparse.Namespace) -> int:
    from app.engine.workspace import all_relations, all_tasks
    from relations.catalog import describe_relation

    if args.action == "import":
        return cmd_relations_import(args)
    if args.file is not None:
        raise CliError(f"unexpected argument {args.file!r} (did you mean `relations import FILE`?)")
    store = open_store(args.db)
    try:
        relations = all_relations(store, args.task)
    except KeyError as exc:
        raise CliError(str(exc.args[0])) from None
    known_tasks = list(all_tasks(store).values())
    if args.json:
        entries = [describe_relation(r, known_tasks) for r in relations]
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    for r in relations:
        entry = describe_relation(r, known_tasks)
        tasks = ",".join(entry["tasks"])
        flag = "" if entry["available"] else "  [unavailable]"
        print(f"{r.id:32} {r.kind:8} {r.expectation:20} {tasks:28} {r.ref}{flag}")
    return 0


def cmd_relations_import(args: argparse.Namespace) -> int:
    """Import custom relations from a JSON file (the Relations page's format): all or nothing."""
    from relations.custom import import_specs

    if args.file is None:
        raise CliError("relations import needs a FILE (the Relations page's JSON export)")
    text = read_text_file(args.file)
    store = open_store(args.db)
    try:
        imported = import_specs(store, text)
    except ValueError as exc:
        raise CliError(f"{args.file}: {exc}") from None
    print(f"imported {len(imported)} custom relation(s): {', '.join(imported)}")
    return 0


def cmd_transform(args: argparse.Namespace) -> int:
    from app.engine.workspace import all_relations, get_task
    from core.tasks import BUILTIN_TASKS
    from relations.apply import ONE_CANDIDATE, SkippedFollowUp, generate_followups

    check_key_is_set(args, args.endpoint)
    store = open_store(args.db)
    relations = {r.id: r for r in all_relations(store)}
    if args.relation not in relations:
        raise CliError(f"unknown relation {args.relation!r} (see `morphscope relations`)")
    relation = relations[args.relation]
    task_ids = relation.task_ids(BUILTIN_TASKS.values())
    task_id = args.task or (task_ids[0] if task_ids else "sentiment")
    task = get_task(store, task_id)
    field = args.field or task.perturbable_fields[0]
    if field not in task.fields:
        raise CliError(f"task {task.id} has no field {field!r}; fields: {', '.join(task.fields)}")
    fields = {f: "" for f in task.fields} | {field: args.text}
    partners = [Sample({**fields, field: args.partner})] if args.partner is not None else []
    rewrite, candidates = None, ONE_CANDIDATE
    if args.endpoint or relation.kind == "llm":
        rewrite, candidates = _rewriters(args, store)
    results = generate_followups(
        relation, Sample(fields), task, [field], run_seed=args.seed, partners=partners,
        rewrite=rewrite, candidates=candidates,
    )  # fmt: skip
    result = results[0] if results else SkippedFollowUp(field, "no follow-up")
    refused = result.reason if isinstance(result, SkippedFollowUp) else _gate_refusal(result)
    if refused is not None:
        if args.json:
            skipped = {"relation": relation.id, "skipped": True, "reason": refused}
            details = getattr(result, "details", None)
            print(json.dumps(skipped | ({"details": details} if details else {})))
        else:
            print(f"SKIP: {refused}", file=sys.stderr)
        return 3
    followup_text = result.fields.get(field, "")
    prompt = f"{result.preamble.rstrip()}\n\n{followup_text}" if result.preamble else followup_text
    if args.json:
        payload: dict[str, Any] = {
            "relation": relation.id,
            "seed": args.seed,
            "source": args.text,
            "followup": prompt,
            "fields": result.fields,
            "target": result.target,
        }
        if result.transformed is not None:
            payload["transformed"] = result.transformed
        if result.companions:
            payload["companions"] = result.companions
        if result.details:
            payload["details"] = result.details  # e.g. the rewrite candidates tried
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(prompt)
    return 0


def _gate_refusal(result: Any) -> str | None:
    """The validity gate's reason when no rewrite candidate passed it (a run SKIPs that case
    with this reason), else None."""
    from relations.candidates import DETAILS_KEY

    tried = (result.details or {}).get(DETAILS_KEY)
    if tried and "by_sentence" in tried:  # a small rewriter's, asked sentence by sentence
        return tried["gate"]
    if not tried or tried["valid"] or tried["chosen"] is None:
        return None
    chosen = next(c for c in tried["candidates"] if c["n"] == tried["chosen"])
    return chosen["gate"]


def _rewriters(args: argparse.Namespace, store) -> tuple[Rewriter, Candidates]:
    """The rewrite hook and best of k a run would use for these arguments: the same calls (and
    call cache), the same k, the same prompts (no worked examples, as in a run), the same gate
    (the closer rule for the embedded model), and MiniLM's input similarity to rank the
    candidates the gate passes."""
    # The model clients and the embedder only when a model rewrites.
    from app.engine.calls import make_sync_candidate_rewriter
    from app.engine.embedder import EmbeddingCache
    from app.engine.fluency import embedded_rewriter
    from app.engine.workspace import default_embedder
    from relations.apply import Candidates

    if not 1 <= args.rewrite_candidates <= MAX_REWRITE_CANDIDATES:
        raise CliError(f"--rewrite-candidates must be from 1 to {MAX_REWRITE_CANDIDATES}")
    endpoint = endpoint_from_args(args, args.endpoint, args.model)
    ask = make_sync_candidate_rewriter(store, endpoint)
    similarity = EmbeddingCache(default_embedder(), store).similarity
    small = embedded_rewriter() if endpoint.embedded else None
    candidates = Candidates(args.rewrite_candidates, ask, similarity, small_rewriter=small)
    return (lambda prompt: ask(prompt, 0)), candidates


def add_commands(sub) -> None:
    """`relations` and `transform`."""
    p = sub.add_parser(
        "relations",
        help="list the relations; `relations import FILE` adds custom ones",
    )
    p.add_argument("action", nargs="?", choices=["import"], help="import custom relations")
    p.add_argument("file", nargs="?", help="JSON file to import (the Relations page's format)")
    p.add_argument("--task", help="only the relations that apply to this task id")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--db", help=DB_HELP)
    p.set_defaults(func=cmd_relations)

    p = sub.add_parser("transform", help="print the follow-up a relation makes from a text")
    p.add_argument("relation", help="the relation id (see `relations`)")
    p.add_argument("--text", required=True, help="the source text to transform")
    p.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    p.add_argument("--partner", help="a second input, for relations that combine two")
    p.add_argument("--task", help="task id (default: the relation's first task)")
    p.add_argument("--field", help="the task field the text fills (default: its first)")
    p.add_argument("--endpoint", help="transformation endpoint for LLM-prompted relations")
    p.add_argument("--model", help="model name at the transformation endpoint")
    p.add_argument(
        "--rewrite-candidates",
        type=int,
        default=DEFAULT_REWRITE_CANDIDATES,
        metavar="K",
        help=f"{REWRITE_CANDIDATES_HELP} (default {DEFAULT_REWRITE_CANDIDATES})",
    )
    p.add_argument("--api-key-env", help=API_KEY_ENV_HELP)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--db", help=DB_HELP)
    p.set_defaults(func=cmd_transform)
