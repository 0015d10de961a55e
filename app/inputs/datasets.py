"""Built-in demo datasets (our own writing, in ``datasets/*.jsonl``) loaded as ``Sample`` lists.

Each dataset belongs to one built-in task. A row's task input fields become ``Sample.fields``, the
gold column becomes ``Sample.reference`` and every other column goes into ``Sample.meta``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from core.types import Sample

DATASET_DIR = Path(__file__).resolve().parents[2] / "datasets"


class DatasetInfo(NamedTuple):
    """One registry entry: what the dataset is called, which task it feeds and where it lives."""

    title: str
    task_id: str
    path: Path
    description: str


DATASETS: dict[str, DatasetInfo] = {
    "reasoning": DatasetInfo(
        "Multi-step reasoning (24 problems)",
        "reasoning",
        DATASET_DIR / "reasoning.jsonl",
        "Physics, mathematics, chemistry, economics, statistics, biology, calculus and "
        "optimization; one easy, medium and hard problem each, with worked reference solutions.",
    ),
    "math": DatasetInfo(
        "Short math problems",
        "math",
        DATASET_DIR / "math.jsonl",
        "Arithmetic, algebra, geometry and counting problems with gold answers for \\boxed{}.",
    ),
    "qa": DatasetInfo(
        "Short-context questions",
        "qa",
        DATASET_DIR / "qa.jsonl",
        "Two- to three-sentence passages with a question; three answers are not in the passage "
        "(gold answer 'unknown').",
    ),
    "nli": DatasetInfo(
        "Premise / hypothesis pairs",
        "nli",
        DATASET_DIR / "nli.jsonl",
        "Entailment, neutral and contradiction pairs; the first rows form entailment chains "
        "a→b, b→c on consecutive rows (for the transitivity relation).",
    ),
    "sentiment": DatasetInfo(
        "Sentences for sentiment labels",
        "sentiment",
        DATASET_DIR / "sentiment.jsonl",
        "Clearly positive or negative, mildly positive or negative, and neutral sentences.",
    ),
    "sentiment_score": DatasetInfo(
        "Sentences for sentiment scores",
        "sentiment_score",
        DATASET_DIR / "sentiment.jsonl",
        "The sentiment sentences, with a gold score between 0 (very negative) and 1.",
    ),
    "relation_extraction": DatasetInfo(
        "Entity relations",
        "relation_extraction",
        DATASET_DIR / "relation_extraction.jsonl",
        "Sentences stating a relation between two entities; symmetric ones (married to, sibling "
        "of, …) and asymmetric ones (founded, parent of, …), flagged in meta['symmetric'].",
    ),
}

# Which columns are a task's input fields and which column is the reference.
_TASK_COLUMNS: dict[str, tuple[tuple[str, ...], str]] = {
    "reasoning": (("problem",), "reference"),
    "math": (("problem",), "answer"),
    "qa": (("context", "question"), "answer"),
    "nli": (("premise", "hypothesis"), "label"),
    "sentiment": (("text",), "label"),
    "sentiment_score": (("text",), "score"),
    "relation_extraction": (("text", "head", "tail"), "relation"),
}


def datasets_for_task(task_id: str) -> list[str]:
    """Ids of the built-in datasets that feed ``task_id`` (empty for custom tasks)."""
    return [dataset_id for dataset_id, info in DATASETS.items() if info.task_id == task_id]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one per non-blank line."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError(f"{path.name} line {line_number}: expected a JSON object")
            rows.append(row)
    return rows


def load_dataset(dataset_id: str) -> list[Sample]:
    """The samples of a built-in dataset, in file order.

    For ``reasoning`` the reference is the worked solution, ``reference_steps`` its steps and
    ``meta["answer"]`` the short final answer.
    """
    try:
        info = DATASETS[dataset_id]
    except KeyError:
        known = ", ".join(sorted(DATASETS))
        raise KeyError(f"unknown dataset {dataset_id!r}; built-in datasets: {known}") from None
    field_names, reference_column = _TASK_COLUMNS[info.task_id]
    samples = []
    for row in read_rows(info.path):
        fields = {name: str(row[name]) for name in field_names}
        reference = row.get(reference_column)
        steps = tuple(str(step) for step in row.get("reference_steps", ()))
        used = {*field_names, reference_column, "reference_steps"}
        meta = {key: value for key, value in row.items() if key not in used}
        samples.append(
            Sample(
                fields=fields,
                reference=None if reference is None else str(reference),
                reference_steps=steps,
                meta=meta,
            )
        )
    return samples
