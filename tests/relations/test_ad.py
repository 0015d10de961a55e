"""ad.*: AgentDiff operators — filtered LLM rewrites and the three presentation operators."""

from __future__ import annotations

import hashlib
import random

import pytest

from core.tasks import BUILTIN_TASKS
from relations.ad import DISTRACTORS, md5_rng
from relations.apply import SkippedFollowUp, transform_text
from relations.base import Expectation, FollowUp, RelationKind
from relations.catalog import describe_relation
from relations.registry import get_relation, list_relations
from tests.relations.helpers import FOUR_FACTS, followups, make_ctx

SOURCE = "Lena packs 12 boxes an hour and Omar packs 9. How many boxes do they pack in 3 hours?"


def test_operators_are_split_into_meaning_and_presentation_sides():
    relations = {r.id: r for r in list_relations() if r.family == "ad"}
    sides = {rid: r.side for rid, r in relations.items()}
    assert sides == {
        "ad.paraphrase": "meaning",
        "ad.synonym": "meaning",
        "ad.reorder": "presentation",
        "ad.format": "presentation",
        "ad.distractor": "presentation",
    }
    assert all(r.expectation == Expectation.EQUIVALENT for r in relations.values())
    assert {rid for rid, r in relations.items() if r.kind == RelationKind.LLM} == {
        "ad.paraphrase",
        "ad.synonym",
    }
    assert all(describe_relation(r)["side"] == r.side for r in relations.values())


def test_format_lays_statements_out_as_bullets_and_the_question_last():
    relation = get_relation("ad.format")
    text = "Tom has 3 apples. He buys 2 more at 1.5 dollars each. How many apples does he have?"
    assert relation.transform(text, make_ctx()) == (
        "- Tom has 3 apples.\n"
        "- He buys 2 more at 1.5 dollars each.\n"
        "Question: How many apples does he have?"
    )


def test_format_moves_a_leading_question_to_the_end_and_drops_a_duplicate_label():
    relation = get_relation("ad.format")
    assert relation.transform("Question: Who won? The match ended late.", make_ctx()) == (
        "- The match ended late.\nQuestion: Who won?"
    )
    assert relation.transform("The film was long but moving.", make_ctx()) == (
        "- The film was long but moving."
    )


def test_reorder_is_seeded_by_the_md5_of_the_text_not_the_case_seed():
    relation = get_relation("ad.reorder")
    expected = (
        "Ana buys 4 pens. Cleo buys 2 erasers. Dan buys 9 rulers. Ben buys 7 pencils. "
        "How many items were bought?"
    )
    assert relation.transform(FOUR_FACTS, make_ctx(0)) == expected
    for seed in (1, 2, 99):
        assert relation.transform(FOUR_FACTS, make_ctx(seed)) == expected
        assert (
            transform_text(relation, FOUR_FACTS, seed=seed, task=BUILTIN_TASKS["qa"]).fields["text"]
            == expected
        )
    digest = hashlib.md5(FOUR_FACTS.encode()).digest()
    assert md5_rng(FOUR_FACTS).random() == random.Random(int.from_bytes(digest[:8], "big")).random()


def test_reorder_keeps_the_sentence_multiset_and_the_question_last():
    """AgentDiff §3.1 (reorder is a presentation operator: same content, other layout). Anchors:
    the first sentence and the question stay put, the middle moves.
    """
    relation = get_relation("ad.reorder")
    text = "Mia reads. Noor paints. Ola sings. Pia runs. Who is the youngest?"
    output = relation.transform(text, make_ctx())
    assert output != text
    assert output.startswith("Mia reads. ")
    assert output.endswith("Who is the youngest?")
    assert sorted(output.split(". ")) == sorted(text.split(". "))


def test_reorder_moves_an_opening_subordinate_clause_when_no_sentence_can_move():
    relation = get_relation("ad.reorder")
    assert relation.transform(
        "If a train travels 60 km in 1.5 hours, the trip costs 5 dollars.", make_ctx()
    ) == ("The trip costs 5 dollars if a train travels 60 km in 1.5 hours.")


@pytest.mark.parametrize(
    "text",
    [
        # "its" would come before the train it stands for.
        "If a train travels 60 km in 1.5 hours, what is its speed?",
        # A list is not a clause: "2 pears and 5 plums, Tom has 3 apples." is not English.
        "Tom has 3 apples, 2 pears and 5 plums. How many fruits does he have?",
        # The pronoun sentence leans on the first one; nothing else can move.
        "Maria walked 12 km. She did not buy apples. How far did Maria walk?",
    ],
)
def test_reorder_never_breaks_anchors_clauses_or_references(text):
    """AgentDiff §3.1: every operator preserves the gold answer, so a reorder that makes the text
    ungrammatical or moves a pronoun before its name is no reorder. These used to be produced
    ("2 pears and 5 plums, Tom has 3 apples."); now they are SKIPs.
    """
    [skipped] = followups("ad.reorder", text)
    assert isinstance(skipped, SkippedFollowUp)
    assert skipped.reason.startswith("nothing to reorder")


def test_reorder_skips_when_nothing_can_move():
    [skipped] = followups("ad.reorder", "How many apples are left?")
    assert isinstance(skipped, SkippedFollowUp)
    assert skipped.reason.startswith("nothing to reorder")


def test_distractor_prefixes_an_explicitly_unrelated_sentence():
    relation = get_relation("ad.distractor")
    assert relation.transform(SOURCE, make_ctx(0)) == (
        "Unrelated note: some bus routes in the old town change their timetable in winter. "
        + SOURCE
    )
    outputs = {relation.transform(SOURCE, make_ctx(seed)) for seed in range(30)}
    assert outputs == {f"{d} {SOURCE}" for d in DISTRACTORS}
    assert all(d.startswith("Unrelated note:") for d in DISTRACTORS)
    assert not any(ch.isdigit() for d in DISTRACTORS for ch in d)


class Rewriter:
    def __init__(self, response: str) -> None:
        self.response = response
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.response


@pytest.mark.parametrize(
    ("relation_id", "instruction_word"),
    [("ad.paraphrase", "Paraphrase"), ("ad.synonym", "synonyms")],
)
def test_meaning_operators_keep_the_first_line_of_the_cleaned_rewrite(
    relation_id, instruction_word
):
    rewriter = Rewriter(
        "Here is the rewritten text:\n\n"
        "Lena boxes 12 parcels an hour and Omar boxes 9. How many do they box in 3 hours?\n"
        "I replaced two verbs."
    )
    [followup] = followups(relation_id, SOURCE, rewrite=rewriter)
    assert isinstance(followup, FollowUp)
    assert followup.fields["problem"] == (
        "Lena boxes 12 parcels an hour and Omar boxes 9. How many do they box in 3 hours?"
    )
    [prompt] = rewriter.prompts
    assert "preserve every number, entity and the question" in prompt.lower()
    assert "single line" in prompt
    assert SOURCE in prompt
    assert instruction_word in prompt


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("", "empty"),
        ('"   "', "empty"),
        ("Boxes?", "too short"),
        (SOURCE + " " + SOURCE + " And then some more words.", "too long"),
        (f"Sure! {SOURCE}", "identical to the source"),
    ],
)
def test_meaning_operators_reject_bad_rewrites(response, reason):
    [skipped] = followups("ad.paraphrase", SOURCE, rewrite=Rewriter(response))
    assert isinstance(skipped, SkippedFollowUp)
    assert reason in skipped.reason
