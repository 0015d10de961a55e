"""JSON lines, a JSON array or one JSON object → a DataFrame keeping the JSON value types."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from app.inputs.characters import check_json_strings
from app.inputs.errors import InputError, listing
from app.inputs.limits import MAX_LINE_CHARS, check_line_lengths
from app.inputs.strict_json import loads_strictly


def read_json(text: str) -> pd.DataFrame:
    """JSON text (lines, an array, or one object) → DataFrame, one row per JSON object."""
    stripped = text.strip()
    numbers: list[int] | None = None
    if stripped.startswith("["):
        records = _load_json_document(stripped)
        if not isinstance(records, list):
            raise InputError("expected a JSON array of objects")
        label = "item"
    elif stripped.startswith("{"):
        records, numbers = _load_json_lines(text)
        label = "line" if numbers is not None else "item"
    else:
        raise InputError(
            "expected JSON lines (one object per line) or a JSON array of objects; the file "
            f"starts with {stripped[:20]!r}"
        )
    places = numbers or range(1, len(records) + 1)
    bad = [
        f"{label} {n}"
        for n, record in zip(places, records, strict=True)
        if not isinstance(record, dict)
    ]
    if bad:
        raise InputError(f"every row must be a JSON object; not an object: {listing(bad)}")
    if not records:
        raise InputError("the JSON holds no rows")
    for number, record in zip(places, records, strict=True):
        if numbers is None and "\\u" in text:  # lines were checked as they were read
            check_json_strings(record, f"{label} {number}")
        for key, value in record.items():
            if isinstance(value, str) and len(value) > MAX_LINE_CHARS:
                raise InputError(
                    f"{label} {number}: the value of {key!r} is {len(value):,} characters long; "
                    f"the limit is {MAX_LINE_CHARS:,}"
                )
    frame = pd.DataFrame(records, dtype=object)
    if numbers is not None:
        frame.attrs["line_numbers"] = tuple(numbers)
    return frame


def _load_json_document(text: str) -> Any:
    try:
        return loads_strictly(text, "the JSON", check_strings=False)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the JSON is not valid: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def _load_json_lines(text: str) -> tuple[list[Any], list[int] | None]:
    """JSON lines → (records, their line numbers); a whole document (a pretty-printed object)
    gives its records and None."""
    lines = text.splitlines()
    check_line_lengths(lines)
    records, numbers = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(loads_strictly(line, f"line {number}"))
            numbers.append(number)
        except json.JSONDecodeError as exc:
            document = _try_whole_object(text)
            if document is not None:
                return document, None
            raise InputError(
                f"line {number} is not valid JSON ({exc.msg} at column {exc.colno}); a .jsonl file "
                "needs one complete JSON object per line"
            ) from None
    return records, numbers


def _try_whole_object(text: str) -> list[Any] | None:
    """A pretty-printed single object, or ``{"rows": [...]}``, read as a whole document."""
    try:
        document = loads_strictly(text, "the JSON", check_strings=False)
    except InputError:
        raise  # a key given twice
    except (ValueError, RecursionError):  # ValueError covers JSONDecodeError and huge integers
        return None
    if not isinstance(document, dict):
        return None
    lists = [value for value in document.values() if isinstance(value, list)]
    if len(document) == 1 and len(lists) == 1:
        return lists[0]
    return [document]
