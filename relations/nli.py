"""NLI relations (LLMorph 77–80), prompted through the transformation endpoint.

Each generates a sentence with a known entailment relation to the source and carries its own
check, because the relations only hold when the *source* output is an entailment (LLMorph verifies
the source output before judging).
"""

from __future__ import annotations

import re

from core.types import OracleResult, Verdict
from relations.base import (
    CheckInput,
    Expectation,
    NotApplicable,
    Relation,
    RelationKind,
    TransformContext,
)
from relations.oracles import unparseable
from relations.registry import register

CATEGORY = "task-specific"
NLI_TASKS = frozenset({"nli"})

ENTAILMENT = "entailment"
CONTRADICTION = "contradiction"


def _label(answer: str | None) -> str | None:
    return answer.strip().lower() if answer else None


def clean_generated_sentence(text: str) -> str:
    """First usable line of an LLM reply, without labels or quotes, ending with punctuation."""
    for line in (text or "").splitlines():
        line = re.sub(
            r"^\s*(?:sentence|output|answer|rewritten text|result)\s*:\s*", "", line, flags=re.I
        )
        line = line.strip().strip("\"'“”‘’`").strip()
        if line:
            return line if line[-1] in ".!?" else line + "."
    raise NotApplicable("the transformation endpoint returned no usable sentence")


_PRESERVE = (
    "Write exactly one short, plain English sentence and nothing else: no quotes, no label, "
    "no explanation. Keep the same people, objects, places and numbers; do not invent new facts."
)


def _entailed_sentence(source: str, ctx: TransformContext, how: str) -> str:
    """Ask the transformation endpoint for a sentence that ``source`` logically implies."""
    rewrite = ctx.require_rewriter()
    prompt = f"{how}\n{_PRESERVE}\n\nSentence: {source.strip()}\nImplied sentence:"
    return clean_generated_sentence(rewrite(prompt))


_RESTATE = (
    "Give a sentence that is certainly true whenever the sentence below is true: restate one "
    "part of it, or state it more generally."
)


def _needs(ctx: TransformContext, field: str) -> str:
    value = (ctx.sample_fields.get(field) or "").strip()
    if not value:
        raise NotApplicable(f"the sample has no {field}")
    return value


def _join(first: str, second: str) -> str:
    return f"{first.rstrip()} {second.strip()}"


def extend_premise(text: str, ctx: TransformContext) -> str:
    """77: append to the premise a sentence implied by the hypothesis."""
    hypothesis = _needs(ctx, "hypothesis")
    if not text.strip():
        raise NotApplicable("the premise is empty")
    return _join(text, _entailed_sentence(hypothesis, ctx, _RESTATE))


def extend_hypothesis(text: str, ctx: TransformContext) -> str:
    """78: append to the hypothesis a sentence implied by the premise."""
    premise = _needs(ctx, "premise")
    if not text.strip():
        raise NotApplicable("the hypothesis is empty")
    return _join(text, _entailed_sentence(premise, ctx, _RESTATE))


def weaken_hypothesis(text: str, ctx: TransformContext) -> str:
    """79: replace the hypothesis with a sentence the hypothesis implies."""
    if not text.strip():
        raise NotApplicable("the hypothesis is empty")
    return _entailed_sentence(text, ctx, _RESTATE)


def weaken_premise(text: str, ctx: TransformContext) -> str:
    """80: replace the premise with a sentence the premise implies."""
    if not text.strip():
        raise NotApplicable("the premise is empty")
    return _entailed_sentence(text, ctx, _RESTATE)


def _needs_entailment_source(oracle: str, ci: CheckInput) -> OracleResult | None:
    source = _label(ci.source.answer)
    if source != ENTAILMENT:
        return OracleResult(
            Verdict.SKIP,
            oracle,
            reason=f"precondition not met: source label is {source!r}, not entailment",
            details={"source": source, "followup": _label(ci.followup.answer)},
        )
    return None


def entailment_kept(ci: CheckInput) -> OracleResult:
    """77/78: when the source is an entailment, the follow-up must be an entailment too."""
    oracle = "equal_label"
    error = unparseable(oracle, ci)
    if error:
        return error
    skip = _needs_entailment_source(oracle, ci)
    if skip:
        return skip
    followup = _label(ci.followup.answer)
    details = {"source": ENTAILMENT, "followup": followup}
    if followup == ENTAILMENT:
        return OracleResult(Verdict.PASS, oracle, 1.0, "entailment kept", details)
    return OracleResult(Verdict.FAIL, oracle, 0.0, f"entailment became {followup}", details)


def no_polar_flip(ci: CheckInput) -> OracleResult:
    """FAIL only when the label flips between entailment and contradiction (either way)."""
    oracle = "no_polar_flip"
    error = unparseable(oracle, ci)
    if error:
        return error
    source, followup = _label(ci.source.answer), _label(ci.followup.answer)
    details = {"source": source, "followup": followup}
    if {source, followup} == {ENTAILMENT, CONTRADICTION}:
        return OracleResult(
            Verdict.FAIL, oracle, 0.0, f"label flipped: {source} → {followup}", details
        )
    return OracleResult(
        Verdict.PASS, oracle, 1.0, f"no polar flip ({source} → {followup})", details
    )


def no_polar_flip_from_entailment(ci: CheckInput) -> OracleResult:
    """79: ``no_polar_flip`` judged only when the source is an entailment.

    A weaker hypothesis may well be entailed by a premise that contradicts the original one, so a
    contradiction → entailment change is not a violation here; the check needs an entailed source.
    """
    error = unparseable("no_polar_flip", ci)
    if error:
        return error
    return _needs_entailment_source("no_polar_flip", ci) or no_polar_flip(ci)


_NLI_PREMISE = "A woman in a red coat is walking her two dogs along the beach at sunset."
_NLI_HYPOTHESIS = "A woman is outside with her dogs."
_NLI_EXAMPLE = {"premise": _NLI_PREMISE, "hypothesis": _NLI_HYPOTHESIS}

for _id, _ref, _name, _field, _fn, _expect, _check, _description, _pre in (
    (
        "nli.extend_premise",
        77,
        "Add a hypothesis consequence to the premise",
        "premise",
        extend_premise,
        Expectation.EQUIVALENT,
        entailment_kept,
        "Generate a sentence implied by the hypothesis and append it to the premise. Adding a "
        "fact the hypothesis already implies cannot break an entailment.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
    (
        "nli.extend_hypothesis",
        78,
        "Add a premise consequence to the hypothesis",
        "hypothesis",
        extend_hypothesis,
        Expectation.EQUIVALENT,
        entailment_kept,
        "Generate a sentence implied by the premise and append it to the hypothesis. If the "
        "premise entails both parts, it entails their conjunction.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
    (
        "nli.weaken_hypothesis",
        79,
        "Replace the hypothesis with one it implies",
        "hypothesis",
        weaken_hypothesis,
        Expectation.NO_POLAR_FLIP,
        no_polar_flip_from_entailment,
        "Generate a sentence implied by the hypothesis and use it as the new hypothesis. A premise "
        "that entails the hypothesis cannot contradict its consequence: fails only on an "
        "entailment ↔ contradiction flip.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
    (
        "nli.weaken_premise",
        80,
        "Replace the premise with one it implies",
        "premise",
        weaken_premise,
        Expectation.NO_POLAR_FLIP,
        no_polar_flip,
        "Generate a sentence implied by the premise and use it as the new premise. A weaker "
        "premise may lose the entailment, but it cannot turn an entailment into a contradiction "
        "or the reverse: fails only on an entailment ↔ contradiction flip.",
        "Needs a transformation endpoint; any source label.",
    ),
):
    register(
        Relation(
            id=_id,
            name=_name,
            family="nli",
            category=CATEGORY,
            description=_description,
            example=_NLI_EXAMPLE[_field],
            kind=RelationKind.LLM,
            expectation=_expect,
            transform=_fn,
            check=_check,
            tasks=NLI_TASKS,
            fields=(_field,),
            preconditions=_pre,
            ref=f"LLMorph {_ref}",
            similarity_floor=0.3,
            # A weakened sentence may legitimately drop details (a number, a name): only the
            # similarity floor guards 79/80; 77/78 keep the whole source, so the check is moot.
            params={"example_fields": dict(_NLI_EXAMPLE), "preserve_content": _ref < 79},
        )
    )
