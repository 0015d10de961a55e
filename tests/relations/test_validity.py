"""The follow-up validity gate: identical, dropped numbers/entities, similarity floor."""

from __future__ import annotations

import dataclasses

import pytest

from app.tasks import BUILTIN_TASKS
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
        check_followup(paraphrase, SOURCE, "In paris, a store sells 42 mugs daily for 3.5 euros.")
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


def test_rule_based_relations_are_not_content_checked():
    # ad.format is RULE-kind: its output is trusted, so no number check and no floor.
    assert check_followup(get_relation("ad.format"), "Tom has 42.", "- Tom has some.") is None


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
    # A name that opens a sentence is not required (capitalised either way).
    assert dropped_content("Tom has 3 cats.", "He has 3 cats.") == []


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
