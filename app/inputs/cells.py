"""One cell of a read file (a CSV string, a JSON value) as a field's text or a meta value."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd


def is_empty(value: Any) -> bool:
    """A missing cell: None, NA, NaN, or a string of only whitespace."""
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def to_text(value: Any) -> str:
    """A cell as prompt text: strings unchanged, numbers as written, lists/objects as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "item") and not isinstance(value, (list, dict)):
        value = value.item()  # numpy scalar → Python scalar
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def to_meta(value: Any) -> Any:
    """A cell as a JSON-serialisable meta value (NaN → None, numpy scalars → Python)."""
    if is_empty(value) and not isinstance(value, str):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return value.item()
    return value


def json_kind(value: Any) -> str:
    """What a structured value is, for a message that refuses it as a field's text (a task field
    takes a string, or a number read as written; turning an object into its JSON would silently
    make up a text nobody wrote)."""
    return "a JSON object" if isinstance(value, dict) else "a JSON array"
