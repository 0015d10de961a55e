"""The relation registry. Built-ins register through the same door as user extensions."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from core.answers import TaskProfile
from relations.base import Expectation, Relation, RelationKind, TransformFn

REGISTRY: dict[str, Relation] = {}

# One module per family; importing a module registers its relations.
BUILTIN_MODULES = (
    "relations.si",
    "relations.rrb",
    "relations.ad",
    "relations.char",
    "relations.word",
    "relations.sentence",
    "relations.nli",
    "relations.relation_extraction",
    "relations.sentiment",
    "relations.multi",
)
_loaded = False


def register(relation: Relation) -> Relation:
    if relation.id in REGISTRY and REGISTRY[relation.id] is not relation:
        raise ValueError(f"relation id {relation.id!r} registered twice")
    REGISTRY[relation.id] = relation
    return relation


def transform_relation(
    *,
    id: str,
    name: str,
    category: str,
    description: str,
    example: str,
    kind: RelationKind = RelationKind.RULE,
    expectation: Expectation = Expectation.EQUIVALENT,
    **extra: Any,
) -> Callable[[TransformFn], TransformFn]:
    """Decorator: register a text transformation ``fn(text, ctx) -> text`` as a relation."""

    def decorate(fn: TransformFn) -> TransformFn:
        register(
            Relation(
                id=id,
                name=name,
                family=id.split(".", 1)[0],
                category=category,
                description=description,
                example=example,
                kind=kind,
                expectation=expectation,
                transform=fn,
                **extra,
            )
        )
        return fn

    return decorate


def load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    _loaded = True


def list_relations(
    task: TaskProfile | None = None, extra: Iterable[Relation] = ()
) -> list[Relation]:
    """Built-in relations (plus ``extra``, e.g. custom ones from the store), sorted by id.

    With a ``task``, only those that apply to it.
    """
    load_builtins()
    relations = list(REGISTRY.values()) + list(extra)
    if task is not None:
        relations = [r for r in relations if r.applies_to(task)]
    return sorted(relations, key=lambda r: r.id)


def get_relation(relation_id: str, extra: Iterable[Relation] = ()) -> Relation:
    load_builtins()
    for relation in extra:
        if relation.id == relation_id:
            return relation
    try:
        return REGISTRY[relation_id]
    except KeyError:
        raise KeyError(f"unknown relation {relation_id!r}") from None
