"""A case's input fields as text: each field's value as a string, and the fields a follow-up
changed (what the severity proxies compare)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def field_texts(fields: Mapping[str, Any]) -> dict[str, str]:
    """A case's decoded input column (the JSON object of its fields) with every value as a
    string; a missing value (None) is the empty string."""
    return {str(name): "" if value is None else str(value) for name, value in fields.items()}


def input_texts(
    source_input: Mapping[str, Any], followup_input: Mapping[str, Any] | None
) -> tuple[str, str]:
    """(source, follow-up) text of the fields the follow-up changed (all fields if none did).

    Fields are joined with a newline in name order; comparing only the changed fields keeps an
    untouched long context from diluting the normalised distances. A case without a follow-up
    input compares the source with nothing.
    """
    source = field_texts(source_input)
    followup = field_texts(followup_input) if followup_input is not None else {}
    names = sorted(set(source) | set(followup))
    changed = [name for name in names if source.get(name, "") != followup.get(name, "")]
    chosen = changed or names
    return (
        "\n".join(source.get(name, "") for name in chosen),
        "\n".join(followup.get(name, "") for name in chosen),
    )
