"""Character-level relations (LLMorph 1–7, 126–128): exact counts, seeds, protection, skips."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations import char
from relations.apply import SkippedFollowUp, generate_followups, transform_text
from relations.base import Expectation, NotApplicable, RelationKind, TransformContext
from relations.catalog import describe_relation
from relations.registry import get_relation

TEXT = "The library opens at nine and closes after sunset."
ALL_LETTERS = sum(ch.isalpha() for ch in TEXT)  # 41
# "The" (capitalised) and "nine" (a number word) are protected: 34 letters may change.
LETTERS = ALL_LETTERS - len("The") - len("nine")
EXPECTED_CHANGES = round(0.1 * LETTERS)  # 3

RULE_IDS = [
    "char.random_replace",
    "char.delete",
    "char.leet",
    "char.insert",
    "char.add_spaces",
    "char.swap_neighbours",
    "char.shuffle_inner",
]
NLPAUG_IDS = ["char.keyboard_typos", "char.ocr_errors", "char.misspell"]
REFS = {
    "char.random_replace": "LLMorph 1",
    "char.delete": "LLMorph 2",
    "char.leet": "LLMorph 3",
    "char.insert": "LLMorph 4",
    "char.add_spaces": "LLMorph 5",
    "char.swap_neighbours": "LLMorph 6",
    "char.shuffle_inner": "LLMorph 7",
    "char.keyboard_typos": "LLMorph 126",
    "char.misspell": "LLMorph 127",
    "char.ocr_errors": "LLMorph 128",
}


def run(relation_id: str, text: str, seed: int = 0, **params: float) -> str:
    """Apply one transformation directly, with optional parameter overrides."""
    relation = get_relation(relation_id)
    ctx = TransformContext(
        rng=random.Random(seed),
        seed=seed,
        task_id="sentiment",
        field="text",
        sample_fields={"text": text},
        params={**relation.params, **params},
    )
    assert relation.transform is not None
    return relation.transform(text, ctx)


def test_catalog_entries_match_llmorph_numbers():
    for relation_id, ref in REFS.items():
        relation = get_relation(relation_id)
        entry = describe_relation(relation)
        assert entry["ref"] == ref
        assert entry["family"] == "char"
        assert entry["category"] == "character"
        assert entry["output_relation"] == "equivalent"
        assert entry["tasks"] == ["*"]
        assert entry["available"] is True
        assert relation.description and relation.preconditions
        expected_kind = RelationKind.LIBRARY if relation_id in NLPAUG_IDS else RelationKind.RULE
        assert relation.kind is expected_kind
        assert relation.expectation is Expectation.EQUIVALENT


@pytest.mark.parametrize("relation_id", RULE_IDS)
def test_each_rule_changes_its_example(relation_id):
    relation = get_relation(relation_id)
    followup = transform_text(relation, relation.example, seed=3, task=BUILTIN_TASKS["qa"])
    assert not isinstance(followup, SkippedFollowUp)
    assert followup.fields["text"] != relation.example


def test_delete_removes_exactly_ten_percent_of_letters():
    for seed in range(5):
        out = run("char.delete", TEXT, seed)
        assert len(TEXT) - len(out) == EXPECTED_CHANGES
        # Only letters went: every non-letter survives, in order.
        assert [c for c in out if not c.isalpha()] == [c for c in TEXT if not c.isalpha()]
        assert sum(c.isalpha() for c in out) == ALL_LETTERS - EXPECTED_CHANGES


def test_delete_at_least_one_letter_in_a_short_text():
    assert run("char.delete", "hi!", 1) in {"i!", "h!"}


def test_random_replace_keeps_length_case_and_changes_exactly_k_letters():
    out = run("char.random_replace", TEXT, 7)
    assert len(out) == len(TEXT)
    changed = [i for i, (a, b) in enumerate(zip(TEXT, out, strict=True)) if a != b]
    assert len(changed) == EXPECTED_CHANGES
    for index in changed:
        assert out[index].isalpha() and out[index].isupper() == TEXT[index].isupper()


def test_leet_uses_our_table():
    # Every word keeps a letter: "to" → "70" would read as a number.
    assert run("char.leet", "ab to zig", rate=1.0) == "4b t0 z19"
    assert run("char.leet", "It is", rate=1.0) == "It i5"  # "It" is capitalised: protected
    out = run("char.leet", TEXT, 2)
    changed = [(a, b) for a, b in zip(TEXT, out, strict=True) if a != b]
    assert len(changed) == EXPECTED_CHANGES
    assert all(char.LEET[a.lower()] == b for a, b in changed)


def test_leet_needs_a_leet_letter():
    with pytest.raises(NotApplicable, match="leet"):
        run("char.leet", "hum, hum")


def test_insert_adds_k_letters_after_existing_letters():
    out = run("char.insert", TEXT, 4)
    assert len(out) == len(TEXT) + EXPECTED_CHANGES
    assert [c for c in out if not c.isalpha()] == [c for c in TEXT if not c.isalpha()]
    # The source is a subsequence of the follow-up.
    remaining = iter(out)
    assert all(ch in remaining for ch in TEXT)


def test_add_spaces_splits_words_only_inside():
    out = run("char.add_spaces", TEXT, 5)
    assert out.replace(" ", "") == TEXT.replace(" ", "")
    assert out.count(" ") == TEXT.count(" ") + EXPECTED_CHANGES
    assert "  " not in out  # never after a word's last letter
    with pytest.raises(NotApplicable):
        run("char.add_spaces", "a I a")


def test_swap_neighbours_makes_k_disjoint_swaps():
    out = run("char.swap_neighbours", TEXT, 6)
    assert Counter(out) == Counter(TEXT)
    changed = [i for i, (a, b) in enumerate(zip(TEXT, out, strict=True)) if a != b]
    assert len(changed) == 2 * EXPECTED_CHANGES
    for index in changed[::2]:
        assert out[index] == TEXT[index + 1] and out[index + 1] == TEXT[index]


def test_shuffle_inner_keeps_ends_letters_and_spacing():
    text = "reading  quickly helps,\teveryone understand simple sentences!"
    out = run("char.shuffle_inner", text, 8, rate=1.0)
    assert [c for c in out if not c.isalpha()] == [c for c in text if not c.isalpha()]
    for before, after in zip(text.split(" "), out.split(" "), strict=True):
        assert sorted(before) == sorted(after)
    words_before = "".join(c if c.isalpha() else " " for c in text).split()
    words_after = "".join(c if c.isalpha() else " " for c in out).split()
    for before, after in zip(words_before, words_after, strict=True):
        assert (before[0], before[-1]) == (after[0], after[-1])
        assert before != after  # rate 1.0: every eligible word changes


def test_shuffle_inner_default_rate_changes_one_word_in_ten():
    text = "Gardens flourish when patient growers water seedlings every morning before work."
    out = run("char.shuffle_inner", text, 9)
    changed = [a for a, b in zip(text.split(), out.split(), strict=True) if a != b]
    assert len(changed) == 1


def test_shuffle_inner_skips_short_or_uniform_words():
    with pytest.raises(NotApplicable, match="four or more"):
        run("char.shuffle_inner", "A cat sat on a mat. Hmm, baaab.")


def test_math_spans_and_latex_commands_are_never_touched():
    text = r"Let $x + y$ equal \frac{ab}{cd} and \(z\) too."
    out = run("char.delete", text, 0, rate=1.0)
    assert out == r"Let $x + y$  \frac{ab}{cd}  \(z\) ."


@pytest.mark.parametrize("relation_id", RULE_IDS)
def test_no_letters_is_not_applicable(relation_id):
    followup = transform_text(
        get_relation(relation_id), "12 + 30 = 42?", seed=0, task=BUILTIN_TASKS["qa"]
    )
    assert isinstance(followup, SkippedFollowUp)
    assert followup.reason


@pytest.mark.parametrize("relation_id", RULE_IDS)
def test_same_seed_same_output_different_seeds_differ(relation_id):
    first = [run(relation_id, TEXT, seed) for seed in range(6)]
    again = [run(relation_id, TEXT, seed) for seed in range(6)]
    assert first == again
    assert len(set(first)) > 1


def test_multi_field_tasks_get_one_followup_per_field_and_one_for_both():
    sample = Sample(fields={"context": "A dog runs outside.", "question": "What runs?"})
    followups = generate_followups(
        get_relation("char.delete"),
        sample,
        BUILTIN_TASKS["qa"],
        ["context", "question"],
        run_seed=1,
    )
    assert [f.target for f in followups] == ["context", "question", "context+question"]
    assert followups[0].fields["question"] == sample.fields["question"]
    assert followups[1].fields["context"] == sample.fields["context"]


def test_seeded_global_call_restores_global_generators():
    import numpy as np

    random.seed(123)
    np.random.seed(123)
    expected = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    inside = char.seeded_global_call(5, lambda: (random.random(), np.random.random()))
    assert (random.random(), np.random.random()) == expected
    assert inside == char.seeded_global_call(5, lambda: (random.random(), np.random.random()))


# ---------------------------------------------------------------- nlpaug (imports torch: seconds)


@pytest.mark.slow
def test_keyboard_typos_change_letters_only_and_repeat_with_the_seed():
    text = "Students borrowed twelve novels from the library yesterday."
    out = run("char.keyboard_typos", text, 11)
    assert out != text
    assert len(out) == len(text)
    assert [c for c in out if not c.isalpha()] == [c for c in text if not c.isalpha()]
    assert out == run("char.keyboard_typos", text, 11)
    assert len({run("char.keyboard_typos", text, seed) for seed in range(6)}) > 1


@pytest.mark.slow
def test_keyboard_typos_leave_numbers_math_and_whitespace_alone():
    text = "Compute   $\\frac{seven}{eleven}$ for\n 12345 marbles quickly."
    out = run("char.keyboard_typos", text, 0)
    assert out != text
    assert [c for c in out if not c.isalpha()] == [c for c in text if not c.isalpha()]
    assert "$\\frac{seven}{eleven}$" in out
    with pytest.raises(NotApplicable):
        run("char.keyboard_typos", "It is 42.")  # no word of four letters


@pytest.mark.slow
def test_ocr_errors_use_look_alike_characters():
    text = "Global school budgets look solid."
    out = run("char.ocr_errors", text, 3)
    assert out != text and len(out) == len(text)
    assert out == run("char.ocr_errors", text, 3)


@pytest.mark.slow
def test_misspell_uses_real_misspellings_from_nlpaugs_dictionary():
    text = "Their government received the necessary equipment."
    dictionary = char.spelling_dictionary()
    assert "beleive" in dictionary["believe"]
    for seed in range(4):
        out = run("char.misspell", text, seed)
        changed = [(a, b) for a, b in zip(text.split(), out.split(), strict=True) if a != b]
        assert len(changed) == 1
        before, after = (w.strip(".") for w in changed[0])
        assert after in char._misspellings(before, dictionary)
        assert after[0].lower() == before[0].lower()
        assert out == run("char.misspell", text, seed)
    with pytest.raises(NotApplicable):
        run("char.misspell", "Zqx vbn.")


@pytest.mark.slow
@pytest.mark.parametrize("relation_id", NLPAUG_IDS)
def test_nlpaug_examples_change(relation_id):
    relation = get_relation(relation_id)
    followup = transform_text(relation, relation.example, seed=2, task=BUILTIN_TASKS["qa"])
    assert not isinstance(followup, SkippedFollowUp), followup
    assert followup.fields["text"] != relation.example


@pytest.mark.parametrize("relation_id", [*RULE_IDS, "char.keyboard_typos", "char.ocr_errors"])
def test_numbers_units_negations_and_names_are_never_touched(relation_id):
    """LLMorph §3 (character relations are invariance relations): a typo must not change what is
    asked. Hand example: in "Maria did not walk 15 km in two hours" only the letters of "did",
    "walk" and "in" may change; "Maria", "not", "15 km", "two" and "hours" stay as written.
    """
    text = "Maria did not walk 15 km in two hours"
    for seed in range(8):
        out = run(relation_id, text, seed, rate=1.0)
        for kept in ("Maria", " not ", "15 km", " two ", "hours"):
            assert kept in out, (seed, out)
