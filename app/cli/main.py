"""The CLI: relations, transform, run, report, export, import, batch.

Progress goes to stderr, results to stdout; bad input exits non-zero with a one-line message.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.types import Endpoint, Sample

if TYPE_CHECKING:
    from app.engine.runner import RunConfig
    from app.inputs.tasks import Task

log = logging.getLogger("morphscope")


# Retries of a failed call unless --retries says otherwise (the clients' own default).
RETRIES_DEFAULT = 4


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


# The stores the running command opened: ``main`` closes them when the command ends, so the
# database is checkpointed and its -wal/-shm files removed before the process exits (which then
# need not collect anything).
_OPEN_STORES: list = []


def _store(path: str | None, *, must_exist: bool = False, reports: bool = False):
    """The store at ``path`` (or the default); a path that cannot be a database is a CliError.
    ``must_exist``: commands that only read say so instead of creating an empty database.
    ``reports``: the command reports from it, so a damaged database is refused (quick_check)
    rather than reported from as if it were whole."""
    from storage import Store, StoreOpenError, default_db_path
    from storage.health import damage_line

    db_path = Path(path) if path else default_db_path()
    if must_exist and not db_path.exists():
        raise CliError(f"{db_path}: no such database")
    try:
        store = Store(db_path)
    except StoreOpenError as exc:
        raise CliError(str(exc)) from None
    _OPEN_STORES.append(store)
    damaged = damage_line(store) if reports else None
    if damaged:
        raise CliError(damaged)
    return store


def _close_stores() -> None:
    while _OPEN_STORES:
        store = _OPEN_STORES.pop()
        try:
            store.close()
        except Exception:  # closing is tidying up: the command's work is already saved
            log.debug("could not close %s", store.path, exc_info=True)


# ------------------------------------------------------------------ relations / transform


def cmd_relations(args: argparse.Namespace) -> int:
    from app.engine.workspace import all_relations, all_tasks

    if args.action == "import":
        return cmd_relations_import(args)
    if args.file is not None:
        raise CliError(f"unexpected argument {args.file!r} (did you mean `relations import FILE`?)")
    store = _store(args.db)
    try:
        relations = all_relations(store, args.task)
    except KeyError as exc:
        raise CliError(str(exc.args[0])) from None
    known_tasks = list(all_tasks(store).values())
    if args.json:
        entries = [r.describe(known_tasks) for r in relations]
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    for r in relations:
        entry = r.describe(known_tasks)
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
    store = _store(args.db)
    try:
        imported = import_specs(store, text)
    except ValueError as exc:
        raise CliError(f"{args.file}: {exc}") from None
    print(f"imported {len(imported)} custom relation(s): {', '.join(imported)}")
    return 0


def read_text_file(path: str, limit_bytes: int = 20_000_000) -> str:
    """A UTF-8 text file's contents, or a CliError naming what is wrong with it."""
    file = Path(path)
    if not file.exists():
        raise CliError(f"{path}: no such file")
    if file.is_dir():
        raise CliError(f"{path}: is a directory, not a file")
    if not file.is_file():  # a FIFO would block until written to, a device may never end
        raise CliError(f"{path}: not a regular file (a pipe or a device?)")
    try:
        if file.stat().st_size > limit_bytes:
            raise CliError(f"{path}: larger than {limit_bytes // 1_000_000} MB")
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise CliError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _endpoint_from_args(args: argparse.Namespace, url: str | None, model: str | None) -> Endpoint:
    from app.engine.model_server import get_server

    if url in (None, "", "embedded"):
        server = get_server()
        status = server.wait_ready(180)
        if status.state != "ready":
            raise CliError(f"the embedded model did not start: {status.message}")
        endpoint = server.endpoint()
        return replace(endpoint, model=model or endpoint.model) if model else endpoint
    from app.clients.endpoint_settings import validate_base_url
    from core.key_names import validate_api_key_env

    try:
        base_url = validate_base_url(url)
        api_key_env = validate_api_key_env(getattr(args, "api_key_env", None))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not model:
        raise CliError("--model is required with --endpoint URL")
    return Endpoint(
        name=f"{model} @ {base_url}", base_url=base_url, model=model, api_key_env=api_key_env
    )


def input_file_options(args: argparse.Namespace) -> dict[str, Any]:
    """How ``--inputs`` is read: ``--max-input-mb`` and ``--encoding`` as reader arguments."""
    from app.inputs.parsing import MAX_INPUT_BYTES

    max_mb = getattr(args, "max_input_mb", None)
    return {
        "max_bytes": MAX_INPUT_BYTES if max_mb is None else int(max_mb * 1024 * 1024),
        "encoding": getattr(args, "encoding", None),
    }


def check_inputs_options(args: argparse.Namespace) -> None:
    """The inputs file refused on its path alone (a FIFO, a device, a directory, too large) and
    the reading options, before a database is opened, so a mistake creates nothing."""
    import codecs
    import math

    from app.inputs.parsing import InputError, check_input_path

    max_mb = getattr(args, "max_input_mb", None)
    if max_mb is not None and not (math.isfinite(max_mb) and max_mb > 0):
        raise CliError(f"--max-input-mb must be a number above 0, not {max_mb}")
    encoding = getattr(args, "encoding", None)
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise CliError(
                f"--encoding {encoding!r}: unknown encoding (try utf-8, cp1252, latin-1, utf-16)"
            ) from None
    try:
        check_input_path(args.inputs, input_file_options(args)["max_bytes"])
    except InputError as exc:
        raise CliError(str(exc)) from None


def check_run_options(args: argparse.Namespace) -> None:
    """Sampling options and names that no run could use, refused before anything is opened."""
    import math

    from app.clients.endpoint_settings import validate_base_url
    from core.key_names import validate_api_key_env

    if args.temperature is not None and not (
        math.isfinite(args.temperature) and 0 <= args.temperature <= 2
    ):
        raise CliError(f"--temperature must be a number from 0 to 2, not {args.temperature}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise CliError(f"--max-tokens must be at least 1, not {args.max_tokens}")
    check_inputs_options(args)
    try:
        validate_api_key_env(args.api_key_env)
        for url in (args.endpoint, args.transformation_endpoint):
            if url not in (None, "", "embedded"):
                validate_base_url(url)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def check_key_is_set(args: argparse.Namespace, *urls: str | None) -> None:
    """A ``--api-key-env`` variable that is set neither in the environment nor in secrets.toml
    is refused before anything is opened or sent (the calls would go out without a key). Only
    where one of ``urls`` is a server's (the embedded model takes no key)."""
    from app.clients.endpoint_settings import missing_key
    from core.key_names import validate_api_key_env

    name = getattr(args, "api_key_env", None)
    if not name or all(url in (None, "", "embedded") for url in urls):
        return
    try:
        endpoint = Endpoint(name="", base_url="", model="", api_key_env=validate_api_key_env(name))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    problem = missing_key(endpoint)
    if problem:
        raise CliError(f"--api-key-env: {problem}; set it, or leave out --api-key-env")


def cmd_transform(args: argparse.Namespace) -> int:
    from app.engine.workspace import all_relations, get_task
    from app.inputs.tasks import BUILTIN_TASKS
    from relations.apply import SkippedFollowUp, generate_followups

    check_key_is_set(args, args.endpoint)
    store = _store(args.db)
    relations = {r.id: r for r in all_relations(store)}
    if args.relation not in relations:
        raise CliError(f"unknown relation {args.relation!r} (see `python -m app relations`)")
    relation = relations[args.relation]
    task_ids = relation.task_ids(BUILTIN_TASKS.values())
    task_id = args.task or (task_ids[0] if task_ids else "sentiment")
    task = get_task(store, task_id)
    field = args.field or task.perturbable_fields[0]
    if field not in task.fields:
        raise CliError(f"task {task.id} has no field {field!r}; fields: {', '.join(task.fields)}")
    fields = {f: "" for f in task.fields} | {field: args.text}
    partners = [Sample({**fields, field: args.partner})] if args.partner is not None else []
    rewrite = None
    if args.endpoint or relation.kind == "llm":
        from app.engine.runner import (
            make_sync_rewriter,  # the model clients only when a model rewrites
        )

        rewrite = make_sync_rewriter(store, _endpoint_from_args(args, args.endpoint, args.model))
    results = generate_followups(
        relation, Sample(fields), task, [field], run_seed=args.seed, partners=partners,
        rewrite=rewrite,
    )  # fmt: skip
    result = results[0] if results else SkippedFollowUp(field, "no follow-up")
    if isinstance(result, SkippedFollowUp):
        if args.json:
            print(json.dumps({"relation": relation.id, "skipped": True, "reason": result.reason}))
        else:
            print(f"SKIP: {result.reason}", file=sys.stderr)
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
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(prompt)
    return 0


# ------------------------------------------------------------------ run


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
            f"{progress.cache_hits} cached{_load_text(progress)}"
        )
        sys.stderr.flush()
        if progress.done >= progress.total:
            sys.stderr.write("\n")


def _load_text(progress) -> str:
    """`` · concurrency 8/24 · 75.2 calls/s`` while an adaptive client reports its load."""
    load = getattr(progress, "load", None)
    return f" · {load.describe()}" if load is not None else ""


def run_config_from_args(
    args: argparse.Namespace, store, resolve_endpoint=None, max_rows: int | None = None
) -> tuple[RunConfig, Task, list[Sample]]:
    """The run the ``run`` command's arguments describe, checked like the Probe page's.
    ``resolve_endpoint(args, url, model)`` turns a URL into an endpoint (default: start the
    embedded model for "embedded"); ``max_rows`` inputs at most (default: a run's limit)."""
    resolve = resolve_endpoint or _endpoint_from_args
    from app.engine.run_setup import (
        RunSetupError,
        plan_run,
        relation_ids_from_text,
        samples_from_file,
        with_sampling,
    )

    try:
        plan = plan_run(store, args.task, relation_ids_from_text(args.relations))
        file_options = input_file_options(args)
        samples = (
            samples_from_file(args.inputs, plan.task, max_rows=max_rows, **file_options)
            if max_rows
            else samples_from_file(args.inputs, plan.task, **file_options)
        )
        endpoint = with_sampling(
            resolve(args, args.endpoint, args.model),
            task=plan.task,
            temperature=args.temperature,
            top_p=args.top_p,
            max_tokens=args.max_tokens,
            concurrency=args.concurrency,
        )
        if args.timeout is not None:
            endpoint = replace(endpoint, timeout_s=args.timeout)
        endpoint = replace(
            endpoint,
            retries=args.retries,
            rpm_limit=getattr(args, "rpm", None),
            tpm_limit=getattr(args, "tpm", None),
        )
        transformation = None
        if args.transformation_endpoint or plan.needs_transformation_endpoint:
            # LLM-prompted relations rewrite through the embedded model unless told otherwise.
            transformation = resolve(
                args, args.transformation_endpoint or "embedded", args.transformation_model
            )
        config = plan.config(
            endpoint,
            repeats=args.repeats,
            seed=args.seed,
            dataset=Path(args.inputs).name,
            transformation_endpoint=transformation,
        )
    except RunSetupError as exc:
        raise CliError(str(exc)) from None
    return config, plan.task, samples


# Exit codes of `run`: 0 every case settled, 1 stopped early (resumable), 2 bad input or an
# endpoint that failed its pre-flight check, 3 finished with ERROR cases (a rerun retries them).
EXIT_STOPPED = 1
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
    check_key_is_set(args, args.endpoint, args.transformation_endpoint)
    embedder = start_embedder()
    try:
        return _run_command(args)
    finally:
        stop_embedder(embedder)


def _run_command(args: argparse.Namespace) -> int:
    from app.engine.run_setup import endpoint_problem
    from app.engine.workspace import make_runner

    store = _store(args.db)
    config, task, samples = run_config_from_args(args, store)
    problem = endpoint_problem(config)
    if problem:
        raise CliError(f"{problem}; nothing was run")
    runner = make_runner(store)  # with the default embedder, the one loading since the start
    runner.stall_after_s = args.stall_minutes * 60
    summary = runner.run_sync(config, task, samples, progress=StderrProgress(args.quiet))
    # The error line comes first: a run whose every case failed must not look like a result.
    if summary.error_line():
        print(
            f"warning: {summary.error_line()}; run the same command to retry them", file=sys.stderr
        )
    if summary.stop_reason:
        print(f"warning: {summary.stop_reason}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.verdicts.items()))
        retried = f", {summary.retried_errors} errored re-sent" if summary.retried_errors else ""
        print(
            f"run {summary.run_id}: {summary.cases} cases ({counts}); "
            f"{summary.calls_made} calls, {summary.cache_hits} cache hits{retried}, "
            f"{summary.elapsed_s:.1f} s"
        )
    if summary.status != "done":
        return EXIT_STOPPED
    return EXIT_ERRORS if summary.errors else 0


def cmd_delete_run(args: argparse.Namespace) -> int:
    store = _store(args.db)
    if store.run(args.run_id) is None:
        raise CliError(f"no run {args.run_id!r} in {args.db}")
    n_cases = store.delete_run(args.run_id)
    print(f"deleted run {args.run_id} and its {n_cases} cases (with their labels)")
    return 0


# ------------------------------------------------------------------ report / export / import


def cmd_report(args: argparse.Namespace) -> int:
    from app.reports import report_json, report_table

    store = _store(args.db, must_exist=True, reports=True)
    if args.run and store.run(args.run) is None:
        raise CliError(f"no run {args.run!r} in {args.db}")
    report = report_json(store, args.run)
    state = store.run(args.run)["status"] if args.run else ""
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
    from app.reports import export_cases

    store = _store(args.db, must_exist=True, reports=True)
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
    from app.reports import import_llmorph

    store = _store(args.db)
    if args.format != "llmorph":
        raise CliError("only --format llmorph can be imported")
    try:
        run_id = import_llmorph(store, Path(args.file))
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from None  # the message already names the file
    print(f"imported as run {run_id}")
    return 0


# ------------------------------------------------------------------ batch

# Exit code of `batch import` when calls are still unanswered (import their results to finish).
EXIT_BATCH_MISSING = 3
# Inputs one `batch export` takes: sweeps too large to run interactively are what it is for.
BATCH_MAX_ROWS = 50_000


def _batch_endpoint_from_args(
    args: argparse.Namespace, url: str | None, model: str | None
) -> Endpoint:
    """Like ``_endpoint_from_args`` without starting anything: a batch export sends nothing, so
    the embedded model (as a transformation endpoint) is named, not started."""
    if url in (None, "", "embedded"):
        from app.engine.model_server import embedded_endpoint

        endpoint = embedded_endpoint()
        return replace(endpoint, model=model) if model else endpoint
    return _endpoint_from_args(args, url, model)


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
    store = _store(args.db)
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

    store = _store(args.db, must_exist=True)
    return batch_status_command(
        args, store=store, import_results=_batch_importer(store), on_line=print
    )


def cmd_batch_import(args: argparse.Namespace) -> int:
    from app.batch.importer import BatchImportError, import_results

    store = _store(args.db)
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


def add_plan_options(
    parser: argparse.ArgumentParser, *, endpoint_help: str, batch: bool = False
) -> None:
    """What plans a run — endpoint, model, task, relations, inputs, repeats, seed, sampling,
    transformation endpoint, database — shared by `run` and `batch export`, so that the same
    options give the same run. A batch export names its server's model (nothing to default to)."""
    parser.add_argument("--endpoint", required=True, help=endpoint_help)
    parser.add_argument("--model", required=batch)
    parser.add_argument("--api-key-env")
    parser.add_argument("--task", required=True)
    parser.add_argument("--relations", required=True, help="comma-separated relation ids")
    parser.add_argument("--inputs", required=True, help="CSV, JSONL or TXT file")
    parser.add_argument(
        "--max-input-mb",
        type=float,
        default=500.0,
        help="refuse an inputs file larger than this many MB (default 500)",
    )
    parser.add_argument(
        "--encoding",
        help="read the inputs file in this one encoding (default: UTF-8, checked line by line; "
        "UTF-16 with a BOM; or cp1252 when no line is UTF-8)",
    )
    parser.add_argument("--db")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--transformation-endpoint")
    parser.add_argument("--transformation-model")


def add_batch_parser(sub) -> argparse._SubParsersAction:
    """``batch export`` and ``batch import``; returns the ``batch`` subcommands (``batch
    status`` and ``--submit`` join them)."""
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
    p.add_argument("--json", action="store_true")
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
    p.add_argument("--db")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_batch_import)

    from app.batch.remote_cli import configure_remote_batch  # argparse only: no SDK import

    status = commands.add_parser(
        "status", help="a run's batches on the server (after `batch export --submit`)"
    )
    status.set_defaults(func=cmd_batch_status)
    configure_remote_batch(status, export)
    return commands


# ------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="Morphscope CLI")
    parser.add_argument("--verbose", "-v", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "relations",
        help="list the relation catalog, or `relations import FILE` to add custom relations",
    )
    p.add_argument("action", nargs="?", choices=["import"], help="import custom relations")
    p.add_argument("file", nargs="?", help="JSON file to import (the Relations page's format)")
    p.add_argument("--task")
    p.add_argument("--json", action="store_true")
    p.add_argument("--db")
    p.set_defaults(func=cmd_relations)

    p = sub.add_parser("transform", help="print the follow-up a relation makes from a text")
    p.add_argument("relation")
    p.add_argument("--text", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--partner")
    p.add_argument("--task")
    p.add_argument("--field")
    p.add_argument("--endpoint", help="transformation endpoint for LLM-prompted relations")
    p.add_argument("--model")
    p.add_argument("--api-key-env")
    p.add_argument("--json", action="store_true")
    p.add_argument("--db")
    p.set_defaults(func=cmd_transform)

    p = sub.add_parser("run", help="run relations over inputs against an endpoint")
    add_plan_options(p, endpoint_help="base URL, or 'embedded' for the local model")
    p.add_argument("--concurrency", type=int, default=Endpoint.concurrency)
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
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("delete-run", help="delete a run with its cases and their labels")
    p.add_argument("run_id")
    p.add_argument("--db", required=True)
    p.set_defaults(func=cmd_delete_run)

    p = sub.add_parser("report", help="per model × relation statistics")
    p.add_argument("--db", required=True)
    p.add_argument("--run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="export cases")
    p.add_argument("--db", required=True)
    p.add_argument("--format", required=True, choices=["csv", "jsonl", "llmorph", "html"])
    p.add_argument("--out", required=True)
    p.add_argument("--run")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="import LLMorph JSON logs")
    p.add_argument("--db", required=True)
    p.add_argument("--format", required=True, choices=["llmorph"])
    p.add_argument("file")
    p.set_defaults(func=cmd_import)

    add_batch_parser(sub)
    return parser


class NewFiles:
    """The database files a command creates: removed again when the command fails on bad input,
    so a mistake leaves nothing behind. Only a database that holds nothing and that no other
    process has open is removed: another process may have written into the new file since (and
    a side file of a database that existed before is never touched: it may hold another
    process's commits)."""

    SUFFIXES = ("", "-wal", "-shm", "-journal")

    def __init__(self, args: argparse.Namespace) -> None:
        db = getattr(args, "db", None)
        self.paths = [Path(f"{db}{suffix}") for suffix in self.SUFFIXES] if db else []
        self.absent = [path for path in self.paths if not path.exists()]
        existing = (
            [parent for parent in Path(db).absolute().parents if parent.exists()] if db else []
        )
        self.first_existing_folder = existing[0] if existing else None
        self.folder = Path(db).absolute().parent if db else None

    def remove(self) -> None:
        from storage.store import remove_unused_database

        if not self.paths or self.paths[0] not in self.absent:
            return
        if not remove_unused_database(self.paths[0], self.absent):
            return
        # Folders made for the database, from the innermost, while they are empty.
        folder = self.folder
        while folder is not None and folder != self.first_existing_folder:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent


class SigtermAsCtrlC:
    """SIGTERM (systemd, ``docker stop``, CI) handled as Ctrl-C is: a run stops at once, marked
    interrupted (resumable) with every answer it received kept, and the command ends with one
    line. Ctrl-C's own handler does the work (asyncio's cancels the run's task), so both take
    the same path; where SIGINT is ignored (a background job) it is a KeyboardInterrupt."""

    def __init__(self) -> None:
        self.received = False
        self._previous: Any = None

    def __enter__(self) -> SigtermAsCtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.received = True
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint):
            on_sigint(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt


def one_line(exc: BaseException) -> str:
    """An unexpected error as one line: its type and first line, never a traceback."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else 'no details'}"


def _database_failure_line(exc: BaseException, args: argparse.Namespace) -> str:
    """A full disk, a damaged database, or one that cannot be opened or created, said plainly;
    any other failure as its type and first line."""
    from storage import default_db_path
    from storage.health import failure_line
    from storage.store import disk_full_reason

    db = getattr(args, "db", None) or default_db_path()
    full = disk_full_reason(exc, db)
    if full:
        return f"the disk is full: {full}; rerun when there is space"
    return failure_line(exc, db) or one_line(exc)


def _run_closing_stores(args: argparse.Namespace) -> int:
    from storage import DatabaseFailure

    try:
        return args.func(args)
    except DatabaseFailure as exc:
        # Explained before the stores close: closing checkpoints the write-ahead log away, and
        # with it the file that shows a full disk or the file size limit.
        log.debug("database failure", exc_info=True)
        raise CliError(_database_failure_line(exc, args)) from None
    finally:
        _close_stores()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "run" and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.command == "run" and args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    for flag in ("rpm", "tpm"):
        if args.command == "run" and getattr(args, flag) is not None and getattr(args, flag) < 1:
            parser.error(f"--{flag} must be at least 1")
    if args.command == "run" and args.retries < 0:
        parser.error("--retries must be 0 or more")
    if args.command == "run" and args.timeout is not None and not 0 < args.timeout <= 3600:
        parser.error("--timeout must be between 0 and 3600 seconds")
    if args.command == "run" and not 0 < args.stall_minutes <= 24 * 60:
        parser.error("--stall-minutes must be more than 0")
    from storage import DatabaseFailure, default_db_path
    from storage.store import RunStoppedError, disk_full_reason

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
            print(f"error: {_database_failure_line(exc, args)}", file=sys.stderr)
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
