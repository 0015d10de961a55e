"""NLI relations (LLMorph 77–80) and the catalog entries of the task-specific families."""

from __future__ import annotations

import pytest

from core.answers import AnswerType
from core.tasks import BUILTIN_TASKS
from core.types import ParsedOutput, Sample, Verdict
from relations.apply import SkippedFollowUp, generate_followups
from relations.base import Expectation, FollowUp, NotApplicable
from relations.nli import clean_generated_sentence, no_polar_flip
from relations.oracles import evaluate
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


@pytest.mark.parametrize(
    ("reply", "what"),
    [
        ("Step 1: read the problem.", "a step or list item"),  # the example (item 6)
        ("1. A man is outdoors.", "a step or list item"),
        ("- A man is outdoors.", "a step or list item"),
        ("Note: the man is outdoors.", "a labelled line"),
        ("Is the man outdoors?", "a question"),
        ("Read the hypothesis carefully.", "an instruction"),
        ("This sentence implies that a man is outdoors.", "talk about the task"),
        ("Outdoors, yes.", "fewer than 3 words"),
    ],
)
def test_extend_premise_refuses_what_is_not_a_plain_statement(reply, what):
    """LLMorph 77 appends a *premise sentence*: "Step 1: read the problem." was accepted as one
    (issue 23, item 6). A reply that is not one declarative sentence of content is SKIPped as
    an invalid follow-up; the premise never gets it."""
    [skipped] = nli_followups("nli.extend_premise", Recorder(reply))
    assert isinstance(skipped, SkippedFollowUp)
    assert skipped.reason.startswith(f"invalid_followup: the generated line is {what}")
    assert reply[:20] in skipped.reason


def test_a_plain_statement_with_a_colon_later_is_kept():
    [followup] = nli_followups(
        "nli.extend_premise", Recorder("The man outside has one tool: a wrench.")
    )
    assert followup.fields["premise"] == NLI["premise"] + " The man outside has one tool: a wrench."


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


def judged(relation_id: str, source: str, followup: str):
    """The verdict through ``evaluate``, where the source-output preconditions are checked."""
    return evaluate(
        get_relation(relation_id), AnswerType.LABEL, ParsedOutput(answer=source),
        ParsedOutput(answer=followup), lambda a, b: 0.0,
    )  # fmt: skip


def test_entailment_kept_check_needs_an_entailed_source():
    assert judged("nli.extend_premise", "entailment", "entailment").verdict is Verdict.PASS
    failed = judged("nli.extend_premise", "entailment", "neutral")
    assert (failed.verdict, failed.oracle, failed.value) == (Verdict.FAIL, "equal_label", 0.0)
    skipped = judged("nli.extend_premise", "neutral", "contradiction")
    assert skipped.verdict is Verdict.SKIP
    assert skipped.reason == "precondition: the source label is 'neutral', not 'entailment'"


@pytest.mark.parametrize("relation_id", ["nli.weaken_premise", "nli.weaken_hypothesis"])
@pytest.mark.parametrize("followup", ["entailment", "neutral", "contradiction"])
def test_a_neutral_source_is_skip_never_a_vacuous_pass(relation_id, followup):
    """LLMorph 79/80 (LLMorph catalogue: the source output must be 'entailment').

    With a neutral source, "no entailment ↔ contradiction flip" holds whatever the follow-up
    says: (neutral → contradiction) used to PASS although nothing was tested. Now SKIP.
    """
    result = judged(relation_id, "neutral", followup)
    assert (result.verdict, result.value) == (Verdict.SKIP, None)
    assert result.reason.startswith("precondition: ")


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


def test_weaken_relations_judge_only_an_entailed_source():
    """LLMorph 79/80: both verify an 'entailment' source, then fail on a flip to contradiction."""
    for relation_id in ("nli.weaken_premise", "nli.weaken_hypothesis"):
        assert judged(relation_id, "entailment", "contradiction").verdict is Verdict.FAIL
        assert judged(relation_id, "entailment", "neutral").verdict is Verdict.PASS
        # A weaker hypothesis can be entailed by a premise contradicting the original one.
        result = judged(relation_id, "contradiction", "entailment")
        assert (result.verdict, result.oracle) == (Verdict.SKIP, "precondition")


def test_checks_report_missing_answers_as_error():
    result = no_polar_flip(check_input(None, "entailment"))
    assert result.verdict is Verdict.ERROR
    assert "source" in result.reason


# ---------------------------------------------------------------- which NLI field is perturbed


@pytest.mark.parametrize("relation_id", ["sentence.add_random", "word.insert_random"])
def test_added_content_goes_into_the_premise_only(relation_id):
    """LLMorph catalogue, "inference": MR 9 (word insertion) and MR 84 (random sentence) use
    ``transform_indices [[0]]``, the premise only.

    Premise "A man in a blue shirt is repairing a bicycle." entails hypothesis "A man is
    outside."; a random sentence appended to the *hypothesis* ("A man is outside. The river runs
    along the eastern edge of the town.") is a claim the premise does not support, so "same
    label" would be wrong. Before: three follow-ups (premise, hypothesis, both).
    """
    [followup] = nli_followups(relation_id)
    assert isinstance(followup, FollowUp)
    assert followup.target == "premise"
    assert followup.fields["hypothesis"] == NLI["hypothesis"]
    assert followup.fields["premise"] != NLI["premise"]
    # Other two-field tasks keep one follow-up per field and one for both.
    qa = Sample(fields={"context": "The shop opens at nine on weekdays.", "question": "When?"})
    targets = [
        f.target
        for f in generate_followups(
            get_relation(relation_id), qa, BUILTIN_TASKS["qa"], BUILTIN_TASKS["qa"].fields
        )
    ]
    assert targets == ["context", "question", "context+question"]


def test_extend_premise_asks_for_a_sentence_the_hypothesis_follows_from():
    """LLMorph 77 ("generate a premise based on the hypothesis": 'I was outside today.' →
    'I was walking the dog just now.'): the appended sentence implies the hypothesis, it is not
    implied by it (which is what we used to ask for, the direction of 78)."""
    rewrite = Recorder("A man is fixing a bike in his front yard.")
    [followup] = nli_followups("nli.extend_premise", rewrite)
    assert followup.fields["premise"].endswith("A man is fixing a bike in his front yard.")
    assert "from which the sentence below certainly follows" in rewrite.prompts[0]
    assert "Sentence: A man is outside." in rewrite.prompts[0]


def test_appended_sentences_go_through_the_content_check():
    """77/78 append to a field that keeps all its source text, so comparing the whole field with
    its source would pass any sentence; the sentence itself is checked instead."""
    numbers = {
        "premise": "Last May, Maria sold 3 paintings in Lisbon.",
        "hypothesis": "In May, Maria sold 3 works.",
    }
    relation = get_relation("nli.extend_premise")
    task = BUILTIN_TASKS["nli"]
    # 77: a sentence that implies "In May, Maria sold 3 works." must keep May, Maria and 3.
    [lost] = generate_followups(
        relation, Sample(fields=numbers), task, task.fields,
        rewrite=Recorder("Someone sold some paintings."),
    )  # fmt: skip
    assert isinstance(lost, SkippedFollowUp)
    assert lost.reason.startswith("invalid_followup: the generated sentence drops")
    assert "Maria" in lost.reason and "3" in lost.reason
    # 78: a sentence implied by the premise may not bring a name the premise lacks.
    [invented] = generate_followups(
        get_relation("nli.extend_hypothesis"), Sample(fields=numbers), task, task.fields,
        rewrite=Recorder("Maria met Pedro in Lisbon."),
    )  # fmt: skip
    assert isinstance(invented, SkippedFollowUp)
    assert "Pedro" in invented.reason
    # Commentary around the sentence is cleaned off first.
    [kept] = generate_followups(
        get_relation("nli.extend_hypothesis"), Sample(fields=numbers), task, task.fields,
        rewrite=Recorder("Here is the sentence:\nMaria sold paintings in Lisbon."),
    )  # fmt: skip
    assert (
        kept.fields["hypothesis"] == "In May, Maria sold 3 works. Maria sold paintings in Lisbon."
    )


def test_antonyms_change_one_nli_input_at_a_time():
    """LLMorph catalogue, "inference", MR 10: ``transform_indices [[0], [1]]`` — the premise
    alone, then the hypothesis alone. Both at once can cancel out: "The soup is hot." /
    "The soup is not cold." → "The soup is cold." / "The soup is not hot." keeps the label,
    although a "should change" relation expects a change."""
    from relations.apply import field_targets

    antonym = get_relation("word.antonym")
    assert antonym.joint_target is False
    assert field_targets(antonym, ["premise", "hypothesis"]) == [("premise",), ("hypothesis",)]
    synonym = get_relation("word.synonym")  # an invariance relation keeps the joint follow-up
    both = field_targets(synonym, ["premise", "hypothesis"], nli_target="both")
    assert both[-1] == ("premise", "hypothesis")
