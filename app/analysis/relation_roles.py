"""What the metrics need to know about each relation, read from the relations' attributes: which
re-sample the unchanged input (the noise floor), which are invariance relations, and which are the
SI paper's transformations (MAD and stability)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# The SI paper's family: its 8 transformations (the contrastive negative control included) are the
# only relations MAD and stability are computed over (SI §3.1, Table 3).
SI_FAMILY = "si"


@dataclass(frozen=True)
class RelationRoles:
    """The relation ids in each role.

    ``noise_floor``: ids of relations that re-sample the unchanged input (``si.identity``);
    ``invariance``: ids whose expectation is "equivalent" — the only ones a noise floor is
    subtracted from (floor relations excluded), and the relations the statistical tests compare
    (with the floor relations); ``paper``: the SI paper's transformations (family ``si``,
    identity included), the only relations MAD and stability count. Relations unknown here (e.g.
    imported logs of a relation no longer registered) are in none of the sets.
    """

    noise_floor: frozenset[str]
    invariance: frozenset[str]
    paper: frozenset[str] = frozenset()

    @classmethod
    def of(cls, relations: Iterable[Any]) -> RelationRoles:
        from relations.base import Expectation

        relations = list(relations)
        floor = frozenset(r.id for r in relations if r.noise_floor)
        invariance = (
            frozenset(r.id for r in relations if r.expectation is Expectation.EQUIVALENT) - floor
        )
        paper = frozenset(r.id for r in relations if r.family == SI_FAMILY)
        return cls(noise_floor=floor, invariance=invariance, paper=paper)


def relation_roles(store=None) -> RelationRoles:
    """The roles of the built-in relations and, given a store, its custom ones."""
    from relations.registry import list_relations

    extra: list[Any] = []
    if store is not None and hasattr(store, "custom_relation_specs"):
        from relations.custom import custom_relations

        extra = custom_relations(store)
    return RelationRoles.of(list_relations(extra=extra))
