"""si.*: the semantic-invariance relations (rule-based framings, fact permutation, LLM rewrites)."""

from __future__ import annotations

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations.apply import SkippedFollowUp, generate_followups, transform_text
from relations.base import Expectation, FollowUp, NotApplicable, RelationKind
from relations.registry import get_relation, list_relations
from relations.si import ACADEMIC_FRAMINGS, BUSINESS_FRAMINGS, permute_facts
from tests.relations.helpers import FOUR_FACTS, followups, make_ctx

PROBLEM = "A cyclist rides 36 km in 1.5 hours. How long does Maya take?"
CONSTRAINT = "preserve every number, entity and the question"


class RecordingRewriter:
    """A fake transformation endpoint: records prompts, answers with a fixed response."""

    def __init__(self, response: str) -> None:
        self.response = response
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.response


def test_catalog_has_the_eight_relations_with_paper_categories():
    relations = {r.id: r for r in list_relations() if r.family == "si"}
    assert set(relations) == {
        "si.identity",
        "si.paraphrase",
        "si.reorder_facts",
        "si.expand",
        "si.contract",
        "si.academic",
        "si.business",
        "si.contrastive",
    }
    categories = {rid: r.category for rid, r in relations.items()}
    assert categories["si.reorder_facts"] == "structural"
    assert categories["si.expand"] == categories["si.contract"] == "verbosity"
    assert categories["si.academic"] == categories["si.contrastive"] == "contextual"
    llm = {rid for rid, r in relations.items() if r.kind == RelationKind.LLM}
    assert llm == {
        "si.paraphrase",
        "si.reorder_facts",
        "si.expand",
        "si.contract",
        "si.contrastive",
    }
    assert all(relations[rid].similarity_floor for rid in llm)
    assert [rid for rid, r in relations.items() if r.negative_control] == ["si.contrastive"]
    assert "not strictly meaning-preserving" in relations["si.contrastive"].description
    assert all(
        r.expectation == Expectation.EQUIVALENT and r.tasks is None for r in relations.values()
    )
    assert all("semantic-invariance" in r.ref for r in relations.values())


def test_identity_returns_the_text_and_allows_an_identical_followup():
    relation = get_relation("si.identity")
    assert relation.params["allow_identical"] is True
    [followup] = followups("si.identity", PROBLEM)
    assert isinstance(followup, FollowUp)
    assert followup.fields == {"problem": PROBLEM}


def test_academic_framing_is_seeded_and_keeps_the_text_verbatim():
    relation = get_relation("si.academic")
    assert relation.transform(PROBLEM, make_ctx(0)) == (
        "This item comes from a collection of teaching exercises used in undergraduate lecture "
        "courses.\n\nA cyclist rides 36 km in 1.5 hours. How long does Maya take?"
        "\n\n(End of exercise.)"
    )
    outputs = {relation.transform(PROBLEM, make_ctx(seed)) for seed in range(40)}
    assert outputs == {framing.format(text=PROBLEM) for framing in ACADEMIC_FRAMINGS}
    assert all(PROBLEM in output for output in outputs)
    assert transform_text(relation, PROBLEM, seed=5, task=BUILTIN_TASKS["qa"]) == transform_text(
        relation, PROBLEM, seed=5, task=BUILTIN_TASKS["qa"]
    )


def test_business_framing_is_seeded_and_keeps_the_text_verbatim():
    relation = get_relation("si.business")
    assert relation.transform(PROBLEM, make_ctx(0)) == (
        "A client's project manager forwards the following item to the consulting team and asks "
        "for an assessment.\n\nA cyclist rides 36 km in 1.5 hours. How long does Maya take?"
        "\n\n(End of forwarded item.)"
    )
    outputs = {relation.transform(PROBLEM, make_ctx(seed)) for seed in range(40)}
    assert outputs == {framing.format(text=PROBLEM) for framing in BUSINESS_FRAMINGS}
    assert any("logistics" in output for output in outputs)
    assert any("Quality-control" in output for output in outputs)


def test_framings_add_no_numbers():
    # A framing must not add a number a "last number" answer parser could pick up.
    for framing in ACADEMIC_FRAMINGS + BUSINESS_FRAMINGS:
        assert not any(ch.isdigit() for ch in framing)


def test_reorder_fallback_permutes_facts_and_keeps_the_question_last():
    relation = get_relation("si.reorder_facts")
    assert relation.transform(FOUR_FACTS, make_ctx(0)) == (
        "Cleo buys 2 erasers. Ana buys 4 pens. Ben buys 7 pencils. Dan buys 9 rulers. "
        "How many items were bought?"
    )
    for seed in range(20):
        output = relation.transform(FOUR_FACTS, make_ctx(seed))
        sentences = output.split(". ")
        assert output != FOUR_FACTS
        assert output.endswith("How many items were bought?")
        assert sorted(sentences) == sorted(FOUR_FACTS.split(". "))


def test_reorder_fallback_moves_a_dependent_sentence_with_its_antecedent():
    text = "Tom has 3 apples. Then he buys 2 more. Mia has 5 pears. How many fruits are there?"
    # Two independent groups: the only other order puts Mia's fact first.
    assert permute_facts(text, make_ctx(3)) == (
        "Mia has 5 pears. Tom has 3 apples. Then he buys 2 more. How many fruits are there?"
    )


def test_reorder_fallback_needs_two_independent_facts():
    with pytest.raises(NotApplicable, match="at least 2 independent fact sentences"):
        permute_facts("Tom has 3 apples. He eats one. How many are left?", make_ctx())
    [skipped] = followups("si.reorder_facts", PROBLEM)
    assert isinstance(skipped, SkippedFollowUp)
    assert "at least 2 independent fact sentences" in skipped.reason


def test_reorder_uses_the_endpoint_when_one_is_configured():
    rewriter = RecordingRewriter("Ben buys 7 pencils. Ana buys 4 pens. How many items?")
    [followup] = followups("si.reorder_facts", FOUR_FACTS, rewrite=rewriter)
    assert followup.fields["problem"] == "Ben buys 7 pencils. Ana buys 4 pens. How many items?"
    [prompt] = rewriter.prompts
    assert CONSTRAINT in prompt.lower()
    assert FOUR_FACTS in prompt
    assert "different order" in prompt


@pytest.mark.parametrize(
    ("relation_id", "instruction_word"),
    [
        ("si.paraphrase", "Paraphrase"),
        ("si.expand", "Expand"),
        ("si.contract", "short"),
        ("si.contrastive", "contrast"),
    ],
)
def test_llm_relations_prompt_with_the_constraint_and_clean_the_answer(
    relation_id, instruction_word
):
    rewriter = RecordingRewriter(
        'Sure! Here is the rewritten text:\n\n"A rider covers 36 km in 1.5 hours. '
        'How long does Maya need?"\n\nNote: all numbers were kept.'
    )
    [followup] = followups(relation_id, PROBLEM, rewrite=rewriter)
    assert isinstance(followup, FollowUp)
    assert followup.fields["problem"] == (
        "A rider covers 36 km in 1.5 hours. How long does Maya need?"
    )
    [prompt] = rewriter.prompts
    assert CONSTRAINT in prompt.lower()
    assert PROBLEM in prompt
    assert instruction_word in prompt


@pytest.mark.parametrize("relation_id", ["si.paraphrase", "si.expand", "si.contrastive"])
def test_an_empty_rewrite_becomes_a_skip(relation_id):
    [skipped] = followups(relation_id, PROBLEM, rewrite=RecordingRewriter('  ""  '))
    assert isinstance(skipped, SkippedFollowUp)
    assert "empty" in skipped.reason


def test_llm_relation_without_an_endpoint_is_skipped_with_a_reason():
    [skipped] = followups("si.paraphrase", PROBLEM)
    assert isinstance(skipped, SkippedFollowUp)
    assert "no transformation endpoint" in skipped.reason


def test_two_field_task_rewrites_each_field_and_both():
    rewriter = RecordingRewriter("REWRITTEN")
    sample = Sample(fields={"context": "Lyon is in France.", "question": "Where is Lyon?"})
    outputs = generate_followups(
        get_relation("si.paraphrase"),
        sample,
        BUILTIN_TASKS["qa"],
        ["context", "question"],
        rewrite=rewriter,
    )
    assert [o.target for o in outputs] == ["context", "question", "context+question"]
    assert outputs[0].fields == {"context": "REWRITTEN", "question": "Where is Lyon?"}
    assert outputs[2].fields == {"context": "REWRITTEN", "question": "REWRITTEN"}
