"""What the metrics need to know about each relation, read from the relations' attributes: which
re-sample the unchanged input (the noise floor), which are invariance relations, and which stay
out of MAD and stability."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# The SI paper's family: all of its relations (the contrastive negative control included) enter
# MAD and stability, whatever their expectation.
SI_FAMILY = "si"


@dataclass(frozen=True)
class RelationRoles:
    """The relation ids in each role.

    ``noise_floor``: ids of relations that re-sample the unchanged input (``si.identity``);
    ``invariance``: ids whose expectation is "equivalent" — the only ones a noise floor is
    subtracted from (floor relations excluded); ``outside_mad``: the "should change" relations
    of families other than the SI paper's, which never enter MAD or stability (their Δ measures a
    change the relation asks for, not a failure of invariance). Relations unknown here (e.g.
    imported logs of a relation no longer registered) are in none of the sets.
    """

    noise_floor: frozenset[str]
    invariance: frozenset[str]
    outside_mad: frozenset[str] = frozenset()

    @classmethod
    def of(cls, relations: Iterable[Any]) -> RelationRoles:
        from relations.base import Expectation
        from relations.validity import MEANING_PRESERVING

        relations = list(relations)
        floor = frozenset(r.id for r in relations if r.noise_floor)
        invariance = (
            frozenset(r.id for r in relations if r.expectation is Expectation.EQUIVALENT) - floor
        )
        outside_mad = frozenset(
            r.id
            for r in relations
            if r.family != SI_FAMILY and r.expectation not in MEANING_PRESERVING
        )
        return cls(noise_floor=floor, invariance=invariance, outside_mad=outside_mad)


def relation_roles(store=None) -> RelationRoles:
    """The roles of the built-in relations and, given a store, its custom ones."""
    from relations.registry import list_relations

    extra: list[Any] = []
    if store is not None and hasattr(store, "custom_relation_specs"):
        from relations.custom import custom_relations

        extra = custom_relations(store)
    return RelationRoles.of(list_relations(extra=extra))


def outside_mad_relations(store) -> tuple[str, ...]:
    """Ids of the relations that never enter MAD or stability (see ``RelationRoles``)."""
    return tuple(sorted(relation_roles(store).outside_mad))
