"""Turn pasted text and uploaded files into ``Sample`` lists, with readable errors.

Every function here either returns a complete result or raises ``InputError`` with a message meant
for the user (what is wrong, where, and what to do); nothing is ever half-parsed.

Flow for uploads: ``read_upload`` (bytes → DataFrame of strings / JSON values) →
``suggest_mapping`` (task field → column) → ``samples_from_frame``. ``load_input_file`` does all
three with the suggested mapping (for the CLI).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from core.types import Sample

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
# An inputs file the CLI reads (``--max-input-mb``): checked before reading, and reading stops
# there, so an endless or enormous file is refused instead of filling the memory.
MAX_INPUT_BYTES = 500 * 1024 * 1024
MAX_LINE_CHARS = 100_000
MAX_ROWS = 5_000
MAX_LISTED = 10  # how many offending rows an error message names

SUPPORTED_EXTENSIONS = (".csv", ".tsv", ".jsonl", ".json", ".txt")
PASTE_SEPARATORS = ("\t", " ||| ")


class InputError(ValueError):
    """Bad user input; ``message`` is written for the person who supplied it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------- shared helpers


def _is_empty(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _to_text(value: Any) -> str:
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


def _to_meta(value: Any) -> Any:
    """A cell as a JSON-serialisable meta value (NaN → None, numpy scalars → Python)."""
    if _is_empty(value) and not isinstance(value, str):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return value.item()
    return value


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def _check_line_lengths(lines: Iterable[str], label: str = "line") -> None:
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(
                f"{label} {number} is {len(line):,} characters long; the limit is "
                f"{MAX_LINE_CHARS:,} characters per line. Shorten it or split the input."
            )


# The one rule for characters, whatever the door (a file, an upload, the paste box, a JSON
# value): whitespace controls (tab, line feed, vertical tab, form feed, carriage return) are text;
# NUL and the other C0/C1 control characters are not, and neither is half of a UTF-16 surrogate
# pair (JSON's "\ud800" escape), which SQLite and HTTP cannot even encode.
_NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _describe_char(char: str) -> str:
    if "\ud800" <= char <= "\udfff":
        return f"a lone surrogate (U+{ord(char):04X}, half of a UTF-16 pair, not a character)"
    return f"a control character (U+{ord(char):04X})"


def check_characters(text: str, label: str = "line") -> None:
    """Refuse text holding NUL, other control characters or lone surrogates, naming the lines
    (numbered from 1, as ``label`` N). Used for files, uploads and pasted text alike."""
    if _NOT_TEXT.search(text) is None:
        return
    problems, last_line, line, counted_to = [], 0, 1, 0
    for match in _NOT_TEXT.finditer(text):
        line += text.count("\n", counted_to, match.start())
        counted_to = match.start()
        if line != last_line:
            problems.append(f"{label} {line} holds {_describe_char(match.group())}")
            last_line = line
        if len(problems) > MAX_LISTED:
            break
    raise InputError(
        f"{_listing(problems)}, which is not text. Remove such characters (or save the file "
        "as plain UTF-8 text) and try again."
    )


def _check_json_strings(value: Any, where: str) -> None:
    """The character rule for the strings JSON escapes can make (``"\\u0000"``, ``"\\ud800"``),
    keys included; ``where`` names the line or item. Iterative: nesting depth is not a limit."""
    pending: list[tuple[Any, str]] = [(value, "a value")]
    while pending:
        item, what = pending.pop()
        if isinstance(item, str):
            match = _NOT_TEXT.search(item)
            if match is not None:
                raise InputError(
                    f"{where}: {what} holds {_describe_char(match.group())}, which is not text. "
                    "Remove it and try again."
                )
        elif isinstance(item, dict):
            top = item is value
            for key, inner in item.items():
                pending.append((key, "a key"))
                pending.append((inner, f"the value of {key!r}" if top else what))
        elif isinstance(item, list):
            pending.extend((inner, what) for inner in item)


class _DuplicateKeyError(ValueError):
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


def _loads(text: str, where: str, *, check_strings: bool = True) -> Any:
    """``json.loads`` that refuses an object naming one key twice (JSON keeps the last one
    silently) and (with ``check_strings``) strings that are not text; ``where`` names the line
    or the document."""
    try:
        value = json.loads(text)
        # Every key is followed by `"` and `:`, so fewer such places than keys kept means no key
        # was dropped; only a text with more (a repeated key, or `":` inside a string) is parsed
        # again, slowly, to find out which.
        if len(_KEY_END.findall(text)) > _count_keys(value):
            value = json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKeyError as exc:
        raise InputError(
            f"{where}: the key {exc.key!r} appears twice in one object; only one value can be "
            "used, so remove or rename the other"
        ) from None
    except json.JSONDecodeError:
        raise  # each caller says what a valid file of its kind looks like
    except RecursionError:
        raise InputError(f"{where}: the JSON is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"{where}: a value cannot be read: {exc}") from None
    if check_strings and "\\u" in text:  # only an escape can put those in a JSON string
        _check_json_strings(value, where)
    return value


def _check_row_count(count: int, limit: int = MAX_ROWS) -> None:
    if count > limit:
        raise InputError(
            f"the input has {count:,} rows; at most {limit:,} rows can be run at once. "
            "Split it into smaller files."
        )


# ---------------------------------------------------------------- column mapping

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


# ---------------------------------------------------------------- pasted text


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
    _check_line_lengths(line for _, line in numbered)
    _check_row_count(len(numbered))
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
            f"expected {len(task_fields)} parts per line, but {_listing(problems)}. "
            + _multi_field_hint(task_fields)
        )
    return rows


def _parse_json_lines(
    numbered: list[tuple[int, str]], task_fields: Sequence[str]
) -> list[tuple[dict[str, str], dict[str, Any]]]:
    records = []
    for number, line in numbered:
        try:
            record = _loads(line, f"line {number}")
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
        f"line {number}: the field {field!r} is {_json_kind(value)}"
        for number, record in records
        for field, key in mapping.items()
        if isinstance(value := record.get(key), (dict, list))
    ]
    if structured:
        raise InputError(f"{_listing(structured)}, not text. A field takes a string (or a number).")
    for number, record in records:
        empty = [field for field, key in mapping.items() if _is_empty(record.get(key))]
        if empty:
            problems.append(f"line {number} ({', '.join(empty)})")
            continue
        rows.append(({field: _to_text(record[key]) for field, key in mapping.items()}, record))
    if problems:
        raise InputError(f"missing or empty values: {_listing(problems)}")
    return rows


# ---------------------------------------------------------------- uploads

_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive (an .xlsx/.docx file?); save the sheet as CSV"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\xd0\xcf\x11\xe0", "an old Office document (.xls/.doc?); save the sheet as CSV"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"SQLite format 3", "an SQLite database"),
)


def decode_bytes(data: bytes, encoding: str | None = None) -> tuple[str, str]:
    """Bytes → (text, encoding name). Tries UTF-8 (with or without BOM), UTF-16, then cp1252;
    an explicit ``encoding`` decodes the whole file in that one encoding instead.

    UTF-8 is checked line by line: a file whose UTF-8 lines hold non-ASCII text but where some
    lines are not UTF-8 mixes encodings, and is refused with those line numbers, because reading
    it in any one encoding would garble the good lines. Only a file with no non-ASCII UTF-8 line
    is read as cp1252 (its ASCII lines read the same either way).

    Raises ``InputError`` for binary data, text in none of these encodings, or characters that
    are not text (``check_characters``).
    """
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise InputError(f"this is not a text file: it looks like {what}")
    if encoding is not None:
        return _decode_as(data, encoding), encoding
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = None
    # UTF-16 without a BOM is often valid UTF-8 full of NULs, so NULs send it on to the next test.
    if text is not None and "\x00" not in text:
        return _reject_binary(text, "utf-8"), "utf-8"
    utf16 = _utf16_codec(data)
    if utf16:
        try:
            return _reject_binary(data.decode(utf16), "utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise InputError("the file looks like UTF-16 text but does not decode as it") from None
    if text is not None:  # UTF-8 text with a stray NUL: named by line, as in pasted text
        return _reject_binary(text, "utf-8"), "utf-8"
    if b"\x00" in data:
        raise InputError("this looks like a binary file (it contains NUL bytes), not text")
    _refuse_mixed_utf8(data)
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        raise InputError(
            "could not read the file as text: it is not UTF-8, UTF-16 or Windows-1252 "
            "(cp1252). Save it as UTF-8 and try again."
        ) from None
    return _reject_binary(text, "cp1252"), "cp1252"


def _decode_as(data: bytes, encoding: str) -> str:
    """The whole file in the encoding its owner named (``--encoding``), strictly."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise InputError(
            f"unknown encoding {encoding!r}: name one Python knows (utf-8, cp1252, latin-1, "
            "utf-16, shift_jis, …)"
        ) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].decode(encoding, "replace").count("\n") + 1
        raise InputError(
            f"line {line} is not valid {encoding} ({exc.reason}); the whole file must be in the "
            "one encoding named"
        ) from None
    return _reject_binary(text.removeprefix("\ufeff"), encoding)


def _refuse_mixed_utf8(data: bytes) -> None:
    """Refuse a file that is UTF-8 in some lines and not in others (see ``decode_bytes``)."""
    bad_lines, utf8_text = [], data.startswith(codecs.BOM_UTF8)
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.isascii():
            continue
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad_lines.append(str(number))
        else:
            utf8_text = True
    if utf8_text and bad_lines:
        which = (
            f"line {bad_lines[0]} is" if len(bad_lines) == 1 else f"lines {_listing(bad_lines)} are"
        )
        raise InputError(
            f"the file mixes encodings: {which} not UTF-8 while the other lines are, and "
            "reading it in any one encoding would garble the rest. Fix those lines and save the "
            "file as UTF-8, or name the encoding of the whole file (--encoding on the command "
            "line)."
        )


def _utf16_codec(data: bytes) -> str | None:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    # Without a BOM, mostly-ASCII UTF-16 has a NUL in every other byte.
    sample = data[:4096]
    if len(sample) >= 4 and len(data) % 2 == 0:
        odd_nuls = sample[1::2].count(0) / (len(sample) // 2)
        even_nuls = sample[0::2].count(0) / (len(sample) // 2)
        if odd_nuls > 0.6 and even_nuls < 0.1:
            return "utf-16-le"
        if even_nuls > 0.6 and odd_nuls < 0.1:
            return "utf-16-be"
    return None


def _reject_binary(text: str, encoding: str) -> str:
    controls = sum(
        1
        for char in text[:200_000]
        if unicodedata.category(char) == "Cc" and char not in "\t\n\v\f\r"
    )
    if controls > max(2, len(text[:200_000]) // 100):
        raise InputError(
            f"this does not look like a text file (it decodes as {encoding} but is full of "
            "control characters); upload CSV, JSONL, JSON or TXT"
        )
    check_characters(text)
    return text


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
            f"the file is {len(data) / 1024 / 1024:.1f} MB; the limit is {_megabytes(max_bytes)}"
        )
    if not data or data.isspace():
        raise InputError("the file is empty")
    text, encoding = decode_bytes(data, encoding)
    if not text.strip():
        raise InputError("the file is empty")
    if extension in (".csv", ".tsv"):
        frame = _read_csv(text, "\t" if extension == ".tsv" else None)
    elif extension == ".txt":
        frame = _read_txt(text)
    else:
        frame = _read_json(text)
    frame.attrs["encoding"] = encoding
    frame.attrs["format"] = extension.lstrip(".")
    return frame


def _megabytes(limit: int) -> str:
    return f"{limit / 1024 / 1024:g} MB"


def encoding_note(frame: pd.DataFrame) -> str | None:
    """A line for the user when the upload was not UTF-8 (None otherwise)."""
    encoding = frame.attrs.get("encoding")
    names = {"utf-16": "UTF-16", "cp1252": "Windows-1252 (cp1252)"}
    return f"read the file as {names[encoding]}" if encoding in names else None


def _read_txt(text: str) -> pd.DataFrame:
    lines = text.splitlines()
    _check_line_lengths(lines)
    numbered = [(number, line.strip()) for number, line in enumerate(lines, 1) if line.strip()]
    frame = pd.DataFrame({"text": pd.Series([line for _, line in numbered], dtype=object)})
    frame.attrs["line_numbers"] = tuple(number for number, _ in numbered)
    return frame


def _sniff_delimiter(header_line: str) -> str:
    counts = {sep: header_line.count(sep) for sep in (",", ";", "\t")}
    best = max(counts, key=lambda sep: counts[sep])
    return best if counts[best] > 0 else ","


def _unique_header(header: list[str]) -> list[str]:
    names, seen = [], set()
    for index, raw in enumerate(header, 1):
        base = raw.strip() or f"column_{index}"
        name, suffix = base, 2
        while name in seen:
            name, suffix = f"{base}_{suffix}", suffix + 1
        seen.add(name)
        names.append(name)
    return names


def _read_csv(text: str, delimiter: str | None) -> pd.DataFrame:
    _check_line_lengths(text.splitlines())
    if delimiter is None:
        first = next((line for line in text.splitlines() if line.strip()), "")
        delimiter = _sniff_delimiter(first)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    rows: list[list[str]] = []
    problems: list[str] = []
    numbers: list[int] = []
    record_start = 1
    try:
        for record in reader:
            if not any(cell.strip() for cell in record):
                record_start = reader.line_num + 1
                continue
            if header is None:
                header = record
                _refuse_duplicate_columns(header, record_start)
            elif len(record) != len(header):
                count = len(record)
                problems.append(f"line {record_start} ({count} value{'s' * (count != 1)})")
            else:
                rows.append(record)
                numbers.append(record_start)
            record_start = reader.line_num + 1
    except csv.Error as exc:
        if "end of data" in str(exc):
            detail = f"a quoted value starting on line {record_start} is never closed"
        elif "field larger" in str(exc):
            detail = f"the value starting on line {record_start} is too long"
        else:
            detail = f"bad quoting on line {reader.line_num} ({exc})"
        raise InputError(
            f"could not read the CSV: {detail}. Values containing the delimiter, quotes or line "
            'breaks must be wrapped in double quotes, with inner quotes doubled ("").'
        ) from None
    if problems:
        raise InputError(
            f"the header has {len(header or ())} columns but some rows do not: "
            f"{_listing(problems)}. Wrap values that contain the delimiter in double quotes."
        )
    if header is None or not rows:
        raise InputError("the CSV has a header but no data rows" if header else "the file is empty")
    frame = pd.DataFrame(rows, columns=_unique_header(header), dtype=object)
    frame.attrs["line_numbers"] = tuple(numbers)
    return frame


def _refuse_duplicate_columns(header: list[str], line: int) -> None:
    """Two columns with one name: which one a field means is a guess, so neither is taken."""
    positions: dict[str, list[int]] = {}
    for index, name in enumerate(header, 1):
        if name.strip():
            positions.setdefault(name.strip(), []).append(index)
    repeated = [(name, where) for name, where in positions.items() if len(where) > 1]
    if repeated:
        name, where = repeated[0]
        columns = " and ".join(str(index) for index in where)
        raise InputError(
            f"line {line}: the header names the column {name!r} {len(where)} times (columns "
            f"{columns}); only one can be read as {name!r}, so rename or remove the others"
        )


def _read_json(text: str) -> pd.DataFrame:
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
        raise InputError(f"every row must be a JSON object; not an object: {_listing(bad)}")
    if not records:
        raise InputError("the JSON holds no rows")
    for number, record in zip(places, records, strict=True):
        if numbers is None and "\\u" in text:  # lines were checked as they were read
            _check_json_strings(record, f"{label} {number}")
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
        return _loads(text, "the JSON", check_strings=False)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the JSON is not valid: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def _load_json_lines(text: str) -> tuple[list[Any], list[int] | None]:
    """JSON lines → (records, their line numbers); a whole document (a pretty-printed object)
    gives its records and None."""
    lines = text.splitlines()
    _check_line_lengths(lines)
    records, numbers = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(_loads(line, f"line {number}"))
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
        document = _loads(text, "the JSON", check_strings=False)
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


# ---------------------------------------------------------------- frame → samples


def _json_kind(value: Any) -> str:
    """What a structured value is, for a message that refuses it as a field's text (a task field
    takes a string, or a number read as written; turning an object into its JSON would silently
    make up a text nobody wrote)."""
    return "a JSON object" if isinstance(value, dict) else "a JSON array"


def _steps(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) and _is_empty(value):
        return ()
    if isinstance(value, str) and value.lstrip().startswith("["):
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(value)
    if isinstance(value, (list, tuple)):
        return tuple(_to_text(step).strip() for step in value if not _is_empty(step))
    return tuple(line.strip() for line in _to_text(value).splitlines() if line.strip())


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
    _check_row_count(len(df), max_rows)
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
                structured.append(f"{place}: the field {named} is {_json_kind(value)}")
        empty = [field for field, value in values.items() if _is_empty(value)]
        if empty:
            problems.append(f"{place} ({', '.join(empty)})")
            continue
        reference = row[positions[reference_column]] if reference_column else None
        samples.append(
            Sample(
                fields={field: _to_text(value) for field, value in values.items()},
                reference=None if _is_empty(reference) else _to_text(reference),
                reference_steps=_steps(row[positions[steps_column]]) if steps_column else (),
                meta={column: _to_meta(row[positions[column]]) for column in meta_columns},
            )
        )
    if structured:
        raise InputError(
            f"{_listing(structured)}, not text. A task field takes a string (or a number); "
            "put the text itself there, or map the field to another column."
        )
    if problems:
        raise InputError(
            f"{len(problems)} row(s) have an empty value in a mapped field: {_listing(problems)}. "
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


def load_input_file(
    path: str | Path,
    task_fields: Sequence[str],
    prefer_reference: Sequence[str] = (),
    *,
    max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_INPUT_BYTES,
    encoding: str | None = None,
) -> list[Sample]:
    """Read an inputs file (CSV/TSV/JSONL/JSON/TXT) with the suggested column mapping; more
    than ``max_rows`` rows are refused (``batch export`` takes more than a run), and so is a
    file larger than ``max_bytes`` or one that is not a regular file (``read_input_file``)."""
    frame = read_input_file(path, max_bytes=max_bytes, encoding=encoding)
    return auto_samples(frame, task_fields, prefer_reference, max_rows=max_rows)


_FILE_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_READ_CHUNK = 1024 * 1024
_DIRECTORY = "{name} is a directory, not a file; give a CSV, JSONL, JSON or TXT file"


def check_input_path(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> None:
    """What ``read_input_file`` checks before reading, on the path alone and opening nothing, so
    that a command can refuse a FIFO, a device or a file too large before it creates anything. A
    path that does not exist passes (the reader says so)."""
    try:
        status = os.stat(path)
    except OSError:
        return
    _refuse_to_read(Path(path), status, max_bytes)


def _refuse_to_read(path: Path, status: os.stat_result, max_bytes: int) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise InputError(_DIRECTORY.format(name=path.name))
    if not stat.S_ISREG(status.st_mode):
        kind = next(
            (what for test, what in _FILE_KINDS if test(status.st_mode)), "not a regular file"
        )
        raise InputError(
            f"{path} is {kind}, not a regular file; give a CSV, JSONL, JSON or TXT file"
        )
    if status.st_size > max_bytes:
        size = f"{status.st_size / 1024 / 1024:,.1f} MB"
        raise InputError(_too_large(path, size, max_bytes))


def read_input_file(
    path: str | Path, *, max_bytes: int = MAX_INPUT_BYTES, encoding: str | None = None
) -> pd.DataFrame:
    """An inputs file on disk → DataFrame, as ``read_upload`` reads an upload.

    Only a regular file is read: a FIFO would block until something writes to it and a device
    like ``/dev/zero`` never ends. It is opened without blocking and checked on the open file (so
    nothing can swap it in between); its size is checked before reading, and reading stops at
    ``max_bytes`` even when the file grows meanwhile.
    """
    path = Path(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise InputError(_DIRECTORY.format(name=path.name)) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        _refuse_to_read(path, os.fstat(descriptor), max_bytes)
    except InputError:
        os.close(descriptor)
        raise
    with open(descriptor, "rb", buffering=0) as file:
        chunks, total = [], 0
        try:
            while chunk := file.read(min(_READ_CHUNK, max_bytes + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > max_bytes:  # it grew while being read
                    raise InputError(_too_large(path, "still growing", max_bytes))
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = b"".join(chunks)
    del chunks
    return read_upload(path.name, data, max_bytes=max_bytes, encoding=encoding)


def _too_large(path: Path, size: str, max_bytes: int) -> str:
    return (
        f"{path.name} is {size}; the limit for an inputs file is {_megabytes(max_bytes)}. "
        "Split the file, or raise the limit with --max-input-mb."
    )
