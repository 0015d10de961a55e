"""sentence.*: LLMorph's sentence-level relations, and the shared sentence splitter."""

from __future__ import annotations

import dataclasses

import pytest

from relations.apply import SkippedFollowUp
from relations.base import Expectation, FollowUp, RelationKind, TransformContext
from relations.registry import get_relation, list_relations
from relations.sentence import BACK_TRANSLATION_LANGUAGES, NEUTRAL_SENTENCES
from relations.text_utils import is_question, split_clauses, split_sentences
from tests.relations.helpers import followups as shared_followups
from tests.relations.helpers import make_ctx as shared_ctx

REVIEW = "The hotel room was small. The staff, however, were friendly and quick to help."


def make_ctx(seed: int = 0, rewrite=None, params=None) -> TransformContext:
    return shared_ctx(seed, rewrite, params, task_id="sentiment", field="text")


def followups(relation, text: str, rewrite=None, seed: int = 0):
    return shared_followups(relation, text, rewrite, seed, task_id="sentiment", field="text")


def test_catalogue_numbers_and_expectations():
    refs = {r.id: r.ref for r in list_relations() if r.family == "sentence"}
    assert refs == {
        "sentence.identity": "LLMorph 49",
        "sentence.paraphrase": "LLMorph 51",
        "sentence.shuffle": "LLMorph 19",
        "sentence.add_random": "LLMorph 84",
        "sentence.back_translation": "LLMorph 120",
        "sentence.uppercase": "LLMorph 102",
    }
    for relation_id in refs:
        assert get_relation(relation_id).expectation == Expectation.EQUIVALENT
    assert get_relation("sentence.back_translation").kind == RelationKind.LLM
    assert get_relation("sentence.identity").params["allow_identical"] is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Lee paid $3.50 for tea. Was it cheap? Yes!",
            ["Dr. Lee paid $3.50 for tea.", "Was it cheap?", "Yes!"],
        ),
        (
            "J. R. Smith weighs 70.5 kg, e.g. more than Ann. She said “Stop!” and left.",
            ["J. R. Smith weighs 70.5 kg, e.g. more than Ann.", "She said “Stop!” and left."],
        ),
        ("First part\n\nSecond part", ["First part", "Second part"]),
        ("", []),
    ],
)
def test_splitter_keeps_abbreviations_initials_and_decimals(text, expected):
    assert split_sentences(text) == expected


def test_question_detection_and_clauses():
    assert is_question("How many apples are left?")
    assert is_question("Find the value of x.")
    assert not is_question("Tom has 3 apples.")
    assert split_clauses("If x is 1,000, what is y?") == (["If x is 1,000", "what is y"], "?")


def test_identity_leaves_the_text_alone():
    [followup] = followups("sentence.identity", REVIEW)
    assert followup.fields == {"text": REVIEW}


def test_shuffle_changes_the_order_and_keeps_the_sentence_multiset():
    relation = get_relation("sentence.shuffle")
    text = "Alpha is first. Beta is second. Gamma is third. Delta is fourth."
    assert relation.transform(text, make_ctx(0)) == (
        "Alpha is first. Beta is second. Delta is fourth. Gamma is third."
    )
    for seed in range(20):
        output = relation.transform(text, make_ctx(seed))
        assert output != text
        assert output.startswith("Alpha is first.")
        assert sorted(split_sentences(output)) == sorted(split_sentences(text))


@pytest.mark.parametrize(
    "text",
    [
        REVIEW,  # "The staff, however, …" first would contrast with nothing
        "Anna reads 25 pages a day. The novel has 300 pages. She started on 1 June.",
        "The students finished early. The teacher praised the work. Then she left.",
    ],
)
def test_shuffle_keeps_the_first_sentence_and_back_references_in_place(text):
    """LLMorph 19 (sentence shuffle, an invariance relation): the shuffled text must say the same
    thing. A sentence with "She", "Then" or "it" refers back, so it moves with the sentence before
    it, and the first sentence (who and what) stays first. Here nothing can move: SKIP.
    """
    [skipped] = followups("sentence.shuffle", text)
    assert isinstance(skipped, SkippedFollowUp)
    assert skipped.reason.startswith("no two sentences after the first")


def test_shuffle_needs_two_sentences():
    [skipped] = followups("sentence.shuffle", "Just one sentence here.")
    assert isinstance(skipped, SkippedFollowUp)
    assert skipped.reason == "needs at least 2 sentences, found 1"


def test_add_random_appends_a_neutral_sentence_chosen_by_the_seed():
    relation = get_relation("sentence.add_random")
    assert relation.transform("Nice film.", make_ctx(0)) == (
        "Nice film. Buses leave from the square in front of the town hall."
    )
    outputs = {relation.transform("Nice film.", make_ctx(seed)) for seed in range(60)}
    assert outputs == {f"Nice film. {sentence}" for sentence in NEUTRAL_SENTENCES}


def test_uppercase_leaves_math_and_latex_commands_alone():
    relation = get_relation("sentence.uppercase")
    assert relation.transform(REVIEW, make_ctx()) == (
        "THE HOTEL ROOM WAS SMALL. THE STAFF, HOWEVER, WERE FRIENDLY AND QUICK TO HELP."
    )
    assert relation.transform(r"Let $x^2 = 9$ and \(y\) be given; it costs $5.", make_ctx()) == (
        r"LET $x^2 = 9$ AND \(y\) BE GIVEN; IT COSTS $5."
    )
    [skipped] = followups(relation, "ALL CAPS ALREADY!")
    assert isinstance(skipped, SkippedFollowUp)
    assert "no lower-case letters" in skipped.reason


class PivotRewriter:
    """Fake endpoint for back-translation: tags the text going out, answers in English back."""

    def __init__(self, pivot_response=None, back_response=None) -> None:
        self.prompts: list[str] = []
        self.pivot_response = pivot_response
        self.back_response = back_response

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "into English" in prompt:
            if self.back_response is not None:
                return self.back_response
            return "Here is the translation:\n\nThe room was small, but the staff were kind."
        if self.pivot_response is not None:
            return self.pivot_response
        return "[pivot] " + prompt.split("<text>\n", 1)[1].split("\n</text>", 1)[0]


def test_back_translation_makes_two_calls_through_a_seeded_language():
    rewriter = PivotRewriter()
    [followup] = followups("sentence.back_translation", REVIEW, rewrite=rewriter)
    assert isinstance(followup, FollowUp)
    assert followup.fields["text"] == "The room was small, but the staff were kind."
    to_pivot, from_pivot = rewriter.prompts
    language = to_pivot.split("into ", 1)[1].split(".", 1)[0]
    assert language in BACK_TRANSLATION_LANGUAGES
    assert REVIEW in to_pivot
    assert f"[pivot] {REVIEW}" in from_pivot
    assert f"Translate the {language} text below into English." in from_pivot
    assert "preserve every number, entity and the question" in from_pivot.lower()


def test_back_translation_language_list_is_a_parameter():
    relation = dataclasses.replace(
        get_relation("sentence.back_translation"), params={"languages": ("Finnish",)}
    )
    rewriter = PivotRewriter()
    followups(relation, REVIEW, rewrite=rewriter)
    assert rewriter.prompts[0].startswith("Translate the text below into Finnish.")


@pytest.mark.parametrize(
    ("pivot", "back", "calls"),
    [("", None, 1), (None, "   ", 2)],
)
def test_back_translation_skips_on_an_empty_translation(pivot, back, calls):
    rewriter = PivotRewriter(pivot_response=pivot, back_response=back)
    [skipped] = followups("sentence.back_translation", REVIEW, rewrite=rewriter)
    assert isinstance(skipped, SkippedFollowUp)
    assert "empty" in skipped.reason
    assert len(rewriter.prompts) == calls


def test_paraphrase_goes_through_the_endpoint_with_the_constraint():
    prompts: list[str] = []

    def rewrite(prompt: str) -> str:
        prompts.append(prompt)
        return "“The room was tiny; the staff were helpful.”"

    [followup] = followups("sentence.paraphrase", REVIEW, rewrite=rewrite)
    assert followup.fields["text"] == "The room was tiny; the staff were helpful."
    assert "preserve every number, entity and the question" in prompts[0].lower()
    assert REVIEW in prompts[0]
