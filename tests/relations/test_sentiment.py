"""Sentiment relations (LLMorph 150/151/154): rule-based intensifiers."""

from __future__ import annotations

import random

import pytest

from core.tasks import BUILTIN_TASKS
from relations.apply import transform_text
from relations.base import FollowUp, NotApplicable, TransformContext
from relations.registry import get_relation
from relations.sentiment import capitalise_keywords, emphasis, exclamation


def ctx(seed: int = 0) -> TransformContext:
    return TransformContext(
        rng=random.Random(seed), seed=seed, task_id="sentiment", field="text", sample_fields={}
    )


def test_exclamation_replaces_sentence_periods_only():
    text = "Tickets cost 3.5 euros. Dr. Lee agreed, e.g. on price... It was great. J. Doe left."
    assert exclamation(text, ctx()) == (
        "Tickets cost 3.5 euros! Dr. Lee agreed, e.g. on price... It was great! J. Doe left!"
    )
    assert exclamation('He said "fine."', ctx()) == 'He said "fine!"'


def test_exclamation_appends_to_text_without_a_period():
    """LLMorph 150 (issue 23, item 6): a text with no '.' to replace gets '!' appended; it
    SKIPped before."""
    assert exclamation("What a film! Loved it", ctx()) == "What a film! Loved it!"
    assert exclamation("Loved every minute  \n", ctx()) == "Loved every minute!"
    assert exclamation("Costs 3.5 euros", ctx()) == "Costs 3.5 euros!"  # a decimal is no end
    with pytest.raises(NotApplicable, match="empty text"):
        exclamation("   ", ctx())


def test_exclamation_through_transform_text():
    result = transform_text(
        get_relation("sentiment.exclamation"),
        "Good food. Slow service.",
        task=BUILTIN_TASKS["sentiment"],
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
    from relations.sentiment import GRADABLE_EMPHASIS

    return GRADABLE_EMPHASIS[random.Random(seed).randrange(len(GRADABLE_EMPHASIS))]


def test_capitalise_keywords():
    assert capitalise_keywords(
        "I loved the first half, but the ending was a boring mess.", ctx()
    ) == ("I LOVED the first half, but the ending was a BORING MESS.")
    with pytest.raises(NotApplicable):
        capitalise_keywords("The train left at noon.", ctx())
    with pytest.raises(NotApplicable):
        capitalise_keywords("It was GREAT.", ctx())
