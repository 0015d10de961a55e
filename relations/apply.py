"""Turning (sample, relation) into seeded follow-ups — shared by the runner, the CLI and the pages."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.answers import AnswerType, TaskProfile
from core.run_config import DEFAULT_NLI_TARGET
from core.types import Sample
from relations.base import (
    CLAIM_FIELDS,
    CandidateRewriter,
    Expectation,
    FollowUp,
    NotApplicable,
    Relation,
    RelationKind,
    Rewriter,
    TransformContext,
)
from relations.english.close_rewrite import SmallRewriter
from relations.requirements import availability
from relations.validity import Similarity, check_followup


def case_seed(run_seed: int, sample_id: str, relation_id: str, followup_index: int) -> int:
    """The per-case seed: the same run seed reproduces the same follow-up byte for byte."""
    key = f"{run_seed}|{sample_id}|{relation_id}|{followup_index}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


@dataclass(frozen=True)
class Candidates:
    """Best of k for LLM-prompted relations: how many rewrite candidates to ask for, how to ask
    for the n-th, and the input similarity the gate and the ranking use (None: not checked)."""

    count: int = 1
    rewrite: CandidateRewriter | None = None
    similarity: Similarity | None = None
    few_shot: bool = False  # prompts with worked examples (the bench's comparison only)
    # The rewriter is a small model (the embedded one): its rewrites must also stay close to the
    # source's words (``relations.english.close_rewrite``).
    small_rewriter: SmallRewriter | None = None
    # A small rewriter is asked sentence by sentence where a relation allows it; True: whole
    # texts, as a strong one is (the bench's comparison only).
    whole_text: bool = False


ONE_CANDIDATE = Candidates()


@dataclass(frozen=True)
class SkippedFollowUp:
    """A follow-up that could not be made: becomes a SKIP case with this reason."""

    target: str
    reason: str
    details: dict = field(default_factory=dict)  # e.g. the rewrite candidates tried


def kept_fields_of(
    relation: Relation, task_fields: Sequence[str], nli_target: str = DEFAULT_NLI_TARGET
) -> frozenset[str]:
    """The fields this relation leaves as they are on a task with these perturbable fields.

    Its own ``kept_fields`` always. On an NLI task (a claim field, the hypothesis, judged
    against the other fields), a relation that expects the same label and does not name its
    fields changes only the fields the run's ``nli_target`` names: by default the premise. An
    edited hypothesis can claim something else ("Unrelated note: …" added to it, a formal
    rewrite that drops a qualifier), and then "same label" is no longer the right expectation.
    Relations that expect a change, and those that name their fields (nli.*), choose for
    themselves.
    """
    kept = set(relation.kept_fields)
    claims = CLAIM_FIELDS.intersection(task_fields)
    others = set(task_fields) - claims
    same_label = relation.expectation is Expectation.EQUIVALENT and relation.fields is None
    if claims and others and same_label:
        if nli_target == "premise":
            kept |= claims
        elif nli_target == "hypothesis":
            kept |= others
    return frozenset(kept)


def field_targets(
    relation: Relation, task_fields: Sequence[str], nli_target: str = DEFAULT_NLI_TARGET
) -> list[tuple[str, ...]]:
    """Which field sets get their own follow-up: each field, then all of them together.

    Only the relation's ``fields`` (when it names some), never the fields it keeps (see
    ``kept_fields_of``); the follow-up of all fields together only when the relation's
    ``joint_target`` allows it.
    """
    kept = kept_fields_of(relation, task_fields, nli_target)
    fields = [
        f
        for f in task_fields
        if (relation.fields is None or f in relation.fields) and f not in kept
    ]
    if not fields:
        return []
    if len(fields) == 1 or not relation.per_field:
        return [tuple(fields)] if relation.per_field is False else [(fields[0],)]
    each_alone = [(f,) for f in fields]
    return [*each_alone, tuple(fields)] if relation.joint_target else each_alone


def make_context(
    relation: Relation,
    sample: Sample,
    task: TaskProfile,
    field: str,
    *,
    seed: int,
    partners: Sequence[Sample] = (),
    rewrite: Rewriter | None = None,
    candidates: Candidates = ONE_CANDIDATE,
) -> TransformContext:
    ctx = TransformContext(
        rng=random.Random(seed),
        seed=seed,
        task_id=task.id,
        field=field,
        sample_fields=dict(sample.fields),
        answer_type=AnswerType(task.answer_type),
        partners=partners,
        rewrite=rewrite,
        params=dict(relation.params),
    )
    if relation.kind == RelationKind.LLM:
        similarity = candidates.similarity
        ctx.candidates, ctx.rewrite_candidate = candidates.count, candidates.rewrite
        ctx.similarity, ctx.few_shot = similarity, candidates.few_shot
        small = candidates.small_rewriter
        ctx.by_sentence = small is not None and not candidates.whole_text
        ctx.check_candidate = lambda source, text: check_followup(
            relation, source, text, similarity, small_rewriter=small
        )
    return ctx


def generate_followups(
    relation: Relation,
    sample: Sample,
    task: TaskProfile,
    task_fields: Sequence[str],
    *,
    run_seed: int = 0,
    partners: Sequence[Sample] = (),
    rewrite: Rewriter | None = None,
    nli_target: str = DEFAULT_NLI_TARGET,
    candidates: Candidates = ONE_CANDIDATE,
) -> list[FollowUp | SkippedFollowUp]:
    """All follow-ups of one sample under one relation, in a stable order (index = position).

    ``task_fields`` are the fields the relation may transform (the task's perturbable ones);
    ``nli_target`` the NLI field(s) a same-label relation perturbs (see ``kept_fields_of``);
    ``candidates``: best of k for LLM-prompted relations (one candidate by default).
    """
    task_id = task.id
    available, why = availability(relation.requires)
    if not available:
        return [SkippedFollowUp(target="*", reason=f"relation unavailable: {why}")]
    if not relation.applies_to(task):
        return [SkippedFollowUp(target="*", reason=f"relation does not apply to task {task_id}")]

    if relation.build is not None:
        seed = case_seed(run_seed, sample.id, relation.id, 0)
        ctx = make_context(
            relation, sample, task, task_fields[0], seed=seed, partners=partners, rewrite=rewrite
        )
        try:
            return list(relation.build(sample, task_id, task_fields, ctx))
        except NotApplicable as exc:
            return [SkippedFollowUp(target="*", reason=str(exc))]

    assert relation.transform is not None, f"{relation.id} has neither transform nor build"
    targets = field_targets(relation, task_fields, nli_target)
    if not targets:
        kept = sorted(kept_fields_of(relation, task_fields, nli_target))
        return [
            SkippedFollowUp(target="*", reason=_nothing_to_perturb(kept, task_fields, nli_target))
        ]
    results: list[FollowUp | SkippedFollowUp] = []
    for index, target in enumerate(targets):
        seed = case_seed(run_seed, sample.id, relation.id, index)
        new_fields = dict(sample.fields)
        target_name = "+".join(target)
        details: dict[str, dict] = {}
        try:
            for field_name in target:
                ctx = make_context(
                    relation,
                    sample,
                    task,
                    field_name,
                    seed=seed,
                    partners=partners,
                    rewrite=rewrite,
                    candidates=candidates,
                )
                new_fields[field_name] = relation.transform(sample.fields.get(field_name, ""), ctx)
                if ctx.details:
                    details[field_name] = ctx.details
        except NotApplicable as exc:
            if ctx.details:
                details[field_name] = ctx.details
            skipped = SkippedFollowUp(target_name, str(exc), _merged_details(details))
            results.append(skipped)
            continue
        preamble = relation.params.get("preamble")
        results.append(
            FollowUp(
                fields=new_fields,
                target=target_name,
                preamble=preamble,
                details=_merged_details(details),
            )
        )
    return results


def _nothing_to_perturb(kept: list[str], task_fields: Sequence[str], nli_target: str) -> str:
    if nli_target != DEFAULT_NLI_TARGET and CLAIM_FIELDS.intersection(task_fields):
        return f"the run's NLI target is the {nli_target}, and this relation never changes it"
    if kept:
        return f"no field to perturb: this relation leaves {', '.join(kept)} as they are"
    return "no field to perturb: the relation changes none of the task's fields"


def _merged_details(by_field: dict[str, dict]) -> dict:
    """One field's details as they are; several fields' under their names, with the rewrite
    candidates tried in all of them counted together."""
    if len(by_field) <= 1:
        return next(iter(by_field.values()), {})
    tried = sum(d.get("rewrite", {}).get("tried", 0) for d in by_field.values())
    return {"fields": by_field, "rewrite": {"tried": tried}}


def transform_text(
    relation: Relation,
    text: str,
    *,
    task: TaskProfile,
    seed: int = 0,
    field: str = "text",
    partners: Sequence[Sample] = (),
    rewrite: Rewriter | None = None,
    candidates: Candidates = ONE_CANDIDATE,
) -> FollowUp | SkippedFollowUp:
    """Apply a relation to one free text (the Relations page's try-it box)."""
    sample = Sample(fields={field: text})
    outputs = generate_followups(
        relation, sample, task, [field], run_seed=seed, partners=partners, rewrite=rewrite,
        candidates=candidates,
    )  # fmt: skip
    return outputs[0] if outputs else SkippedFollowUp(target=field, reason="no follow-up")
