"""A relation's catalog entry: what the Relations page, ``relations --json`` and the CLI show.

Apart from ``relations.base`` because the entry reads the oracles (a relation's default source
precondition comes from its expectation there), and the oracles build on ``relations.base``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.answers import TaskProfile
from relations.base import Relation
from relations.oracles import source_precondition_of
from relations.requirements import availability


def describe_relation(
    relation: Relation, known_tasks: Iterable[TaskProfile] = ()
) -> dict[str, Any]:
    """The catalog entry, JSON-serialisable: what the Relations page and the CLI show.

    ``known_tasks`` are the tasks to list for a relation gated by answer type or field.
    """
    task_ids = relation.task_ids(known_tasks)
    available, why = availability(relation.requires, quick=True)  # a listing: no NLTK import
    source_precondition = source_precondition_of(relation)
    return {
        "id": relation.id,
        "name": relation.name,
        "family": relation.family,
        "category": relation.category,
        "description": relation.description,
        "example": relation.example,
        "kind": str(relation.kind),
        "output_relation": str(relation.expectation),
        "preconditions": relation.preconditions,
        "source_precondition": source_precondition.description if source_precondition else None,
        "tasks": task_ids if task_ids is not None else ["*"],
        "fields": list(relation.fields) if relation.fields else None,
        "kept_fields": sorted(relation.kept_fields) or None,
        "ref": relation.ref,
        "side": relation.side,
        "negative_control": relation.negative_control,
        "invertible": relation.inverse is not None,
        "available": available,
        "unavailable_reason": why,
    }
