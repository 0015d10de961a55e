"""Metamorphic relations: base types, the registry, one module per family, oracles, validity gate.

Importing this package registers every built-in relation (same door as user extensions).
"""

from relations.base import (
    Expectation,
    FollowUp,
    NotApplicable,
    Relation,
    RelationKind,
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
    "TransformContext",
    "get_relation",
    "list_relations",
    "register",
]
