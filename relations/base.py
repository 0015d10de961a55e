"""Base types of a metamorphic relation: a transformation + an expected output relation.

A relation transforms one input field (``transform(text, ctx) -> text``) or, for multi-input and
task-specific relations, builds whole follow-ups itself (``build``). Either may raise
``NotApplicable`` — that becomes a SKIP verdict with the reason, never a PASS.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.types import OracleResult, ParsedOutput, Sample


class RelationKind(StrEnum):
    RULE = "rule"  # pure function of the text and the seeded generator
    LIBRARY = "library"  # nlpaug / WordNet
    LLM = "llm"  # rewritten by the transformation endpoint


class Expectation(StrEnum):
    """What the follow-up output should be, relative to the source output.

    The concrete oracle depends on the task's answer type (see ``relations.oracles``):
    EQUIVALENT → equal_label / numeric_within / math_equivalent / semantic_similar;
    DIFFERENT → label_changes / semantic_different.
    """

    EQUIVALENT = "equivalent"
    DIFFERENT = "different"
    AT_LEAST_AS_EXTREME = "at_least_as_extreme"
    ORDER_PRESERVED = "order_preserved"
    TRANSITIVE = "transitive"
    NO_POLAR_FLIP = "no_polar_flip"


class NotApplicable(Exception):  # noqa: N818 - it is a signal, not an error
    """Raised by a transformation whose precondition does not hold (→ SKIP with this reason)."""


# LLM rewrite hook: prompt in, completion text out (cached, through the transformation endpoint).
Rewriter = Callable[[str], str]


@dataclass
class TransformContext:
    """Everything a transformation may use. All randomness comes from ``rng`` (seeded per case)."""

    rng: random.Random
    seed: int
    task_id: str
    field: str
    sample_fields: dict[str, str]
    partners: Sequence[Sample] = ()  # the next samples of the batch, wrapping (for interleave…)
    rewrite: Rewriter | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def require_rewriter(self) -> Rewriter:
        if self.rewrite is None:
            raise NotApplicable(
                "no transformation endpoint configured for this LLM-prompted relation"
            )
        return self.rewrite


@dataclass(frozen=True)
class FollowUp:
    """One follow-up input produced by a relation.

    ``preamble`` is put before the rendered task prompt (e.g. rrb decoding rules);
    ``source_fields`` replaces the source input when a relation derives the source too;
    ``companions`` are extra inputs the runner also calls, whose parsed outputs the oracle gets
    under the same names (multi-input relations).
    """

    fields: dict[str, str]
    target: str
    preamble: str | None = None
    source_fields: dict[str, str] | None = None
    companions: dict[str, dict[str, str]] = field(default_factory=dict)
    note: str = ""
    transformed: str | None = None  # the bare transformed text (rrb: without decoding rules)


@dataclass(frozen=True)
class CheckInput:
    """What a relation-specific checker receives."""

    source: ParsedOutput
    followup: ParsedOutput
    companions: dict[str, ParsedOutput]
    answer_type: str
    threshold: float | None
    similarity: Callable[[str, str], float]


TransformFn = Callable[[str, TransformContext], str]
BuildFn = Callable[["Sample", str, Sequence[str], TransformContext], list[FollowUp]]
CheckFn = Callable[[CheckInput], "OracleResult"]


@dataclass(frozen=True)
class Relation:
    """A metamorphic relation. Exactly one of ``transform`` / ``build`` is set."""

    id: str  # stable, ``family.name``
    name: str
    family: str
    category: str
    description: str
    example: str  # a worked example input; the page shows its follow-up live
    kind: RelationKind
    expectation: Expectation
    transform: TransformFn | None = None
    build: BuildFn | None = None
    check: CheckFn | None = None  # overrides the generic oracle
    tasks: frozenset[str] | None = None  # None: any task
    fields: tuple[str, ...] | None = None  # restrict to these input fields (None: the task's)
    per_field: bool = True  # multi-field tasks: one follow-up per field and one for all
    preconditions: str = ""
    ref: str = ""  # paper / LLMorph catalogue number
    side: str | None = None  # AgentDiff: "meaning" or "presentation"
    negative_control: bool = False
    similarity_floor: float | None = None  # validity gate: min source/follow-up input similarity
    threshold: float | None = None  # oracle threshold override (similarity θ, ε …)
    inverse: Callable[[str], str] | None = None
    requires: tuple[str, ...] = ()  # e.g. ("wordnet",)
    params: dict[str, Any] = field(default_factory=dict)

    def applies_to(self, task_id: str) -> bool:
        return self.tasks is None or task_id in self.tasks

    def describe(self) -> dict[str, Any]:
        """The catalog entry (SPEC §3 fields), JSON-serialisable."""
        from relations.requirements import availability

        available, why = availability(self.requires)
        return {
            "id": self.id,
            "name": self.name,
            "family": self.family,
            "category": self.category,
            "description": self.description,
            "example": self.example,
            "kind": str(self.kind),
            "output_relation": str(self.expectation),
            "preconditions": self.preconditions,
            "tasks": sorted(self.tasks) if self.tasks is not None else ["*"],
            "fields": list(self.fields) if self.fields else None,
            "ref": self.ref,
            "side": self.side,
            "negative_control": self.negative_control,
            "invertible": self.inverse is not None,
            "available": available,
            "unavailable_reason": why,
        }
