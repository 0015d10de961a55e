"""Relation-extraction relations (LLMorph 141/142): swap the head and tail entities.

Whether the relation the model named is symmetric decides which of the two applies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from core.answers import AnswerType
from core.thresholds import threshold_rule
from core.types import OracleResult, ParsedOutput, Sample, Verdict
from relations.base import (
    CheckInput,
    Expectation,
    FollowUp,
    NotApplicable,
    Relation,
    RelationKind,
    SourcePrecondition,
    TransformContext,
)
from relations.oracles import unparseable
from relations.registry import register

CATEGORY = "task-specific"
RE_TASKS = frozenset({"relation_extraction"})


# Word stems of relations that read the same in both directions (X r Y ⇔ Y r X). Our own list.
SYMMETRIC_STEMS = (
    "sibling",
    "brother",
    "sister",
    "spouse",
    "married",
    "marriage",
    "partner",
    "cousin",
    "twin",
    "friend",
    "colleague",
    "coworker",
    "co-worker",
    "neighbo",
    "border",
    "adjacent",
    "teammate",
    "classmate",
    "ally",
    "allied",
    "alliance",
    "rival",
    "competitor",
    "opponent",
    "collaborat",
    "related",
    "same as",
    "equivalent",
    "synonym",
    "diplomatic",
)
# Stems that mark a direction even when a symmetric stem is also present ("half-sister of" is
# symmetric, "brother-in-law" is fine, but "sister company of" / "parent" are directional).
DIRECTIONAL_STEMS = ("parent", "subsidiary", "company", "founder", "owner", "member of")
_NO_RELATION = re.compile(r"^(?:no(?:ne)?(?: relation(?:ship)?)?|unknown|n/?a|not related)$")


def _relation_phrase(answer: str | None) -> str:
    return re.sub(r"\s+", " ", (answer or "").strip().lower())


def is_no_relation(answer: str | None) -> bool:
    """True for 'no relation', 'none', 'unknown' … (already normalised by the task parser)."""
    return bool(_NO_RELATION.match(_relation_phrase(answer).strip(" .")))


def is_symmetric_relation(answer: str | None) -> bool:
    """True when the relation phrase names a relation that holds both ways (our stem list)."""
    phrase = _relation_phrase(answer)
    if not phrase or is_no_relation(phrase):
        return False
    if any(stem in phrase for stem in DIRECTIONAL_STEMS):
        return False
    words = re.findall(r"[a-z][a-z-]*", phrase)
    for stem in SYMMETRIC_STEMS:
        if " " in stem:
            if stem in phrase:
                return True
        elif any(word.startswith(stem) for word in words):
            return True
    return False


def _swap_entities(symmetric: bool):
    def build(
        sample: Sample, task_id: str, task_fields: Sequence[str], ctx: TransformContext
    ) -> list[FollowUp]:
        head = (sample.fields.get("head") or "").strip()
        tail = (sample.fields.get("tail") or "").strip()
        if not head or not tail:
            raise NotApplicable("the sample needs both a head and a tail entity")
        if head.lower() == tail.lower():
            raise NotApplicable("head and tail are the same entity: swapping changes nothing")
        declared = sample.meta.get("symmetric") if sample.meta else None
        if declared is not None and bool(declared) != symmetric:
            kind = "symmetric" if declared else "asymmetric"
            raise NotApplicable(f"precondition: the sample declares a {kind} relation")
        fields = dict(sample.fields)
        fields["head"], fields["tail"] = sample.fields["tail"], sample.fields["head"]
        return [FollowUp(fields=fields, target="head+tail", note="head and tail swapped")]

    return build


def _similarity(ci: CheckInput, source: str, followup: str) -> float:
    if _relation_phrase(source) == _relation_phrase(followup):
        return 1.0
    return float(ci.similarity(source, followup))


def _not_symmetric(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    if is_symmetric_relation(source.answer):
        return None
    return f"{source.answer!r} is not a known symmetric relation"


def _not_directed(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    if is_no_relation(source.answer):
        return "the source output names no relation"
    if is_symmetric_relation(source.answer):
        return f"{source.answer!r} is a symmetric relation"
    return None


# Which of 141 / 142 applies depends on the relation the model named for the source.
SYMMETRIC_SOURCE = SourcePrecondition(
    name="symmetric_source",
    description="The source output must name a symmetric relation (our list).",
    unmet=_not_symmetric,
)
DIRECTED_SOURCE = SourcePrecondition(
    name="directed_source",
    description="The source output must name a relation, and not a symmetric one.",
    unmet=_not_directed,
)


def _compare_relations(ci: CheckInput, oracle: str, default: float) -> OracleResult | tuple:
    """The shared part of 141 and 142: an error for unparseable outputs, else (cosine of the two
    relation phrases, threshold, verdict under the oracle's threshold rule, details)."""
    error = unparseable(oracle, ci)
    if error:
        return error
    source, followup = ci.source.answer or "", ci.followup.answer or ""
    threshold = ci.threshold if ci.threshold is not None else default
    value = _similarity(ci, source, followup)
    details = {"source": source, "followup": followup, "threshold": threshold}
    return value, threshold, threshold_rule(oracle).verdict(value, threshold), details


def same_relation_when_symmetric(ci: CheckInput) -> OracleResult:
    """141: for a symmetric relation (``SYMMETRIC_SOURCE``) the swapped pair must get an
    equivalent relation phrase."""
    compared = _compare_relations(ci, "semantic_similar", 0.8)
    if isinstance(compared, OracleResult):
        return compared
    value, threshold, verdict, details = compared
    if verdict is Verdict.PASS:
        reason = f"same relation (cos {value:.2f})"
    else:
        reason = f"relation changed after swapping a symmetric pair (cos {value:.2f} < {threshold})"
    return OracleResult(verdict, "semantic_similar", value, reason, details)


def different_relation_when_asymmetric(ci: CheckInput) -> OracleResult:
    """142: for a directional relation (``DIRECTED_SOURCE``) the swapped pair must not get the
    same relation phrase."""
    compared = _compare_relations(ci, "semantic_different", 0.9)
    if isinstance(compared, OracleResult):
        return compared
    value, threshold, verdict, details = compared
    if verdict is Verdict.FAIL:
        reason = f"same directed relation after swapping (cos {value:.2f} ≥ {threshold})"
    else:
        reason = f"relation changed (cos {value:.2f})"
    return OracleResult(verdict, "semantic_different", value, reason, details)


_RE_EXAMPLE = {
    "text": "Maria Lopez and her husband Daniel Reyes opened a bakery in Seville in 2015.",
    "head": "Maria Lopez",
    "tail": "Daniel Reyes",
}
_RE_ASYMMETRIC_EXAMPLE = {
    "text": "The novel Blue Harbour was written by Ines Moreau and published in 1998.",
    "head": "Ines Moreau",
    "tail": "Blue Harbour",
}

register(
    Relation(
        id="re.swap_symmetric",
        name="Swap symmetric entities",
        family="re",
        category=CATEGORY,
        description=(
            "Swap the head and tail entities. For a symmetric relation (spouse, sibling, borders, "
            "partner …) the model should name the same relation."
        ),
        example=_RE_EXAMPLE["text"],
        kind=RelationKind.RULE,
        expectation=Expectation.EQUIVALENT,
        build=_swap_entities(symmetric=True),
        check=same_relation_when_symmetric,
        source_precondition=SYMMETRIC_SOURCE,
        tasks=RE_TASKS,
        per_field=False,
        preconditions=(
            "Only for symmetric relations: the source output must name a relation from the "
            "symmetric list (otherwise SKIP); a sample with meta symmetric=false is skipped. "
            "Head and tail must differ."
        ),
        ref="LLMorph 141",
        threshold=0.8,
        params={"example_fields": dict(_RE_EXAMPLE)},
    )
)
register(
    Relation(
        id="re.swap_asymmetric",
        name="Swap asymmetric entities",
        family="re",
        category=CATEGORY,
        description=(
            "Swap the head and tail entities. For a directional relation (author of, capital of, "
            "parent of …) the model should no longer name the same relation."
        ),
        example=_RE_ASYMMETRIC_EXAMPLE["text"],
        kind=RelationKind.RULE,
        expectation=Expectation.DIFFERENT,
        build=_swap_entities(symmetric=False),
        check=different_relation_when_asymmetric,
        source_precondition=DIRECTED_SOURCE,
        tasks=RE_TASKS,
        per_field=False,
        preconditions=(
            "Only for asymmetric relations: SKIP when the source output is 'no relation' or a "
            "symmetric relation; a sample with meta symmetric=true is skipped. Head and tail "
            "must differ."
        ),
        ref="LLMorph 142",
        threshold=0.9,
        params={"example_fields": dict(_RE_ASYMMETRIC_EXAMPLE)},
    )
)
