"""What the CLI and the pages share on top of the store: tasks, relations, runners, endpoints."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.engine.embedder import EmbeddingCache, default_embedder
from core.tasks import BUILTIN_TASKS, Task, custom_task
from relations.base import Relation
from storage import Store

if TYPE_CHECKING:
    from app.engine.runner import Runner


def all_tasks(store: Store) -> dict[str, Task]:
    """Built-in tasks plus the custom ones saved in the store."""
    tasks = dict(BUILTIN_TASKS)
    for row in store.custom_task_rows():
        try:
            task = custom_task(
                row["id"], row["name"], row["template"], row["answer_type"], row["labels"]
            )
        except ValueError:
            continue  # a row saved by an older version that no longer validates
        tasks[task.id] = task
    return tasks


def get_task(store: Store, task_id: str) -> Task:
    tasks = all_tasks(store)
    if task_id not in tasks:
        raise KeyError(f"unknown task {task_id!r}; known: {', '.join(sorted(tasks))}")
    return tasks[task_id]


def custom_relations(store: Store) -> list[Relation]:
    from relations.custom import custom_relations as load

    return load(store)


def all_relations(store: Store, task_id: str | None = None) -> list[Relation]:
    """Built-in and custom relations; with a task id (built-in or custom), those that apply to it."""
    from relations.registry import list_relations

    task = get_task(store, task_id) if task_id is not None else None
    return list_relations(task, extra=custom_relations(store))


def make_runner(store: Store, embedder_factory: Callable | None = None) -> Runner:
    """A runner on ``store``; its embedder comes from ``embedder_factory``, by default
    ``default_embedder`` as this module holds it when called (one MiniLM per process)."""
    # Imported here: the runner pulls in the model clients (openai) and scipy, which the
    # listing commands (`relations`, `transform`) never need.
    from app.engine.runner import Runner

    embeddings = EmbeddingCache((embedder_factory or default_embedder)(), store)
    return Runner(store, embeddings, custom_relations=custom_relations(store))
