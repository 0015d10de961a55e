"""JSON read strictly: an object naming one key twice, or a string that is not text, is refused
where ``json.loads`` would keep the last value or the bad character silently."""

from __future__ import annotations

import re
from typing import Any

from app.inputs.characters import check_json_strings
from app.inputs.errors import InputError
from core.json_text import UnreadableJsonError, load_json


# Not a ValueError: ``load_json`` turns a ValueError raised while loading into ``UnreadableJsonError``.
class _DuplicateKeyError(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return record


_KEY_END = re.compile(r'"\s*:')


def _count_keys(value: Any) -> int:
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            count += len(item)
            pending.extend(inner for inner in item.values() if isinstance(inner, (dict, list)))
        elif isinstance(item, list):
            pending.extend(inner for inner in item if isinstance(inner, (dict, list)))
    return count


def loads_strictly(text: str, where: str, *, check_strings: bool = True) -> Any:
    """``json.loads`` that refuses an object naming one key twice (JSON keeps the last one
    silently) and (with ``check_strings``) strings that are not text; ``where`` names the line
    or the document. A syntax error stays a ``json.JSONDecodeError``: each caller says what a
    valid file of its kind looks like."""
    try:
        value = load_json(text)
        # Every key is followed by `"` and `:`, so fewer such places than keys kept means no key
        # was dropped; only a text with more (a repeated key, or `":` inside a string) is parsed
        # again, slowly, to find out which.
        if len(_KEY_END.findall(text)) > _count_keys(value):
            value = load_json(text, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKeyError as exc:
        raise InputError(
            f"{where}: the key {exc.key!r} appears twice in one object; only one value can be "
            "used, so remove or rename the other"
        ) from None
    except UnreadableJsonError as exc:
        raise InputError(f"{where}: {exc}") from None
    if check_strings and "\\u" in text:  # only an escape can put those in a JSON string
        check_json_strings(value, where)
    return value
