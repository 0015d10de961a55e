"""The run set-up shared by the Probe page and the CLI: endpoint + task + relations + inputs →
``RunConfig``, with one set of checks and one set of messages.

Both doors go through the same steps, in this order, so the same choices give the same config
and the same mistake gives the same message:

1. ``plan_run`` checks the task and the relation ids against the workspace (built-in and custom
   ones) and says whether an LLM-prompted relation needs a transformation endpoint;
2. ``require_samples`` (or ``samples_from_file`` for a path) checks the inputs;
3. ``with_sampling`` applies the task's suggested sampling, then the options given, to the
   chosen endpoint;
4. ``RunPlan.config`` builds the ``RunConfig``.

Endpoints are resolved by the caller between 2 and 4 (the CLI waits for the embedded model, the
page shows a spinner): resolving may start a server, so it comes after the cheap checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from app.clients import kind_of
from app.engine.workspace import all_relations, get_task
from app.inputs.errors import InputError
from app.inputs.input_files import MAX_INPUT_BYTES, load_input_file
from app.inputs.limits import MAX_ROWS
from core.run_config import (
    DEFAULT_NLI_TARGET,
    DEFAULT_REWRITE_CANDIDATES,
    MAX_REWRITE_CANDIDATES,
    NLI_TARGETS,
    RunConfig,
)
from core.tasks import Task
from core.types import Endpoint, Sample
from storage import Store


class RunSetupError(ValueError):
    """A choice that cannot make a run; the message is written for the person who made it."""


@dataclass(frozen=True)
class RunPlan:
    """A task and relations checked against the workspace, before endpoints are resolved."""

    task: Task
    relation_ids: tuple[str, ...]
    # An LLM-prompted relation rewrites inputs through a transformation endpoint.
    needs_transformation_endpoint: bool

    def config(
        self,
        endpoint: Endpoint,
        *,
        repeats: int = 1,
        seed: int = 0,
        dataset: str | None = None,
        transformation_endpoint: Endpoint | None = None,
        nli_target: str = DEFAULT_NLI_TARGET,
        rewrite_candidates: int = DEFAULT_REWRITE_CANDIDATES,
    ) -> RunConfig:
        """The run's config; ``transformation_endpoint`` stays None unless one was resolved."""
        if repeats < 1:
            raise RunSetupError("repeats must be at least 1")
        if nli_target not in NLI_TARGETS:
            raise RunSetupError(
                f"the NLI target must be one of {', '.join(NLI_TARGETS)}, not {nli_target!r}"
            )
        if not 1 <= rewrite_candidates <= MAX_REWRITE_CANDIDATES:
            raise RunSetupError(
                f"rewrite candidates must be between 1 and {MAX_REWRITE_CANDIDATES}"
            )
        return RunConfig(
            endpoint=endpoint,
            task_id=self.task.id,
            relation_ids=self.relation_ids,
            repeats=repeats,
            seed=seed,
            dataset=dataset,
            transformation_endpoint=transformation_endpoint,
            nli_target=nli_target,
            rewrite_candidates=rewrite_candidates,
        )


def relation_ids_from_text(text: str) -> tuple[str, ...]:
    """Comma-separated relation ids, blanks dropped (the CLI's ``--relations``)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def plan_run(store: Store, task_id: str, relation_ids: Sequence[str]) -> RunPlan:
    """Check the task and the relations; unknown ones raise ``RunSetupError``."""
    try:
        task = get_task(store, task_id)
    except KeyError as exc:
        raise RunSetupError(str(exc.args[0])) from None
    relation_ids = tuple(relation_ids)
    relations_by_id = {relation.id: relation for relation in all_relations(store)}
    unknown = [relation_id for relation_id in relation_ids if relation_id not in relations_by_id]
    if not relation_ids or unknown:
        raise RunSetupError(f"unknown relation(s): {', '.join(unknown) or '(none given)'}")
    needs_rewriter = any(relations_by_id[rid].kind == "llm" for rid in relation_ids)
    return RunPlan(task, relation_ids, needs_transformation_endpoint=needs_rewriter)


def require_samples(samples: Sequence[Sample], source: str) -> list[Sample]:
    """The inputs, or ``RunSetupError`` naming their source when there are none."""
    if not samples:
        raise RunSetupError(f"{source}: no inputs")
    return list(samples)


def samples_from_file(
    path: str | Path,
    task: Task,
    *,
    max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_INPUT_BYTES,
    encoding: str | None = None,
) -> list[Sample]:
    """An inputs file (CSV, JSONL or TXT) read with the suggested column mapping (at most
    ``max_rows`` rows and ``max_bytes`` bytes; ``encoding`` when the file's owner names one)."""
    if not Path(path).exists():
        raise RunSetupError(f"inputs file not found: {path}")
    try:
        samples = load_input_file(
            path, list(task.fields), max_rows=max_rows, max_bytes=max_bytes, encoding=encoding
        )
    except InputError as exc:
        raise RunSetupError(f"{path}: {exc}") from None
    return require_samples(samples, str(path))


def with_sampling(
    endpoint: Endpoint,
    *,
    task: Task | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    concurrency: int | None = None,
) -> Endpoint:
    """The endpoint with the run's sampling options.

    A ``task`` with suggested sampling (the reasoning task: the SI paper's §4 settings,
    temperature 0.7, top-p 0.95, 1,024 max tokens) replaces the endpoint's own; an option given
    explicitly wins over both; None keeps what is there.
    """
    suggested = dict(task.defaults) if task is not None else {}
    options = {
        "temperature": temperature if temperature is not None else suggested.get("temperature"),
        "top_p": top_p if top_p is not None else suggested.get("top_p"),
        "max_tokens": max_tokens if max_tokens is not None else suggested.get("max_tokens"),
        "concurrency": concurrency,
    }
    if options["max_tokens"] is not None:
        options["max_tokens"] = int(options["max_tokens"])
    return replace(
        endpoint, **{name: value for name, value in options.items() if value is not None}
    )


def endpoint_problem(config: RunConfig) -> str | None:
    """The pre-flight check of a run's endpoints (the one under test and, when it differs, the
    transformation endpoint): None when they answer, else one line saying why not."""
    kind = kind_of(config.endpoint)
    if not kind.sends_calls:
        return (
            f"{config.endpoint.name} is a {kind.name} endpoint: it answers only through "
            f"{kind.answered_offline_by}"
        )
    endpoints = [config.endpoint]
    if config.transformation_endpoint and config.transformation_endpoint != config.endpoint:
        endpoints.append(config.transformation_endpoint)
    for endpoint in endpoints:
        problem = kind_of(endpoint).preflight(endpoint)
        if problem:
            return problem
    return None
