"""Shared builders for the relation tests: a seeded context and follow-ups of one text."""

from __future__ import annotations

import random

from core.tasks import BUILTIN_TASKS
from core.types import ParsedOutput, Sample
from relations.apply import generate_followups
from relations.base import CheckInput, Relation, TransformContext
from relations.registry import get_relation

FOUR_FACTS = (
    "Ana buys 4 pens. Ben buys 7 pencils. Cleo buys 2 erasers. Dan buys 9 rulers. "
    "How many items were bought?"
)


def make_ctx(
    seed: int = 0,
    rewrite=None,
    params=None,
    *,
    task_id: str = "reasoning",
    field: str = "problem",
) -> TransformContext:
    return TransformContext(
        rng=random.Random(seed),
        seed=seed,
        task_id=task_id,
        field=field,
        sample_fields={},
        rewrite=rewrite,
        params=dict(params or {}),
    )


def followups(
    relation: str | Relation,
    text: str,
    rewrite=None,
    seed: int = 0,
    *,
    task_id: str = "reasoning",
    field: str = "problem",
):
    if isinstance(relation, str):
        relation = get_relation(relation)
    sample = Sample(fields={field: text})
    return generate_followups(
        relation, sample, BUILTIN_TASKS[task_id], [field], run_seed=seed, rewrite=rewrite
    )


def check_input(
    source, followup, threshold=None, similarity=None, answer_type="label"
) -> CheckInput:
    """What a relation's own checker gets for two parsed answers."""
    return CheckInput(
        source=ParsedOutput(answer=source),
        followup=ParsedOutput(answer=followup),
        companions={},
        answer_type=answer_type,
        threshold=threshold,
        similarity=similarity or (lambda a, b: 0.0),
    )
