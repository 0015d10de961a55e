"""What plans a run: the options `run` and `batch export` share, checked before anything is
opened, and the run configuration they describe (the Probe page's checks, on the command line).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.common import API_KEY_ENV_HELP, DB_HELP, CliError
from core.run_config import (
    DEFAULT_NLI_TARGET,
    DEFAULT_REWRITE_CANDIDATES,
    NLI_TARGETS,
    REWRITE_CANDIDATES_HELP,
)
from core.types import Endpoint, Sample

if TYPE_CHECKING:
    from core.run_config import RunConfig
    from core.tasks import Task

# Retries of a failed call unless --retries says otherwise (the clients' own default).
RETRIES_DEFAULT = 4


def endpoint_from_args(args: argparse.Namespace, url: str | None, model: str | None) -> Endpoint:
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
    from app.inputs.input_files import MAX_INPUT_BYTES

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

    from app.inputs.errors import InputError
    from app.inputs.input_files import check_input_path

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


def run_config_from_args(
    args: argparse.Namespace, store, resolve_endpoint=None, max_rows: int | None = None
) -> tuple[RunConfig, Task, list[Sample]]:
    """The run the ``run`` command's arguments describe, checked like the Probe page's.
    ``resolve_endpoint(args, url, model)`` turns a URL into an endpoint (default: start the
    embedded model for "embedded"); ``max_rows`` inputs at most (default: a run's limit)."""
    resolve = resolve_endpoint or endpoint_from_args
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
            nli_target=args.nli_target,
            rewrite_candidates=args.rewrite_candidates,
        )
    except RunSetupError as exc:
        raise CliError(str(exc)) from None
    return config, plan.task, samples


def add_plan_options(
    parser: argparse.ArgumentParser, *, endpoint_help: str, batch: bool = False
) -> None:
    """What plans a run — endpoint, model, task, relations, inputs, repeats, seed, sampling,
    transformation endpoint, database — shared by `run` and `batch export`, so that the same
    options give the same run. A batch export names its server's model (nothing to default to)."""
    parser.add_argument("--endpoint", required=True, help=endpoint_help)
    parser.add_argument(
        "--model",
        required=batch,
        help="model name at the endpoint" + ("" if batch else " (default: the embedded model)"),
    )
    parser.add_argument("--api-key-env", help=API_KEY_ENV_HELP)
    parser.add_argument("--task", required=True, help="task id (see the Probe page or README)")
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
    parser.add_argument("--db", help=DB_HELP)
    parser.add_argument(
        "--repeats", type=int, default=1, help="times each case is sampled (default 1)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of every random choice of the run (default 0)"
    )
    parser.add_argument("--temperature", type=float, help="sampling temperature, 0 to 2")
    parser.add_argument("--top-p", type=float, help="nucleus sampling top_p")
    parser.add_argument("--max-tokens", type=int, help="most tokens per answer")
    parser.add_argument(
        "--transformation-endpoint",
        help="base URL that rewrites inputs for LLM-prompted relations (default: embedded)",
    )
    parser.add_argument("--transformation-model", help="model name at the transformation endpoint")
    parser.add_argument(
        "--nli-target",
        choices=NLI_TARGETS,
        default=DEFAULT_NLI_TARGET,
        help="NLI tasks only: which input the relations that expect the same label perturb "
        f"(default {DEFAULT_NLI_TARGET}; an edited hypothesis can claim something else, so "
        "'hypothesis' and 'both' are for those who mean to test that)",
    )
    parser.add_argument(
        "--rewrite-candidates",
        type=int,
        default=DEFAULT_REWRITE_CANDIDATES,
        metavar="K",
        help=f"{REWRITE_CANDIDATES_HELP} (default {DEFAULT_REWRITE_CANDIDATES})",
    )
