"""Edits as data (issue 26 §1): a follow-up is a list of edits against its source, any subset of
which can be applied, and all of which give the follow-up back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations.apply import generate_followups
from relations.base import RelationKind
from relations.edits import Edit, apply_edits, diff_edits, edits_text, indivisible_reason
from relations.registry import get_relation, list_relations

TEXTS = json.loads(
    (Path(__file__).resolve().parents[2] / "bench/data/rule_validity_texts.json").read_text()
)["texts"]


def _task_for(relation):
    for task_id in ("sentiment", "reasoning", "nli", "qa", "relation_extraction"):
        if relation.applies_to(BUILTIN_TASKS[task_id]):
            return BUILTIN_TASKS[task_id]
    return None


def _sample(task, index: int, text: str) -> Sample:
    # Four sentences, so sentence-level relations (shuffle, reorder) have something to move.
    other = TEXTS[(index + 1) % len(TEXTS)]
    text = " ".join([text, other, TEXTS[(index + 2) % len(TEXTS)], TEXTS[(index + 3) % len(TEXTS)]])
    fields = {name: (text if n == 0 else other) for n, name in enumerate(task.fields)}
    return Sample(fields=fields)


RULE_RELATIONS = [r.id for r in list_relations() if r.kind is RelationKind.RULE]


@pytest.mark.parametrize("relation_id", RULE_RELATIONS)
def test_all_edits_give_the_followup_back_for_20_texts(relation_id: str) -> None:
    relation = get_relation(relation_id)
    task = _task_for(relation)
    if task is None:
        pytest.skip(f"{relation_id} applies to none of the tasks tried")
    samples = [_sample(task, i, text) for i, text in enumerate(TEXTS)]
    assert len(samples) == 20
    # Relations with narrow preconditions (a passive-able clause, movable sentences) SKIP every
    # corpus text: their own worked example is one they apply to.
    samples.append(Sample(fields={name: relation.example for name in task.fields}))
    checked = 0
    for index, sample in enumerate(samples):
        partners = samples[index + 1 :] + samples[:index]
        for made in generate_followups(relation, sample, task, task.fields, partners=partners):
            fields = getattr(made, "fields", None)
            if fields is None:
                continue
            source = made.source_fields or sample.fields
            assert apply_edits(source, diff_edits(source, fields)) == fields
            checked += 1
    # A relation that SKIPs every text would make this test vacuous for it.
    if relation.family not in ("multi", "re"):  # they need entity fields / companion inputs
        assert checked > 0


def test_hunks_are_words_and_any_subset_applies() -> None:
    # 'I like every film' → 'I l1ke 3v3ry film!' : three hunks at char offsets
    # 'like' [2,6), 'every' [7,12), 'film' [13,17).
    edits = diff_edits({"text": "I like every film"}, {"text": "I l1ke 3v3ry film!"})
    assert edits == [
        Edit("text", 2, 6, "like", "l1ke"),
        Edit("text", 7, 12, "every", "3v3ry"),
        Edit("text", 13, 17, "film", "film!"),
    ]
    assert apply_edits({"text": "I like every film"}, [edits[1]]) == {"text": "I like 3v3ry film"}
    assert apply_edits({"text": "I like every film"}, [edits[2], edits[0]]) == {
        "text": "I l1ke every film!"
    }
    assert apply_edits({"text": "I like every film"}, []) == {"text": "I like every film"}


def test_insertions_and_deletions_are_hunks_too() -> None:
    source = {"text": "It is not good at all"}
    follow = {"text": "It is really good"}
    edits = diff_edits(source, follow)
    assert apply_edits(source, edits) == follow
    assert "".join(e.old for e in edits).count("not") == 1
    assert edits_text(edits[:1], len(edits)).startswith(f"1 of {len(edits)} edits is enough")


def test_a_field_only_the_followup_has_is_one_insertion() -> None:
    edits = diff_edits({"text": "a"}, {"text": "a", "note": "x y"})
    assert edits == [Edit("note", 0, 0, "", "x y")]


def test_whole_text_transformations_are_indivisible() -> None:
    for relation_id in ("rrb.rail_fence", "rrb.word_reversal", "sentence.shuffle", "word.voice"):
        reason = indivisible_reason(get_relation(relation_id))
        assert reason == "not shrinkable: the transformation is one edit"
    assert indivisible_reason(get_relation("char.leet")) is None
    assert indivisible_reason(get_relation("word.synonym")) is None


def test_edit_round_trips_through_a_dict() -> None:
    edit = Edit("text", 3, 5, "ab", "cd")
    assert Edit.from_dict(edit.to_dict()) == edit


def test_applied_spans_point_at_the_new_text() -> None:
    from relations.edits import applied_spans

    source = {"text": "I like every film"}
    edits = diff_edits(source, {"text": "I really like 3v3ry film"})
    made = apply_edits(source, edits)["text"]
    spans = applied_spans(edits)["text"]
    # ' really' is inserted after 'I' (at 1, 7 chars), so 'every' (7..12) moves to 14..19.
    assert [made[a:b] for a, b in spans] == [" really", "3v3ry"]
    assert spans[1] == (14, 19)


def test_multi_input_and_preamble_relations_are_indivisible() -> None:
    from dataclasses import replace

    assert indivisible_reason(get_relation("multi.pairwise_order")) is not None
    with_preamble = replace(get_relation("char.leet"), params={"preamble": "Decode first."})
    assert "preamble" in indivisible_reason(with_preamble)
