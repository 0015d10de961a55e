"""The built-in demo datasets: counts, coverage and consistency of every row."""

import itertools
import json
import re

import pytest

from app.inputs.datasets import DATASETS, datasets_for_task, load_dataset, read_rows
from core.tasks import BUILTIN_TASKS

CATEGORIES = (
    "Physics",
    "Mathematics",
    "Chemistry",
    "Economics",
    "Statistics",
    "Biology",
    "Calculus",
    "Optimization",
)
DIFFICULTIES = ("Easy", "Medium", "Hard")


def test_every_dataset_feeds_a_builtin_task_and_its_file_exists():
    for dataset_id, info in DATASETS.items():
        assert info.task_id in BUILTIN_TASKS, dataset_id
        assert info.path.is_file(), info.path
        assert info.title and info.description


@pytest.mark.parametrize(
    ("dataset_id", "minimum"),
    [
        ("reasoning", 24),
        ("qa", 20),
        ("sentiment", 30),
        ("sentiment_score", 30),
        ("nli", 12),
        ("relation_extraction", 10),
        ("math", 12),
    ],
)
def test_samples_carry_exactly_the_task_fields(dataset_id, minimum):
    samples = load_dataset(dataset_id)
    task = BUILTIN_TASKS[DATASETS[dataset_id].task_id]
    assert len(samples) >= minimum
    for sample in samples:
        assert tuple(sample.fields) == task.fields
        assert all(isinstance(v, str) and v.strip() for v in sample.fields.values())
        assert sample.reference and sample.reference.strip()
        task.render(sample.fields)  # every sample renders into its task's prompt
    assert len({sample.id for sample in samples}) == len(samples), "duplicate samples"


def test_reasoning_covers_every_category_and_difficulty_once():
    samples = load_dataset("reasoning")
    cells = [(s.meta["category"], s.meta["difficulty"]) for s in samples]
    assert sorted(cells) == sorted(itertools.product(CATEGORIES, DIFFICULTIES))


def test_reasoning_references_have_steps_and_end_in_the_answer():
    for sample in load_dataset("reasoning"):
        answer = sample.meta["answer"]
        assert sample.reference_steps, sample.fields
        assert answer in sample.reference
        final_line = sample.reference.splitlines()[-1]
        assert final_line.startswith("Final answer: ") and answer in final_line
        for step in sample.reference_steps:
            assert step in sample.reference
        # facts in separate sentences, the question last
        problem = sample.fields["problem"]
        assert problem.endswith("?") and problem.count(". ") >= 1


def test_reasoning_reference_parses_to_its_answer():
    task = BUILTIN_TASKS["reasoning"]
    first = load_dataset("reasoning")[0]
    parsed = task.parse(first.reference)
    assert parsed.answer == "5.4 km"
    assert parsed.trace[0].startswith("Step 1: Convert the riding time")


def test_reasoning_numbers_spot_check():
    by_cell = {(s.meta["category"], s.meta["difficulty"]): s for s in load_dataset("reasoning")}
    assert by_cell[("Physics", "Medium")].meta["answer"] == "110"
    assert by_cell[("Economics", "Hard")].meta["answer"] == "270"
    assert by_cell[("Statistics", "Medium")].meta["answer"] == "5/14"
    assert by_cell[("Optimization", "Hard")].meta["answer"] == "1300"


def test_qa_has_three_unanswerable_questions():
    samples = load_dataset("qa")
    unknown = [s for s in samples if s.reference == "unknown"]
    assert len(unknown) == 3
    for sample in samples:
        sentences = re.split(r"(?<=[.!?])\s+", sample.fields["context"])
        assert 2 <= len(sentences) <= 4
        if sample.reference != "unknown":
            # the answer's key word is in the passage (case-insensitive, digits or words)
            key = sample.reference.removeprefix("the ").split()[-1].lower()
            assert key in sample.fields["context"].lower() or sample.reference == "3"


def test_sentiment_labels_scores_and_mix():
    samples = load_dataset("sentiment")
    labels = [s.reference for s in samples]
    assert {label: labels.count(label) >= 8 for label in ("positive", "negative", "neutral")} == {
        "positive": True,
        "negative": True,
        "neutral": True,
    }
    for sample in samples:
        score = sample.meta["score"]
        assert 0 <= score <= 1
        if sample.reference == "positive":
            assert score > 0.55
        elif sample.reference == "negative":
            assert score < 0.45
    assert sum(s.fields["text"].endswith(".") for s in samples) >= 25
    mild = [s for s in samples if 0.25 <= s.meta["score"] <= 0.4 or 0.6 <= s.meta["score"] <= 0.75]
    assert len(mild) >= 6


def test_sentiment_score_dataset_uses_the_score_as_reference():
    first = load_dataset("sentiment_score")[0]
    assert first.reference == "0.95"
    assert first.meta == {"label": "positive"}


def test_nli_chains_are_consecutive_entailments():
    samples = load_dataset("nli")
    chain_rows = [i for i, s in enumerate(samples) if "chain" in s.meta]
    assert len(chain_rows) >= 6
    for i in chain_rows:
        if samples[i].meta["chain_step"] == 1:
            first, second = samples[i], samples[i + 1]
            assert first.meta["chain"] == second.meta["chain"]
            assert first.reference == second.reference == "entailment"
            assert first.fields["hypothesis"] == second.fields["premise"]
    assert {s.reference for s in samples} == {"entailment", "neutral", "contradiction"}


def test_relation_extraction_has_symmetric_and_asymmetric_rows():
    samples = load_dataset("relation_extraction")
    symmetric = {s.reference for s in samples if s.meta["symmetric"]}
    asymmetric = {s.reference for s in samples if not s.meta["symmetric"]}
    assert {"married to", "sibling of"} <= symmetric
    assert {"founded", "parent of"} <= asymmetric
    for sample in samples:
        assert sample.fields["head"] in sample.fields["text"]
        assert sample.fields["tail"] in sample.fields["text"]


def test_math_gold_answers_verify_against_themselves():
    from math_verify import parse, verify

    for sample in load_dataset("math"):
        gold = parse(f"${sample.reference}$")
        assert gold, sample.reference
        assert verify(gold, parse(f"\\boxed{{{sample.reference}}}"))


def test_files_are_valid_jsonl_with_no_extra_blank_lines():
    for info in DATASETS.values():
        text = info.path.read_text(encoding="utf-8")
        assert text.endswith("\n") and "\n\n" not in text
        assert len(read_rows(info.path)) == len(text.splitlines())
        json.loads(text.splitlines()[0])


def test_datasets_for_task_and_unknown_id():
    assert datasets_for_task("qa") == ["qa"]
    assert datasets_for_task("sentiment_score") == ["sentiment_score"]
    assert datasets_for_task("my_custom_task") == []
    with pytest.raises(KeyError, match="unknown dataset 'nope'"):
        load_dataset("nope")
