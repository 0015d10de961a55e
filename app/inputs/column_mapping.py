"""Which column of a read file feeds each field of a task, guessed from the column names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_FIELD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "text": ("sentence", "review", "input", "content", "body", "utterance", "document"),
    "question": ("query", "q", "prompt"),
    "context": ("passage", "paragraph", "document", "ctx", "background"),
    "problem": ("question", "prompt", "task", "input", "exercise"),
    "premise": ("sentence1", "sentence_1", "text_a", "sent1", "context"),
    "hypothesis": ("sentence2", "sentence_2", "text_b", "sent2", "claim"),
    "head": ("subject", "head_entity", "entity1", "entity_1", "e1", "source_entity"),
    "tail": ("object", "tail_entity", "entity2", "entity_2", "e2", "target_entity"),
}
REFERENCE_NAMES = (
    "reference",
    "answer",
    "solution",
    "gold",
    "gold_answer",
    "expected",
    "target",
    "label",
    "relation",
    "score",
)
STEPS_NAMES = ("reference_steps", "steps", "solution_steps", "gold_steps")


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def suggest_mapping(columns: Sequence[str], task_fields: Sequence[str]) -> dict[str, str | None]:
    """Best guess of the column for each task field (None where nothing fits).

    Exact names win, then case/spacing-insensitive names, then common synonyms (``review`` for
    ``text``, ``passage`` for ``context`` …). A column is used for at most one field. A
    single-field task with a single column gets that column.
    """
    columns = [str(column) for column in columns]
    mapping: dict[str, str | None] = {field: None for field in task_fields}
    used: set[str] = set()

    def assign(field: str, column: str) -> None:
        mapping[field] = column
        used.add(column)

    for field in task_fields:
        if field in columns and field not in used:
            assign(field, field)
    normalised = {}
    for column in columns:
        normalised.setdefault(_norm(column), column)
    for field in task_fields:
        column = normalised.get(_norm(field))
        if mapping[field] is None and column is not None and column not in used:
            assign(field, column)
    for field in task_fields:
        if mapping[field] is not None:
            continue
        for synonym in _FIELD_SYNONYMS.get(_norm(field), ()):
            column = normalised.get(synonym)
            if column is not None and column not in used:
                assign(field, column)
                break
    if len(task_fields) == 1 and len(columns) == 1 and mapping[task_fields[0]] is None:
        assign(task_fields[0], columns[0])
    return mapping


def _suggest_named(columns: Sequence[str], names: Sequence[str], taken: set[str]) -> str | None:
    normalised = {}
    for column in columns:
        normalised.setdefault(_norm(column), str(column))
    for name in names:
        column = normalised.get(name)
        if column is not None and column not in taken:
            return column
    return None


def suggest_reference_column(
    columns: Sequence[str], exclude: Iterable[str] = (), prefer: Sequence[str] = ()
) -> str | None:
    """The column that most likely holds the reference answer (``prefer`` names are tried first)."""
    names = [_norm(name) for name in prefer] + list(REFERENCE_NAMES)
    return _suggest_named(columns, names, set(exclude))


def suggest_steps_column(columns: Sequence[str], exclude: Iterable[str] = ()) -> str | None:
    """The column that most likely holds reference steps (a list, or one step per line)."""
    return _suggest_named(columns, STEPS_NAMES, set(exclude))
