"""The relation registry. Built-ins register through the same door as user extensions.

The built-in families are found by themselves: each module of ``relations/`` that is not support
code (``SUPPORT_MODULES``) is a family, and importing it registers its relations.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import Any

from core.answers import TaskProfile
from relations.base import Expectation, Relation, RelationKind, TransformFn

REGISTRY: dict[str, Relation] = {}

# Support code directly under ``relations/``: every other module or package there is a family
# and is imported by ``load_builtins`` (importing it registers its relations). So a new family
# is one new module; a new support module belongs in this list (unlisted, it is merely imported).
SUPPORT_MODULES = frozenset(
    {
        "apply",  # follow-up generation
        "base",  # the relation types
        "catalog",  # a relation's catalog entry
        "candidates",  # best of k rewrite candidates of LLM-prompted relations
        "custom",  # user-defined relations, loaded from the store by the app
        "edits",  # a follow-up as edits against its source (violation shrinking)
        "english",  # the grammar engine of the word relations
        "llm_prompts",
        "oracles",
        "registry",
        "requirements",
        "rrb_grids",  # the rrb family's pure encoders
        "rrb_lexical",
        "rrb_text",
        "text_utils",
        "validity",  # the follow-up validity gate
        "wordnet",
    }
)


def family_modules() -> list[str]:
    """The built-in family modules, by name: every module of the package but the support ones."""
    package = importlib.import_module("relations")
    names = [info.name for info in pkgutil.iter_modules(package.__path__)]
    return [f"relations.{name}" for name in sorted(names) if name not in SUPPORT_MODULES]


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
    for module in family_modules():
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
