"""NLI relations (LLMorph 77–80) and the catalog entries of the task-specific families."""

from __future__ import annotations

import pytest

from app.tasks import BUILTIN_TASKS
from core.types import Sample, Verdict
from relations.apply import SkippedFollowUp, generate_followups
from relations.base import Expectation, FollowUp, NotApplicable
from relations.nli import clean_generated_sentence, no_polar_flip
from relations.registry import get_relation
from tests.relations.helpers import check_input

NLI = {
    "premise": "A man in a blue shirt is repairing a bicycle.",
    "hypothesis": "A man is outside.",
}


class Recorder:
    """A fake transformation endpoint: returns a canned reply and keeps the prompts."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply


def nli_followups(relation_id: str, rewrite=None):
    relation = get_relation(relation_id)
    fields = BUILTIN_TASKS["nli"].fields
    return generate_followups(
        relation, Sample(fields=dict(NLI)), BUILTIN_TASKS["nli"], fields, rewrite=rewrite
    )


def test_catalog_entries_for_task_specific_relations():
    expected = {
        "nli.extend_premise": ("nli", "LLMorph 77", Expectation.EQUIVALENT),
        "nli.extend_hypothesis": ("nli", "LLMorph 78", Expectation.EQUIVALENT),
        "nli.weaken_hypothesis": ("nli", "LLMorph 79", Expectation.NO_POLAR_FLIP),
        "nli.weaken_premise": ("nli", "LLMorph 80", Expectation.NO_POLAR_FLIP),
        "re.swap_symmetric": ("re", "LLMorph 141", Expectation.EQUIVALENT),
        "re.swap_asymmetric": ("re", "LLMorph 142", Expectation.DIFFERENT),
        "sentiment.exclamation": ("sentiment", "LLMorph 150", Expectation.AT_LEAST_AS_EXTREME),
        "sentiment.emphasis": ("sentiment", "LLMorph 151", Expectation.AT_LEAST_AS_EXTREME),
        "sentiment.capitalise_keywords": (
            "sentiment",
            "LLMorph 154",
            Expectation.AT_LEAST_AS_EXTREME,
        ),
    }
    for relation_id, (family, ref, expectation) in expected.items():
        relation = get_relation(relation_id)
        assert (relation.family, relation.ref, relation.expectation) == (family, ref, expectation)
        assert relation.preconditions
    assert get_relation("nli.weaken_premise").tasks == frozenset({"nli"})
    assert get_relation("re.swap_symmetric").tasks == frozenset({"relation_extraction"})
    assert get_relation("sentiment.emphasis").tasks == frozenset({"sentiment", "sentiment_score"})


def test_extend_premise_appends_a_sentence_generated_from_the_hypothesis():
    rewrite = Recorder('"Someone is outdoors."')
    [followup] = nli_followups("nli.extend_premise", rewrite)
    assert isinstance(followup, FollowUp)
    assert followup.target == "premise"
    assert followup.fields == {
        "premise": "A man in a blue shirt is repairing a bicycle. Someone is outdoors.",
        "hypothesis": "A man is outside.",
    }
    assert len(rewrite.prompts) == 1
    assert "Sentence: A man is outside." in rewrite.prompts[0]


def test_extend_hypothesis_appends_a_sentence_generated_from_the_premise():
    rewrite = Recorder("Sentence: A bicycle is being fixed")
    [followup] = nli_followups("nli.extend_hypothesis", rewrite)
    assert followup.fields["hypothesis"] == "A man is outside. A bicycle is being fixed."
    assert followup.fields["premise"] == NLI["premise"]
    assert "Sentence: A man in a blue shirt is repairing a bicycle." in rewrite.prompts[0]


def test_weaken_relations_replace_the_field_with_the_generated_sentence():
    [hyp] = nli_followups("nli.weaken_hypothesis", Recorder("A person is outside.\nExtra line"))
    assert hyp.fields == {"premise": NLI["premise"], "hypothesis": "A person is outside."}
    [prem] = nli_followups("nli.weaken_premise", Recorder("A man is repairing something."))
    assert prem.fields == {
        "premise": "A man is repairing something.",
        "hypothesis": NLI["hypothesis"],
    }


def test_nli_generation_without_a_transformation_endpoint_is_skipped():
    [skipped] = nli_followups("nli.extend_premise", rewrite=None)
    assert isinstance(skipped, SkippedFollowUp)
    assert "transformation endpoint" in skipped.reason


def test_empty_llm_reply_is_not_applicable():
    [skipped] = nli_followups("nli.weaken_premise", Recorder('  \n ""\n'))
    assert isinstance(skipped, SkippedFollowUp)
    assert "no usable sentence" in skipped.reason
    with pytest.raises(NotApplicable):
        clean_generated_sentence("")


def test_entailment_kept_check_needs_an_entailed_source():
    check = get_relation("nli.extend_premise").check
    assert check(check_input("entailment", "entailment")).verdict is Verdict.PASS
    failed = check(check_input("entailment", "neutral"))
    assert (failed.verdict, failed.oracle, failed.value) == (Verdict.FAIL, "equal_label", 0.0)
    skipped = check(check_input("neutral", "contradiction"))
    assert skipped.verdict is Verdict.SKIP
    assert skipped.reason.startswith("precondition not met")


@pytest.mark.parametrize(
    ("source", "followup", "verdict"),
    [
        ("entailment", "contradiction", Verdict.FAIL),
        ("contradiction", "entailment", Verdict.FAIL),
        ("entailment", "neutral", Verdict.PASS),
        ("neutral", "contradiction", Verdict.PASS),
        ("contradiction", "contradiction", Verdict.PASS),
    ],
)
def test_no_polar_flip_fails_only_on_entailment_contradiction_flips(source, followup, verdict):
    result = no_polar_flip(check_input(source, followup))
    assert result.verdict is verdict
    assert result.oracle == "no_polar_flip"
    assert result.value == (0.0 if verdict is Verdict.FAIL else 1.0)
    assert result.details == {"source": source, "followup": followup}


def test_weaken_premise_uses_no_polar_flip_and_weaken_hypothesis_needs_entailment():
    premise_check = get_relation("nli.weaken_premise").check
    assert premise_check(check_input("contradiction", "entailment")).verdict is Verdict.FAIL
    hypothesis_check = get_relation("nli.weaken_hypothesis").check
    assert hypothesis_check(check_input("entailment", "contradiction")).verdict is Verdict.FAIL
    assert hypothesis_check(check_input("entailment", "neutral")).verdict is Verdict.PASS
    # A weaker hypothesis can be entailed by a premise contradicting the original one.
    result = hypothesis_check(check_input("contradiction", "entailment"))
    assert result.verdict is Verdict.SKIP
    assert result.oracle == "no_polar_flip"


def test_checks_report_missing_answers_as_error():
    result = no_polar_flip(check_input(None, "entailment"))
    assert result.verdict is Verdict.ERROR
    assert "source" in result.reason
