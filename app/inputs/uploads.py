"""An uploaded file (name and bytes) → a DataFrame, read by its extension."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from app.inputs.csv_format import read_csv
from app.inputs.encodings import decode_bytes
from app.inputs.errors import InputError
from app.inputs.json_format import read_json
from app.inputs.limits import check_line_lengths, megabytes

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
SUPPORTED_EXTENSIONS = (".csv", ".tsv", ".jsonl", ".json", ".txt")


def read_upload(
    filename: str,
    data: bytes,
    *,
    max_bytes: int = MAX_UPLOAD_BYTES,
    encoding: str | None = None,
) -> pd.DataFrame:
    """An uploaded file → DataFrame, by extension: .csv/.tsv, .jsonl/.json, .txt.

    CSV/TSV cells are strings (empty cells are ""); JSON keeps its value types; TXT gives one row
    per non-empty line in a column ``text``. ``df.attrs`` records ``encoding`` (utf-8, utf-16,
    cp1252 or the ``encoding`` given), ``format`` and, for line-based formats, ``line_numbers``
    (the line each row starts on, for messages). Raises ``InputError`` for anything unreadable.
    """
    extension = Path(filename or "").suffix.lower()
    if extension not in SUPPORTED_EXTENSIONS:
        raise InputError(
            f"unsupported file type {extension or '(no extension)'!r}: upload "
            f"{', '.join(SUPPORTED_EXTENSIONS)} (save spreadsheets as CSV)"
        )
    if len(data) > max_bytes:
        raise InputError(
            f"the file is {len(data) / 1024 / 1024:.1f} MB; the limit is {megabytes(max_bytes)}"
        )
    if not data or data.isspace():
        raise InputError("the file is empty")
    text, encoding = decode_bytes(data, encoding)
    if not text.strip():
        raise InputError("the file is empty")
    if extension in (".csv", ".tsv"):
        frame = read_csv(text, "\t" if extension == ".tsv" else None)
    elif extension == ".txt":
        frame = _read_txt(text)
    else:
        frame = read_json(text)
    frame.attrs["encoding"] = encoding
    frame.attrs["format"] = extension.lstrip(".")
    return frame


def encoding_note(frame: pd.DataFrame) -> str | None:
    """A line for the user when the upload was not UTF-8 (None otherwise)."""
    encoding = frame.attrs.get("encoding")
    names = {"utf-16": "UTF-16", "cp1252": "Windows-1252 (cp1252)"}
    return f"read the file as {names[encoding]}" if encoding in names else None


def _read_txt(text: str) -> pd.DataFrame:
    lines = text.splitlines()
    check_line_lengths(lines)
    numbered = [(number, line.strip()) for number, line in enumerate(lines, 1) if line.strip()]
    frame = pd.DataFrame({"text": pd.Series([line for _, line in numbered], dtype=object)})
    frame.attrs["line_numbers"] = tuple(number for number, _ in numbered)
    return frame
