"""Which characters count as text, checked the same way for files, uploads, pastes and JSON."""

from __future__ import annotations

import re
from typing import Any

from app.inputs.errors import MAX_LISTED, InputError, listing

# The one rule for characters, whatever the door (a file, an upload, the paste box, a JSON
# value): whitespace controls (tab, line feed, vertical tab, form feed, carriage return) are text;
# NUL and the other C0/C1 control characters are not, and neither is half of a UTF-16 surrogate
# pair (JSON's "\ud800" escape), which SQLite and HTTP cannot even encode.
NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def describe_char(char: str) -> str:
    """What a character refused by ``NOT_TEXT`` is, for the message."""
    if "\ud800" <= char <= "\udfff":
        return f"a lone surrogate (U+{ord(char):04X}, half of a UTF-16 pair, not a character)"
    return f"a control character (U+{ord(char):04X})"


def check_characters(text: str, label: str = "line") -> None:
    """Refuse text holding NUL, other control characters or lone surrogates, naming the lines
    (numbered from 1, as ``label`` N). Used for files, uploads and pasted text alike."""
    if NOT_TEXT.search(text) is None:
        return
    problems, last_line, line, counted_to = [], 0, 1, 0
    for match in NOT_TEXT.finditer(text):
        line += text.count("\n", counted_to, match.start())
        counted_to = match.start()
        if line != last_line:
            problems.append(f"{label} {line} holds {describe_char(match.group())}")
            last_line = line
        if len(problems) > MAX_LISTED:
            break
    raise InputError(
        f"{listing(problems)}, which is not text. Remove such characters (or save the file "
        "as plain UTF-8 text) and try again."
    )


def check_json_strings(value: Any, where: str) -> None:
    """The character rule for the strings JSON escapes can make (``"\\u0000"``, ``"\\ud800"``),
    keys included; ``where`` names the line or item. Iterative: nesting depth is not a limit."""
    pending: list[tuple[Any, str]] = [(value, "a value")]
    while pending:
        item, what = pending.pop()
        if isinstance(item, str):
            match = NOT_TEXT.search(item)
            if match is not None:
                raise InputError(
                    f"{where}: {what} holds {describe_char(match.group())}, which is not text. "
                    "Remove it and try again."
                )
        elif isinstance(item, dict):
            top = item is value
            for key, inner in item.items():
                pending.append((key, "a key"))
                pending.append((inner, f"the value of {key!r}" if top else what))
        elif isinstance(item, list):
            pending.extend((inner, what) for inner in item)
