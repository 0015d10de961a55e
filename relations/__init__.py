"""Metamorphic relations: base types, the registry, one module per family, oracles, validity gate.

The built-in relations register (through the same door as user extensions) the first time the
registry is asked for a relation.
"""

from relations.base import (
    Expectation,
    FollowUp,
    NotApplicable,
    Relation,
    RelationKind,
    TaskGate,
    TransformContext,
)
from relations.registry import REGISTRY, get_relation, list_relations, register

__all__ = [
    "REGISTRY",
    "Expectation",
    "FollowUp",
    "NotApplicable",
    "Relation",
    "RelationKind",
    "TaskGate",
    "TransformContext",
    "get_relation",
    "list_relations",
    "register",
]
