"""Multi-input relations (systematicity / transitivity seeds): the oracle relates several outputs.

``multi.pairwise_order`` (pairwise systematicity): the source x1 and a partner x2 get the same
neutral sentence appended; if the model scores x1 above x2, it must still score x1' above x2'.
``multi.nli_transitivity`` (three-way transitivity): entail(a, b) ∧ entail(b, c) ⇒ entail(a, c).

Both ``build`` their follow-ups with ``companions`` — extra inputs the runner also sends to the
endpoint; their parsed outputs come back in ``CheckInput.companions`` under the same names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from core.answers import AnswerType, parse_number
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

CATEGORY = "multi-input"

# Sentences with no sentiment of their own (our own wording), appended to both inputs of a pair.
NEUTRAL_SENTENCES = (
    "I read this on a Tuesday afternoon.",
    "The text was written in English.",
    "This note was typed on a laptop.",
    "It is one of several comments on the same topic.",
    "The review was posted online.",
    "I am writing this from my kitchen table.",
)


def _text_field(task_fields: Sequence[str]) -> str:
    return "text" if "text" in task_fields else task_fields[0]


def _append(text: str, sentence: str) -> str:
    return f"{text.rstrip()} {sentence}"


def build_pairwise_order(
    sample: Sample, task_id: str, task_fields: Sequence[str], ctx: TransformContext
) -> list[FollowUp]:
    """Source x1 = the sample, partner x2 = the next sample; both get the same neutral sentence."""
    field = _text_field(task_fields)
    if not ctx.partners:
        raise NotApplicable("needs a partner input (the next sample of the batch)")
    partner = ctx.partners[0]
    source_text = (sample.fields.get(field) or "").strip()
    partner_text = (partner.fields.get(field) or "").strip()
    if not source_text or not partner_text:
        raise NotApplicable(f"the sample and its partner both need a non-empty {field}")
    if source_text == partner_text:
        raise NotApplicable("the partner is the same text as the source: no order to compare")
    sentence = (
        ctx.params.get("sentence") or NEUTRAL_SENTENCES[ctx.rng.randrange(len(NEUTRAL_SENTENCES))]
    )
    followup = dict(sample.fields)
    followup[field] = _append(sample.fields[field], sentence)
    partner_followup = dict(partner.fields)
    partner_followup[field] = _append(partner.fields[field], sentence)
    return [
        FollowUp(
            fields=followup,
            target=field,
            companions={
                "partner_source": dict(partner.fields),
                "partner_followup": partner_followup,
            },
            note=f"appended to both: {sentence}",
        )
    ]


def _score(answer: str | None) -> float | None:
    if answer is None:
        return None
    try:
        return float(answer)
    except ValueError:
        return parse_number(answer)


def _tied_sources(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    partner = companions.get("partner_source")
    s1 = _score(source.answer)
    s2 = _score(partner.answer) if partner is not None else None
    if s1 is None or s2 is None or math.isnan(s1) or math.isnan(s2):
        return None  # unreadable: the check reports the ERROR
    if s1 == s2:
        return f"the source scores tie ({s1:g} = {s2:g}): there is no order to preserve"
    return None


# Pairwise systematicity (seed §4) compares the order of two inputs: with equal source scores
# there is no order, so the relation does not apply (SKIP), it does not hold (PASS).
UNTIED_SOURCES = SourcePrecondition(
    name="untied_sources",
    description="The source x1 and its partner x2 must get different scores.",
    unmet=_tied_sources,
)


def order_preserved(ci: CheckInput) -> OracleResult:
    """If x1 scores above (below) x2, then x1' must score above (below) x2'.

    Ties of the source scores never get here: they are outside ``UNTIED_SOURCES`` (SKIP).
    """
    oracle = "order_preserved"
    error = unparseable(oracle, ci, ("partner_source", "partner_followup"))
    if error:
        return error
    s1, s2 = _score(ci.source.answer), _score(ci.companions["partner_source"].answer)
    f1, f2 = _score(ci.followup.answer), _score(ci.companions["partner_followup"].answer)
    details = {"source": s1, "partner_source": s2, "followup": f1, "partner_followup": f2}
    if any(value is None or math.isnan(value) for value in (s1, s2, f1, f2)):
        return OracleResult(
            Verdict.ERROR, oracle, reason="a score could not be read", details=details
        )
    assert s1 is not None and s2 is not None and f1 is not None and f2 is not None
    source_sign = ">" if s1 > s2 else "<"
    followup_sign = ">" if f1 > f2 else "<" if f1 < f2 else "="
    order = f"source {s1:g} {source_sign} {s2:g}, follow-up {f1:g} {followup_sign} {f2:g}"
    if source_sign == followup_sign:
        return OracleResult(Verdict.PASS, oracle, 1.0, f"order preserved: {order}", details)
    return OracleResult(Verdict.FAIL, oracle, 0.0, f"order not preserved: {order}", details)


register(
    Relation(
        id="multi.pairwise_order",
        name="Pairwise order under a neutral sentence",
        family="multi",
        category=CATEGORY,
        description=(
            "Append the same neutral sentence to the source x1 and to a partner x2 (the next "
            "sample). Whichever of the two the model scored more positive must stay more positive."
        ),
        example="Light, cute and forgettable.",
        kind=RelationKind.RULE,
        expectation=Expectation.ORDER_PRESERVED,
        build=build_pairwise_order,
        check=order_preserved,
        source_precondition=UNTIED_SOURCES,
        tasks=frozenset({"sentiment_score"}),
        per_field=False,
        preconditions=(
            "Needs a partner sample with a different text (the next one in the batch). Equal "
            "source scores are SKIP (there is no order to preserve)."
        ),
        ref="Systematicity seed §4 (pairwise systematicity)",
        params={
            "example_fields": {"text": "Light, cute and forgettable."},
            "example_partners": [{"text": "A masterpiece four years in the making."}],
        },
    )
)


# ---------------------------------------------------------------- three-way NLI transitivity

ENTAILMENT = "entailment"


def build_nli_transitivity(
    sample: Sample, task_id: str, task_fields: Sequence[str], ctx: TransformContext
) -> list[FollowUp]:
    """a, b, c are the premises of the sample and its next two partners.

    Source = (a, b), companion ``bc`` = (b, c), follow-up = (a, c). A dataset laid out as a chain
    (each row's premise implied by the previous row's) exercises the relation directly.
    """
    if len(ctx.partners) < 2:
        raise NotApplicable("needs two partner samples (the next two of the batch)")
    a, b, c = (
        (s.fields.get("premise") or "").strip() for s in (sample, ctx.partners[0], ctx.partners[1])
    )
    if not (a and b and c):
        raise NotApplicable("the sample and both partners need a non-empty premise")
    if len({a, b, c}) < 3:
        raise NotApplicable("the three sentences must differ (too few samples in the batch?)")
    return [
        FollowUp(
            fields={"premise": a, "hypothesis": c},
            target="premise+hypothesis",
            source_fields={"premise": a, "hypothesis": b},
            companions={"bc": {"premise": b, "hypothesis": c}},
            note="source (a, b), companion (b, c), follow-up (a, c)",
        )
    ]


def _broken_chain(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    bc_output = companions.get("bc")
    if bc_output is None or not bc_output.answer:
        return None  # unreadable: the check reports the ERROR
    ab = (source.answer or "").strip().lower()
    bc = bc_output.answer.strip().lower()
    if ab != ENTAILMENT or bc != ENTAILMENT:
        return f"(a, b) is {ab} and (b, c) is {bc}; both must be entailment"
    return None


# Three-way transitivity (seed §6) is an implication: when its premise fails there is nothing
# to check (SKIP).
ENTAILMENT_CHAIN = SourcePrecondition(
    name="entailment_chain",
    description="The source (a, b) and the companion (b, c) must both be 'entailment'.",
    unmet=_broken_chain,
)


def transitive(ci: CheckInput) -> OracleResult:
    """entail(a, b) ∧ entail(b, c) ⇒ entail(a, c); the premise is ``ENTAILMENT_CHAIN``."""
    oracle = "transitive"
    error = unparseable(oracle, ci, ("bc",))
    if error:
        return error
    ab = (ci.source.answer or "").strip().lower()
    bc = (ci.companions["bc"].answer or "").strip().lower()
    ac = (ci.followup.answer or "").strip().lower()
    details = {"ab": ab, "bc": bc, "ac": ac}
    if ac == ENTAILMENT:
        return OracleResult(Verdict.PASS, oracle, 1.0, "a ⇒ b, b ⇒ c and a ⇒ c", details)
    return OracleResult(Verdict.FAIL, oracle, 0.0, f"a ⇒ b and b ⇒ c but (a, c) is {ac}", details)


register(
    Relation(
        id="multi.nli_transitivity",
        name="NLI transitivity",
        family="multi",
        category=CATEGORY,
        description=(
            "Take the premises a, b, c of the sample and its next two partners. If the model says "
            "a entails b and b entails c, it must also say a entails c."
        ),
        example="A chef is slicing fresh tomatoes in a busy kitchen.",
        kind=RelationKind.RULE,
        expectation=Expectation.TRANSITIVE,
        build=build_nli_transitivity,
        check=transitive,
        source_precondition=ENTAILMENT_CHAIN,
        tasks=frozenset({"nli"}),
        per_field=False,
        preconditions=(
            "Needs two partner samples with different premises. Judged only when (a, b) and "
            "(b, c) are both predicted entailment (otherwise SKIP)."
        ),
        ref="Transitivity seed §6 (three-way transitivity)",
        params={
            "example_fields": {"premise": "A chef is slicing fresh tomatoes in a busy kitchen."},
            "example_partners": [
                {"premise": "A chef is cutting tomatoes."},
                {"premise": "Someone is preparing food."},
            ],
        },
    )
)
