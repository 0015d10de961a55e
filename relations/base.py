"""Base types of a metamorphic relation: a transformation + an expected output relation.

A relation transforms one input field (``transform(text, ctx) -> text``) or, for multi-input and
task-specific relations, builds whole follow-ups itself (``build``). Either may raise
``NotApplicable`` — that becomes a SKIP verdict with the reason, never a PASS.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from core.answers import AnswerType, TaskProfile

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


# Input fields that state a claim judged against another field: the NLI hypothesis, judged against
# the premise. A relation that adds content (a random word or sentence) changes what a claim says,
# so "same label" is logically wrong there; such relations keep these fields whatever the run asks
# (LLMorph applies its word insertion (9) and random sentence (84) to the NLI premise only). Every
# other same-label relation leaves them as they are unless the run's NLI target says otherwise
# (``relations.apply.kept_fields_of``).
CLAIM_FIELDS = frozenset({"hypothesis"})
# The fields of an NLI pair: relations that LLMorph leaves out of NLI gate on them.
NLI_FIELDS = frozenset({"premise", "hypothesis"})


class NotApplicable(Exception):  # noqa: N818 - it is a signal, not an error
    """Raised by a transformation whose precondition does not hold (→ SKIP with this reason)."""


# LLM rewrite hook: prompt in, completion text out (cached, through the transformation endpoint).
Rewriter = Callable[[str], str]
# The n-th of several rewrite candidates for one prompt (n = 0 is what ``Rewriter`` answers): each
# candidate is sampled with its own seed and cached under its own key.
CandidateRewriter = Callable[[str, int], str]
# The validity gate's verdict on one rewritten field: None when it may be sent, else the reason.
CandidateCheck = Callable[[str, str], "str | None"]


@dataclass
class TransformContext:
    """Everything a transformation may use. All randomness comes from ``rng`` (seeded per case)."""

    rng: random.Random
    seed: int
    task_id: str
    field: str
    sample_fields: dict[str, str]
    answer_type: AnswerType | None = None  # the task's, when the caller knows the task
    partners: Sequence[Sample] = ()  # the next samples of the batch, wrapping (for interleave…)
    rewrite: Rewriter | None = None
    params: dict[str, Any] = field(default_factory=dict)
    # Best of k (LLM-prompted relations): how many candidates to ask for, how to ask for the n-th,
    # the gate's check of a candidate and the input similarity that ranks the passing ones.
    candidates: int = 1
    rewrite_candidate: CandidateRewriter | None = None
    check_candidate: CandidateCheck | None = None
    similarity: Callable[[str, str], float] | None = None
    # Prompts with worked examples (the bench compares them; no run asks for them: the embedded
    # SmolLM2 copied them into its rewrites, bench/bench_rewriter_models.py).
    few_shot: bool = False
    # The rewriter is a small model: a rewrite that may be asked sentence by sentence is
    # (``relations.candidates.best_by_sentence``).
    by_sentence: bool = False
    # What the transformation wants kept with the case (e.g. the candidates it tried).
    details: dict[str, Any] = field(default_factory=dict)

    def require_rewriter(self) -> Rewriter:
        if self.rewrite is None:
            raise NotApplicable(
                "no transformation endpoint configured for this LLM-prompted relation"
            )
        return self.rewrite

    def candidate_count(self) -> int:
        """How many rewrite candidates may be asked for: 1 without a candidate rewriter."""
        return max(1, self.candidates) if self.rewrite_candidate is not None else 1

    def rewriter_for(self, candidate: int) -> Rewriter:
        """The rewrite hook of the ``candidate``-th candidate (0: the plain rewriter)."""
        rewrite = self.require_rewriter()
        if candidate == 0 or self.rewrite_candidate is None:
            return rewrite
        ask = self.rewrite_candidate
        return lambda prompt: ask(prompt, candidate)


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
    details: dict[str, Any] = field(default_factory=dict)  # kept in the case's details


@dataclass(frozen=True)
class CheckInput:
    """What a relation-specific checker receives."""

    source: ParsedOutput
    followup: ParsedOutput
    companions: dict[str, ParsedOutput]
    answer_type: str
    threshold: float | None
    similarity: Callable[[str, str], float]


@dataclass(frozen=True)
class TaskGate:
    """Which tasks a relation applies to, judged by what a task is rather than by its id.

    So a custom task gets the relation exactly when a built-in task of the same kind would.
    """

    answer_types: frozenset[AnswerType] | None = None  # None: any answer type
    unless_fields: frozenset[str] = frozenset()  # a task with any of these input fields is out

    def admits(self, task: TaskProfile) -> bool:
        if self.answer_types is not None and AnswerType(task.answer_type) not in self.answer_types:
            return False
        return not self.unless_fields.intersection(task.fields)


NOT_FOR_NLI = TaskGate(unless_fields=NLI_FIELDS)


# Why a source output is outside a precondition (a short phrase), or None when it is inside.
Unmet = Callable[["ParsedOutput", Mapping[str, "ParsedOutput"], AnswerType], str | None]


@dataclass(frozen=True)
class SourcePrecondition:
    """What the source output must be for a relation's expected output relation to mean anything.

    LLMorph checks such "verifications" on the source output before it compares outputs (its
    catalogue: a "should change" relation needs a source that is not neutral / 'unknown' / 'no
    relation'; an intensifier needs a source score other than 0.5 …). A source outside the
    precondition makes the case SKIP with reason ``precondition: …`` — never PASS, never FAIL.
    ``unmet`` returns None when it cannot read what it needs: the oracle then reports the ERROR.
    """

    name: str
    description: str
    unmet: Unmet


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
    # What the source output must be for the expectation to apply (None: the default of the
    # expectation, see ``relations.oracles.source_precondition_of``).
    source_precondition: SourcePrecondition | None = None
    tasks: frozenset[str] | None = None  # None: any task (task-specific families name theirs)
    gate: TaskGate | None = None  # applies only to the tasks this gate admits
    fields: tuple[str, ...] | None = None  # restrict to these input fields (None: the task's)
    # Input fields never transformed, whatever the task (e.g. CLAIM_FIELDS for added content).
    kept_fields: frozenset[str] = frozenset()
    per_field: bool = True  # multi-field tasks: one follow-up per field and one for all
    joint_target: bool = True  # with per_field: also the follow-up changing all fields at once
    preconditions: str = ""
    ref: str = ""  # paper / LLMorph catalogue number
    side: str | None = None  # AgentDiff: "meaning" or "presentation"
    negative_control: bool = False
    noise_floor: bool = False  # the unchanged input re-sampled: its violations are sampling noise
    similarity_floor: float | None = None  # validity gate: min source/follow-up input similarity
    threshold: float | None = None  # oracle threshold override (similarity θ, ε …)
    inverse: Callable[[str], str] | None = None
    requires: tuple[str, ...] = ()  # e.g. ("wordnet",)
    params: dict[str, Any] = field(default_factory=dict)

    def applies_to(self, task: TaskProfile) -> bool:
        if self.tasks is not None and task.id not in self.tasks:
            return False
        return self.gate is None or self.gate.admits(task)

    def task_ids(self, known_tasks: Iterable[TaskProfile] = ()) -> list[str] | None:
        """Ids of the tasks the relation applies to, sorted; None when it applies to any task.

        A gated relation lists those of ``known_tasks`` its gate admits.
        """
        if self.gate is not None:
            return sorted(task.id for task in known_tasks if self.applies_to(task))
        return sorted(self.tasks) if self.tasks is not None else None
