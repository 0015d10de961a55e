"""Rows of a read file → ``Sample`` objects, through a mapping of task fields to columns."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from app.inputs.cells import is_empty, json_kind, to_meta, to_text
from app.inputs.column_mapping import (
    suggest_mapping,
    suggest_reference_column,
    suggest_steps_column,
)
from app.inputs.errors import InputError, listing
from app.inputs.limits import MAX_ROWS, check_row_count
from core.types import Sample


def _steps(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) and is_empty(value):
        return ()
    if isinstance(value, str) and value.lstrip().startswith("["):
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(value)
    if isinstance(value, (list, tuple)):
        return tuple(to_text(step).strip() for step in value if not is_empty(step))
    return tuple(line.strip() for line in to_text(value).splitlines() if line.strip())


def samples_from_frame(
    df: pd.DataFrame,
    mapping: Mapping[str, str | None],
    reference_column: str | None = None,
    steps_column: str | None = None,
    meta_columns: Iterable[str] = (),
    *,
    max_rows: int = MAX_ROWS,
) -> list[Sample]:
    """Rows → samples. ``mapping`` maps every task field to a column of ``df``.

    Field values become strings; an empty reference becomes None; steps may be a list or one step
    per line; meta columns are copied as JSON values. Rows are numbered from 1 in error messages
    (the first data row is row 1).
    """
    columns = [str(column) for column in df.columns]
    unmapped = [field for field, column in mapping.items() if not column]
    if unmapped:
        raise InputError(
            f"choose a column for the task field(s) {', '.join(unmapped)} "
            f"(the file has the columns {', '.join(columns) or '(none)'})"
        )
    meta_columns = list(meta_columns)
    wanted = {f"field {field!r}": column for field, column in mapping.items()}
    wanted.update({"the reference": reference_column, "the steps": steps_column})
    wanted.update({f"meta column {column!r}": column for column in meta_columns})
    missing = [
        f"{column!r} (for {role})"
        for role, column in wanted.items()
        if column and column not in columns
    ]
    if missing:
        raise InputError(
            f"column(s) not in the file: {', '.join(missing)}; the file has the columns "
            f"{', '.join(columns) or '(none)'}"
        )
    if len(df) == 0:
        raise InputError("the input has no rows")
    check_row_count(len(df), max_rows)
    positions = {column: columns.index(column) for column in columns}
    line_numbers = df.attrs.get("line_numbers")
    if line_numbers is None or len(line_numbers) != len(df):
        line_numbers = None
    rows = df.itertuples(index=False, name=None)
    samples, problems, structured = [], [], []
    for number, row in enumerate(rows, 1):
        place = f"line {line_numbers[number - 1]}" if line_numbers else f"row {number}"
        values = {field: row[positions[column]] for field, column in mapping.items()}
        for field, value in values.items():
            if isinstance(value, (dict, list, tuple)):
                column = mapping[field]
                named = repr(field) if column == field else f"{field!r} (column {column!r})"
                structured.append(f"{place}: the field {named} is {json_kind(value)}")
        empty = [field for field, value in values.items() if is_empty(value)]
        if empty:
            problems.append(f"{place} ({', '.join(empty)})")
            continue
        reference = row[positions[reference_column]] if reference_column else None
        samples.append(
            Sample(
                fields={field: to_text(value) for field, value in values.items()},
                reference=None if is_empty(reference) else to_text(reference),
                reference_steps=_steps(row[positions[steps_column]]) if steps_column else (),
                meta={column: to_meta(row[positions[column]]) for column in meta_columns},
            )
        )
    if structured:
        raise InputError(
            f"{listing(structured)}, not text. A task field takes a string (or a number); "
            "put the text itself there, or map the field to another column."
        )
    if problems:
        raise InputError(
            f"{len(problems)} row(s) have an empty value in a mapped field: {listing(problems)}. "
            "Fill them in or remove those rows."
        )
    return samples


def auto_samples(
    df: pd.DataFrame,
    task_fields: Sequence[str],
    prefer_reference: Sequence[str] = (),
    *,
    max_rows: int = MAX_ROWS,
) -> list[Sample]:
    """Samples with the suggested mapping; reference and steps columns are picked by name and every
    other column goes into meta."""
    columns = [str(column) for column in df.columns]
    mapping = suggest_mapping(columns, task_fields)
    used = {column for column in mapping.values() if column}
    reference = suggest_reference_column(columns, exclude=used, prefer=prefer_reference)
    used |= {reference} if reference else set()
    steps = suggest_steps_column(columns, exclude=used)
    used |= {steps} if steps else set()
    meta = [column for column in columns if column not in used]
    return samples_from_frame(df, mapping, reference, steps, meta, max_rows=max_rows)
