"""JSON text that people supply (uploads, pasted lines, relation files), read with a clear error.

``json.loads`` fails in three ways. A syntax error stays a ``json.JSONDecodeError``: each caller
knows what a valid text of its kind looks like and says so. Text that is valid JSON yet cannot
become Python values, nested deeper than the parser recurses or an integer with more digits than
Python converts, raises ``UnreadableJsonError`` with a message for the person who wrote it.
"""

from __future__ import annotations

import json
from typing import Any


class UnreadableJsonError(ValueError):
    """Valid JSON syntax that still cannot be read; the message is written for its author."""


def load_json(text: str, **options: Any) -> Any:
    """``json.loads(text, **options)``; see the module docstring for the errors it raises.

    An exception raised by a hook in ``options`` passes through unchanged unless it is a
    ``ValueError``, so a hook that refuses something should raise another kind of exception.
    """
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UnreadableJsonError("the JSON is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise UnreadableJsonError(f"a value cannot be read: {exc}") from None
