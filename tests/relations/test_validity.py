"""The follow-up validity gate: identical, dropped numbers/entities, similarity floor."""

from __future__ import annotations

import dataclasses

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations.apply import generate_followups
from relations.base import Expectation, FollowUp
from relations.registry import get_relation
from relations.validity import (
    check_followup,
    dropped_content,
    gate_followup,
    named_entities,
    source_numbers,
)

SOURCE = "A shop in Paris sells 42 mugs a day at 3.5 euros each. How much does it earn?"


def constant(value: float):
    calls: list[tuple[str, str]] = []

    def similarity(a: str, b: str) -> float:
        calls.append((a, b))
        return value

    similarity.calls = calls  # type: ignore[attr-defined]
    return similarity


def never_called(a: str, b: str) -> float:
    raise AssertionError("similarity should not be computed here")


def test_a_followup_that_drops_a_number_is_invalid():
    paraphrase = get_relation("si.paraphrase")
    followup = "A shop in Paris sells many mugs a day at 3.5 euros each. What does it earn?"
    reason = check_followup(paraphrase, SOURCE, followup, similarity=never_called)
    assert reason == "invalid_followup: dropped 42"


def test_dropped_decimal_and_entity_are_both_named():
    followup = "A shop sells 42 mugs a day at 3 or 5 euros each. How much does it earn?"
    reason = check_followup(get_relation("ad.paraphrase"), SOURCE, followup)
    assert reason == "invalid_followup: dropped 3.5, Paris"


def test_rewordings_that_keep_the_numbers_are_valid():
    paraphrase = get_relation("si.paraphrase")
    assert (
        check_followup(
            paraphrase,
            SOURCE,
            "In paris, a store sells 42 mugs daily for 3.5 euros. What does it take in?",
        )
        is None
    )
    assert (
        check_followup(paraphrase, "It costs 1,000 dollars.", "The price is 1000 dollars.") is None
    )
    assert (
        check_followup(paraphrase, "Add 3 and 12 to 25%.", "Add three and a dozen to 25 percent.")
        is None
    )
    assert check_followup(paraphrase, r"Halve $\frac{1}{2}$.", "Take half of 1/2.") is None
    assert check_followup(paraphrase, "He ran 25 km.", "He ran twenty-five km.") is None


def test_identical_followup_is_skipped_unless_the_relation_allows_it():
    assert check_followup(get_relation("si.paraphrase"), SOURCE, f"  {SOURCE}\n") == (
        "identical_followup"
    )
    assert check_followup(get_relation("ad.format"), "Hi there.", "Hi   there.") == (
        "identical_followup"
    )
    for identity in ("si.identity", "sentence.identity"):
        assert (
            check_followup(get_relation(identity), SOURCE, SOURCE, similarity=never_called) is None
        )


def test_our_rule_based_invariance_relations_are_content_checked_others_are_not():
    """Issue 9 item 8 (LLMorph §3: an invariance relation must keep the meaning): the gate SKIPs
    what a rule still breaks. ad.format dropping "42" is invalid; word.same_category swaps names
    on purpose and is not checked.
    """
    assert check_followup(get_relation("ad.format"), "Tom has 42.", "- Tom has some.") == (
        "invalid_followup: dropped 42"
    )
    assert check_followup(get_relation("char.delete"), "It is not red.", "It is nt red.") == (
        "invalid_followup: negation words changed (1 → 0)"
    )
    swapped = check_followup(get_relation("word.same_category"), "Tom ran.", "Paul ran.")
    assert swapped is None


def test_similarity_floor_uses_the_given_function():
    paraphrase = get_relation("si.paraphrase")
    followup = "A Paris shop sells 42 mugs daily at 3.5 euros each. What are its earnings?"
    low = constant(0.41)
    assert check_followup(paraphrase, SOURCE, followup, similarity=low) == (
        "invalid_followup: input similarity 0.41 < floor 0.70"
    )
    assert low.calls == [(SOURCE, followup)]
    assert check_followup(paraphrase, SOURCE, followup, similarity=constant(0.93)) is None
    assert check_followup(paraphrase, SOURCE, followup) is None  # no function: floor not checked
    no_floor = dataclasses.replace(paraphrase, similarity_floor=None)
    assert check_followup(no_floor, SOURCE, followup, similarity=never_called) is None


def test_contrastive_may_add_content_but_must_keep_numbers():
    contrastive = get_relation("si.contrastive")
    added = SOURCE + " Unlike a market stall in Rome, the shop has fixed prices."
    assert check_followup(contrastive, SOURCE, added) is None
    assert check_followup(contrastive, SOURCE, added.replace("42", "forty")).startswith(
        "invalid_followup: dropped 42"
    )


def test_custom_llm_relation_can_opt_out_of_the_preservation_check():
    relation = dataclasses.replace(
        get_relation("si.paraphrase"), params={"preserve_content": False}
    )
    assert check_followup(relation, "Tom has 42 mugs.", "Tom has 84 mugs.") is None


def test_relations_that_replace_content_on_purpose_are_not_preservation_checked():
    paraphrase = get_relation("si.paraphrase")
    for expectation in (Expectation.DIFFERENT, Expectation.NO_POLAR_FLIP):
        relation = dataclasses.replace(paraphrase, expectation=expectation)
        assert check_followup(relation, "Tom has 42 mugs in Oslo.", "Tom owns mugs.") is None
    forced = dataclasses.replace(
        paraphrase, expectation=Expectation.DIFFERENT, params={"preserve_content": True}
    )
    assert check_followup(forced, "Tom has 42 mugs.", "Tom owns mugs.") == (
        "invalid_followup: dropped 42"
    )


def test_extraction_helpers():
    assert source_numbers(r"Pay $1,000 or 25% of 3.50, \frac{1}{2} and 3{,}000 (H2O, v1.2).") == [
        "1,000",
        "25",
        "3.50",
        "1",
        "2",
        "3,000",
    ]
    assert named_entities("Last year, Dr. Lee flew to Lyon with NASA's help. Tom stayed.") == [
        "Lee",
        "Lyon",
        "NASA",
    ]
    # A capitalised word that opens a sentence is not required (capitalised either way) …
    assert dropped_content("Zed has 3 cats.", "He has 3 cats.") == []
    # … unless it is a first name, city, country, weekday or month of our lists.
    assert dropped_content("Tom has 3 cats.", "He has 3 cats.") == ["Tom"]


def test_gate_followup_checks_each_changed_field():
    paraphrase = get_relation("si.paraphrase")
    source = {"context": "Lyon has 500 bridges.", "question": "How many bridges does Lyon have?"}
    bad = FollowUp(fields={**source, "context": "Lyon has many bridges."}, target="context")
    assert gate_followup(paraphrase, source, bad) == "invalid_followup: dropped 500 (in context)"
    good = FollowUp(
        fields={**source, "question": "What is the bridge count of Lyon?"}, target="question"
    )
    assert gate_followup(paraphrase, source, good) is None
    same = FollowUp(fields=dict(source), target="context+question")
    assert gate_followup(paraphrase, source, same) == "identical_followup"


def test_gate_followup_accepts_unchanged_fields_with_a_preamble_or_companions():
    relation = get_relation("ad.format")
    source = {"text": "Hello there."}
    assert (
        gate_followup(relation, source, FollowUp(fields=source, target="text", preamble="Rules"))
        is None
    )
    with_companion = FollowUp(fields=source, target="text", companions={"b": {"text": "x"}})
    assert gate_followup(relation, source, with_companion) is None
    assert (
        gate_followup(get_relation("si.identity"), source, FollowUp(fields=source, target="text"))
        is None
    )


def test_gate_followup_compares_against_a_derived_source():
    relation = get_relation("sentence.paraphrase")
    derived = FollowUp(
        fields={"text": "It rained 7 days."},
        target="text",
        source_fields={"text": "It rained for 7 days."},
    )
    assert gate_followup(relation, {"text": "unrelated original"}, derived) is None


@pytest.mark.parametrize("response", ["Tom pays some euros in total.", "Tom pays 12 euros."])
def test_gate_catches_an_llm_rewrite_that_dropped_content(response):
    sample = Sample(
        fields={"problem": "Tom pays 12 euros for 4 books in Berlin. What is the unit price?"}
    )
    [followup] = generate_followups(
        get_relation("si.paraphrase"),
        sample,
        BUILTIN_TASKS["reasoning"],
        ["problem"],
        rewrite=lambda _: response,
    )
    reason = gate_followup(get_relation("si.paraphrase"), sample.fields, followup)
    assert reason is not None and reason.startswith("invalid_followup: dropped")


# Recorded rewrites of our own, in the shape a small rewriter model returns them: (relation,
# source, follow-up, the reason the gate must give, or None when the rewrite is fine).
RECORDED_REWRITES = [
    # Changed meaning: "hung up on me" (negative) became a neutral "was suspended".
    (
        "si.paraphrase",
        "The agent hung up on me twice before I could explain.",
        "The agent was suspended twice before I could explain.",
        "invalid_followup: sentiment lost (negative)",
    ),
    # A calm day became a busy one: "calm" lost, "busy" added.
    (
        "ad.paraphrase",
        "It was a calm, ordinary Tuesday at the office.",
        "It was a normal Tuesday in a busy office.",
        "invalid_followup: sentiment lost (positive)",
    ),
    # The rewriter's own commentary kept in an expansion.
    (
        "si.expand",
        "Tom buys a pen for 3 dollars.",
        "Tom buys a pen for 3 dollars. In this example, 'a' is replaced with 'the' to clarify.",
        'invalid_followup: meta-commentary ("In this example")',
    ),
    (
        "sentence.back_translation",
        "The soup was not warm enough.",
        "The revised sentence: the soup was not warm enough.",
        'invalid_followup: meta-commentary ("The revised sentence")',
    ),
    (
        "si.paraphrase",
        "Anna reads 25 pages a day.",
        '"Every day, Anna reads 25 pages."',
        "invalid_followup: the whole answer is quoted",
    ),
    # A negation dropped, and one added.
    (
        "sentence.paraphrase",
        "The package never arrived on Monday.",
        "The package arrived on Monday.",
        "invalid_followup: negation lost",
    ),
    (
        "ad.paraphrase",
        "The shop opens at 9 on Monday.",
        "The shop does not open before 9 on Monday.",
        "invalid_followup: negation added",
    ),
    # An entity replaced by a pronoun (a first name of our lists, even opening the sentence).
    (
        "si.paraphrase",
        "Maria walked 12 km.",
        "She walked 12 km.",
        "invalid_followup: dropped Maria",
    ),
    # Fine rewrites: other words, same polarity, negation and entities.
    (
        "si.paraphrase",
        "The agent hung up on me twice before I could explain.",
        "Twice the agent hung up on me before I was able to explain.",
        None,
    ),
    (
        "ad.paraphrase",
        "The staff were friendly but the room was noisy.",
        "The room was noisy, but the staff were helpful.",
        None,
    ),
    (
        "sentence.paraphrase",
        "The package never arrived on Monday.",
        "On Monday the package did not arrive.",
        None,
    ),
    # si.expand may add sentences with new sentiment words, as long as the old ones stay.
    (
        "si.expand",
        "The film was boring.",
        "The film was boring. A film is a story told in moving pictures; a good one keeps you "
        "watching.",
        None,
    ),
]


@pytest.mark.parametrize(("relation_id", "source", "followup", "reason"), RECORDED_REWRITES)
def test_llm_rewrites_that_change_the_meaning_are_skipped(relation_id, source, followup, reason):
    """Issue 9 item 9. LLMorph §3 and the semantic-invariance paper §3 (invariance relations:
    the follow-up must say the same thing): a rewrite that loses a sentiment polarity, a negation
    or an entity, or carries the rewriter's own commentary, is no paraphrase. Hand example: "hung
    up on me" (negative) → "was suspended" (no sentiment word) is SKIPped, not sent.
    """
    assert check_followup(get_relation(relation_id), source, followup) == reason


def test_descriptive_words_of_word_problems_are_no_sentiment():
    """A paraphrase of a word problem may say "quickly" for "fast" or drop "late": only clearly
    evaluative words carry a polarity the gate checks."""
    source = "A fast train leaves late and arrives 3 hours later. What is the problem?"
    followup = "A train that travels quickly departs behind schedule and arrives 3 hours later. "
    followup += "What is being asked?"
    assert check_followup(get_relation("si.paraphrase"), source, followup) is None


def test_clean_rewrite_drops_a_trailing_commentary_paragraph():
    from relations.llm_prompts import clean_rewrite

    response = "Tom buys a pen for 3 dollars.\n\nIn this example, I kept every number."
    assert clean_rewrite(response) == "Tom buys a pen for 3 dollars."
