"""Relation-extraction relations (LLMorph 141/142): swap head and tail."""

from __future__ import annotations

import pytest

from core.answers import AnswerType
from core.tasks import BUILTIN_TASKS
from core.types import ParsedOutput, Sample, Verdict
from relations.apply import SkippedFollowUp, generate_followups
from relations.base import FollowUp
from relations.oracles import evaluate
from relations.registry import get_relation
from relations.relation_extraction import is_no_relation, is_symmetric_relation
from tests.relations.helpers import check_input

RE_SAMPLE = Sample(
    fields={
        "text": "Maria Lopez and her husband Daniel Reyes opened a bakery.",
        "head": "Maria Lopez",
        "tail": "Daniel Reyes",
    }
)
RE_FIELDS = BUILTIN_TASKS["relation_extraction"].fields


@pytest.mark.parametrize("relation_id", ["re.swap_symmetric", "re.swap_asymmetric"])
def test_swap_entities_swaps_head_and_tail_and_keeps_the_text(relation_id):
    [followup] = generate_followups(
        get_relation(relation_id), RE_SAMPLE, BUILTIN_TASKS["relation_extraction"], RE_FIELDS
    )
    assert followup.fields == {
        "text": "Maria Lopez and her husband Daniel Reyes opened a bakery.",
        "head": "Daniel Reyes",
        "tail": "Maria Lopez",
    }
    assert followup.target == "head+tail"


def test_swap_entities_preconditions():
    relation = get_relation("re.swap_symmetric")
    same = Sample(fields={"text": "Ana met Ana.", "head": "Ana", "tail": "ana"})
    [skipped] = generate_followups(relation, same, BUILTIN_TASKS["relation_extraction"], RE_FIELDS)
    assert isinstance(skipped, SkippedFollowUp)
    assert "same entity" in skipped.reason
    missing = Sample(fields={"text": "Ana met Bo.", "head": "Ana", "tail": ""})
    [skipped] = generate_followups(
        relation, missing, BUILTIN_TASKS["relation_extraction"], RE_FIELDS
    )
    assert "head and a tail" in skipped.reason
    declared = Sample(fields=dict(RE_SAMPLE.fields), meta={"symmetric": False})
    [skipped] = generate_followups(
        relation, declared, BUILTIN_TASKS["relation_extraction"], RE_FIELDS
    )
    assert skipped.reason == "precondition: the sample declares a asymmetric relation"
    [ok] = generate_followups(
        get_relation("re.swap_asymmetric"),
        declared,
        BUILTIN_TASKS["relation_extraction"],
        RE_FIELDS,
    )
    assert isinstance(ok, FollowUp)


def test_symmetric_relation_phrases():
    assert is_symmetric_relation("spouse")
    assert is_symmetric_relation("married to")
    assert is_symmetric_relation("shares border with")
    assert is_symmetric_relation("sibling")
    assert not is_symmetric_relation("author of")
    assert not is_symmetric_relation("parent company of")
    assert not is_symmetric_relation("unrelated")
    assert not is_symmetric_relation("no relation")
    assert is_no_relation("no relation") and is_no_relation("none") and is_no_relation("unknown")


def judged(relation_id: str, source: str, followup: str):
    """The verdict through ``evaluate``, where the source-output preconditions are checked."""
    return evaluate(
        get_relation(relation_id),
        AnswerType.TEXT,
        ParsedOutput(answer=source),
        ParsedOutput(answer=followup),
        lambda a, b: 0.0,
    )


def test_swap_symmetric_check():
    check = get_relation("re.swap_symmetric").check
    same = check(check_input("spouse", "spouse"))
    assert (same.verdict, same.oracle, same.value) == (Verdict.PASS, "semantic_similar", 1.0)
    changed = check(check_input("spouse", "employer", similarity=lambda a, b: 0.2))
    assert changed.verdict is Verdict.FAIL
    assert changed.value == 0.2
    skipped = judged("re.swap_symmetric", "author of", "written by")
    assert skipped.verdict is Verdict.SKIP
    assert skipped.reason == "precondition: 'author of' is not a known symmetric relation"


def test_swap_asymmetric_check():
    check = get_relation("re.swap_asymmetric").check
    unchanged = check(check_input("author of", "author of"))
    assert (unchanged.verdict, unchanged.oracle, unchanged.value) == (
        Verdict.FAIL,
        "semantic_different",
        1.0,
    )
    inverse = check(check_input("author of", "written by", similarity=lambda a, b: 0.55))
    assert inverse.verdict is Verdict.PASS
    assert inverse.details["threshold"] == 0.9
    no_relation = judged("re.swap_asymmetric", "no relation", "author of")
    assert no_relation.reason == "precondition: the source output names no relation"
    symmetric = judged("re.swap_asymmetric", "sibling", "sibling")
    assert symmetric.reason == "precondition: 'sibling' is a symmetric relation"
    assert {no_relation.verdict, symmetric.verdict} == {Verdict.SKIP}
    strict = check(check_input("author of", "writer", 0.5, similarity=lambda a, b: 0.6))
    assert strict.verdict is Verdict.FAIL
