"""Text pasted into the Probe page → field dicts or samples (one input per line, fields
separated by a tab or `` ||| ``, or JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from app.inputs.cells import is_empty, json_kind, to_text
from app.inputs.characters import check_characters
from app.inputs.column_mapping import suggest_mapping
from app.inputs.errors import InputError, listing
from app.inputs.limits import check_line_lengths, check_row_count
from app.inputs.samples import auto_samples
from app.inputs.strict_json import loads_strictly
from core.types import Sample

PASTE_SEPARATORS = ("\t", " ||| ")


def parse_pasted(text: str, task_fields: Sequence[str]) -> list[dict[str, str]]:
    """Pasted text → one field dict per input.

    Formats: one input per line for a single-field task; JSON lines (the first non-blank line
    starts with ``{``) whose keys name the fields; for a multi-field task, plain lines with the
    fields separated by a tab or `` ||| ``, in the task's field order. Blank lines are ignored.
    """
    return [fields for fields, _ in _parse_pasted_rows(text, task_fields)]


def samples_from_pasted(text: str, task_fields: Sequence[str]) -> list[Sample]:
    """Like ``parse_pasted`` but as samples; JSON lines may also carry a reference and meta keys."""
    rows = _parse_pasted_rows(text, task_fields)
    if rows and rows[0][1] is not None:
        records = [record for _, record in rows]
        return auto_samples(pd.DataFrame(records, dtype=object), task_fields)
    return [Sample(fields=fields) for fields, _ in rows]


def _parse_pasted_rows(
    text: str, task_fields: Sequence[str]
) -> list[tuple[dict[str, str], dict[str, Any] | None]]:
    if not task_fields:
        raise InputError("the task has no input fields")
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise InputError("nothing to run: paste at least one input (one per line)")
    check_characters(text)
    check_line_lengths(line for _, line in numbered)
    check_row_count(len(numbered))
    if numbered[0][1].lstrip().startswith("{"):
        return _parse_json_lines(numbered, task_fields)
    if len(task_fields) == 1:
        return [({task_fields[0]: line.strip()}, None) for _, line in numbered]
    return [(fields, None) for fields in _parse_separated(numbered, task_fields)]


def _multi_field_hint(task_fields: Sequence[str]) -> str:
    example = " ||| ".join(f"<{field}>" for field in task_fields)
    json_example = json.dumps({field: "..." for field in task_fields})
    return (
        f"This task has the fields {', '.join(task_fields)}: put one input per line with the "
        f"fields separated by a tab or ' ||| ' ({example}), or paste JSON lines like "
        f"{json_example}."
    )


def _parse_separated(
    numbered: list[tuple[int, str]], task_fields: Sequence[str]
) -> list[dict[str, str]]:
    rows, problems = [], []
    for number, line in numbered:
        separator = next((sep for sep in PASTE_SEPARATORS if sep in line), None)
        parts = [part.strip() for part in line.split(separator)] if separator else [line.strip()]
        if len(parts) != len(task_fields):
            problems.append(f"line {number} has {len(parts)} part(s)")
        elif any(not part for part in parts):
            empty = [field for field, part in zip(task_fields, parts, strict=True) if not part]
            problems.append(f"line {number} has an empty {'/'.join(empty)}")
        else:
            rows.append(dict(zip(task_fields, parts, strict=True)))
    if problems:
        raise InputError(
            f"expected {len(task_fields)} parts per line, but {listing(problems)}. "
            + _multi_field_hint(task_fields)
        )
    return rows


def _parse_json_lines(
    numbered: list[tuple[int, str]], task_fields: Sequence[str]
) -> list[tuple[dict[str, str], dict[str, Any]]]:
    records = []
    for number, line in numbered:
        try:
            record = loads_strictly(line, f"line {number}")
        except json.JSONDecodeError as exc:
            raise InputError(
                f"line {number} is not valid JSON ({exc.msg} at column {exc.colno}). When the "
                "first line starts with '{', every line must be one JSON object."
            ) from None
        if not isinstance(record, dict):
            raise InputError(f'line {number} is JSON but not an object ({{"field": "value"}})')
        records.append((number, record))
    keys = list(dict.fromkeys(key for _, record in records for key in record))
    mapping = suggest_mapping(keys, task_fields)
    unmapped = [field for field, key in mapping.items() if key is None]
    if unmapped:
        raise InputError(
            f"no JSON key for the field(s) {', '.join(unmapped)}; the lines have the keys "
            f"{', '.join(keys) or '(none)'}. " + _multi_field_hint(task_fields)
        )
    rows, problems = [], []
    structured = [
        f"line {number}: the field {field!r} is {json_kind(value)}"
        for number, record in records
        for field, key in mapping.items()
        if isinstance(value := record.get(key), (dict, list))
    ]
    if structured:
        raise InputError(f"{listing(structured)}, not text. A field takes a string (or a number).")
    for number, record in records:
        empty = [field for field, key in mapping.items() if is_empty(record.get(key))]
        if empty:
            problems.append(f"line {number} ({', '.join(empty)})")
            continue
        rows.append(({field: to_text(record[key]) for field, key in mapping.items()}, record))
    if problems:
        raise InputError(f"missing or empty values: {listing(problems)}")
    return rows
