"""Task-specific relations: NLI 77–80, relation extraction 141/142, sentiment 150/151/154."""

from __future__ import annotations

import random

import pytest

from app.tasks import BUILTIN_TASKS
from core.types import ParsedOutput, Sample, Verdict
from relations.apply import SkippedFollowUp, generate_followups, transform_text
from relations.base import CheckInput, Expectation, FollowUp, NotApplicable, TransformContext
from relations.registry import get_relation
from relations.task_specific import (
    capitalise_keywords,
    clean_generated_sentence,
    emphasis,
    exclamation,
    is_no_relation,
    is_symmetric_relation,
    no_polar_flip,
)

NLI = {
    "premise": "A man in a blue shirt is repairing a bicycle.",
    "hypothesis": "A man is outside.",
}


def ctx(seed: int = 0) -> TransformContext:
    return TransformContext(
        rng=random.Random(seed), seed=seed, task_id="sentiment", field="text", sample_fields={}
    )


def check_input(source, followup, threshold=None, similarity=None, answer_type="label"):
    return CheckInput(
        source=ParsedOutput(answer=source),
        followup=ParsedOutput(answer=followup),
        companions={},
        answer_type=answer_type,
        threshold=threshold,
        similarity=similarity or (lambda a, b: 0.0),
    )


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
    return generate_followups(relation, Sample(fields=dict(NLI)), "nli", fields, rewrite=rewrite)


# ---------------------------------------------------------------- NLI 77–80


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


# ---------------------------------------------------------------- relation extraction 141/142

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
        get_relation(relation_id), RE_SAMPLE, "relation_extraction", RE_FIELDS
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
    [skipped] = generate_followups(relation, same, "relation_extraction", RE_FIELDS)
    assert isinstance(skipped, SkippedFollowUp)
    assert "same entity" in skipped.reason
    missing = Sample(fields={"text": "Ana met Bo.", "head": "Ana", "tail": ""})
    [skipped] = generate_followups(relation, missing, "relation_extraction", RE_FIELDS)
    assert "head and a tail" in skipped.reason
    declared = Sample(fields=dict(RE_SAMPLE.fields), meta={"symmetric": False})
    [skipped] = generate_followups(relation, declared, "relation_extraction", RE_FIELDS)
    assert skipped.reason == "precondition not met: the sample declares a asymmetric relation"
    [ok] = generate_followups(
        get_relation("re.swap_asymmetric"), declared, "relation_extraction", RE_FIELDS
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


def test_swap_symmetric_check():
    check = get_relation("re.swap_symmetric").check
    same = check(check_input("spouse", "spouse"))
    assert (same.verdict, same.oracle, same.value) == (Verdict.PASS, "semantic_similar", 1.0)
    changed = check(check_input("spouse", "employer", similarity=lambda a, b: 0.2))
    assert changed.verdict is Verdict.FAIL
    assert changed.value == 0.2
    skipped = check(check_input("author of", "written by"))
    assert skipped.verdict is Verdict.SKIP
    assert "not a known symmetric relation" in skipped.reason


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
    assert check(check_input("no relation", "author of")).verdict is Verdict.SKIP
    assert check(check_input("sibling", "sibling")).verdict is Verdict.SKIP
    strict = check(check_input("author of", "writer", 0.5, similarity=lambda a, b: 0.6))
    assert strict.verdict is Verdict.FAIL


# ---------------------------------------------------------------- sentiment 150/151/154


def test_exclamation_replaces_sentence_periods_only():
    text = "Tickets cost 3.5 euros. Dr. Lee agreed, e.g. on price... It was great. J. Doe left."
    assert exclamation(text, ctx()) == (
        "Tickets cost 3.5 euros! Dr. Lee agreed, e.g. on price... It was great! J. Doe left!"
    )
    assert exclamation('He said "fine."', ctx()) == 'He said "fine!"'
    with pytest.raises(NotApplicable, match="no sentence-ending"):
        exclamation("What a film! Loved it", ctx())


def test_exclamation_through_transform_text():
    result = transform_text(
        get_relation("sentiment.exclamation"), "Good food. Slow service.", task_id="sentiment"
    )
    assert isinstance(result, FollowUp)
    assert result.fields == {"text": "Good food! Slow service!"}


def test_emphasis_before_adjectives_is_seeded_and_idiomatic():
    text = "Great film. The plot was slow, not good, but the ending was amazing."
    first = emphasis(text, ctx(3))
    assert first == emphasis(text, ctx(3))
    # gradable adjectives get really/very…, extreme ones absolutely/truly…; negated ones nothing.
    assert "not good" in first
    words = first.split()
    assert words[0] in {"Absolutely", "Truly", "Utterly", "Simply"} and words[1] == "great"
    assert words[words.index("slow,") - 1] in {
        "really",
        "very",
        "extremely",
        "incredibly",
        "genuinely",
    }
    assert words[words.index("amazing.") - 1] in {"absolutely", "truly", "utterly", "simply"}


def test_emphasis_exact_output_and_precondition():
    assert emphasis("The soup was bland.", ctx(0)) == f"The soup was {emphasis_word(0)} bland."
    assert emphasis("It was GOOD.", ctx(0)) == f"It was {emphasis_word(0).upper()} GOOD."
    with pytest.raises(NotApplicable, match="no sentiment adjective"):
        emphasis("It was really bad and very good.", ctx())
    with pytest.raises(NotApplicable):
        emphasis("The train left at noon.", ctx())


def emphasis_word(seed: int) -> str:
    from relations.task_specific import GRADABLE_EMPHASIS

    return GRADABLE_EMPHASIS[random.Random(seed).randrange(len(GRADABLE_EMPHASIS))]


def test_capitalise_keywords():
    assert capitalise_keywords(
        "I loved the first half, but the ending was a boring mess.", ctx()
    ) == ("I LOVED the first half, but the ending was a BORING MESS.")
    with pytest.raises(NotApplicable):
        capitalise_keywords("The train left at noon.", ctx())
    with pytest.raises(NotApplicable):
        capitalise_keywords("It was GREAT.", ctx())
