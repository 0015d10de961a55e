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
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from core.types import Sample

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
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
            record = json.loads(line)
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


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Bytes → (text, encoding name). Tries UTF-8 (with or without BOM), UTF-16, then cp1252.

    Raises ``InputError`` for binary data or text in none of these encodings.
    """
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise InputError(f"this is not a text file: it looks like {what}")
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
    if b"\x00" in data:
        raise InputError("this looks like a binary file (it contains NUL bytes), not text")
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        raise InputError(
            "could not read the file as text: it is not UTF-8, UTF-16 or Windows-1252 "
            "(cp1252). Save it as UTF-8 and try again."
        ) from None
    return _reject_binary(text, "cp1252"), "cp1252"


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
        if unicodedata.category(char) == "Cc" and char not in "\t\n\r\f"
    )
    if "\x00" in text or controls > max(2, len(text[:200_000]) // 100):
        raise InputError(
            f"this does not look like a text file (it decodes as {encoding} but is full of "
            "control characters); upload CSV, JSONL, JSON or TXT"
        )
    return text


def read_upload(filename: str, data: bytes) -> pd.DataFrame:
    """An uploaded file → DataFrame, by extension: .csv/.tsv, .jsonl/.json, .txt.

    CSV/TSV cells are strings (empty cells are ""); JSON keeps its value types; TXT gives one row
    per non-empty line in a column ``text``. ``df.attrs`` records ``encoding`` (utf-8, utf-16 or
    cp1252) and ``format``. Raises ``InputError`` for anything unreadable.
    """
    extension = Path(filename or "").suffix.lower()
    if extension not in SUPPORTED_EXTENSIONS:
        raise InputError(
            f"unsupported file type {extension or '(no extension)'!r}: upload "
            f"{', '.join(SUPPORTED_EXTENSIONS)} (save spreadsheets as CSV)"
        )
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(
            f"the file is {len(data) / 1024 / 1024:.1f} MB; the limit is "
            f"{MAX_UPLOAD_BYTES // 1024 // 1024} MB"
        )
    if not data.strip():
        raise InputError("the file is empty")
    text, encoding = decode_bytes(data)
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


def encoding_note(frame: pd.DataFrame) -> str | None:
    """A line for the user when the upload was not UTF-8 (None otherwise)."""
    encoding = frame.attrs.get("encoding")
    names = {"utf-16": "UTF-16", "cp1252": "Windows-1252 (cp1252)"}
    return f"read the file as {names[encoding]}" if encoding in names else None


def _read_txt(text: str) -> pd.DataFrame:
    lines = text.splitlines()
    _check_line_lengths(lines)
    rows = [line.strip() for line in lines if line.strip()]
    return pd.DataFrame({"text": pd.Series(rows, dtype=object)})


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
    record_start = 1
    try:
        for record in reader:
            if not any(cell.strip() for cell in record):
                record_start = reader.line_num + 1
                continue
            if header is None:
                header = record
            elif len(record) != len(header):
                count = len(record)
                problems.append(f"line {record_start} ({count} value{'s' * (count != 1)})")
            else:
                rows.append(record)
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
    return pd.DataFrame(rows, columns=_unique_header(header), dtype=object)


def _read_json(text: str) -> pd.DataFrame:
    stripped = text.strip()
    if stripped.startswith("["):
        records = _load_json_document(stripped)
        if not isinstance(records, list):
            raise InputError("expected a JSON array of objects")
        label = "item"
    elif stripped.startswith("{"):
        records, label = _load_json_lines(text), "line"
    else:
        raise InputError(
            "expected JSON lines (one object per line) or a JSON array of objects; the file "
            f"starts with {stripped[:20]!r}"
        )
    bad = [f"{label} {n}" for n, record in enumerate(records, 1) if not isinstance(record, dict)]
    if bad:
        raise InputError(f"every row must be a JSON object; not an object: {_listing(bad)}")
    if not records:
        raise InputError("the JSON holds no rows")
    for number, record in enumerate(records, 1):
        for key, value in record.items():
            if isinstance(value, str) and len(value) > MAX_LINE_CHARS:
                raise InputError(
                    f"{label} {number}: the value of {key!r} is {len(value):,} characters long; "
                    f"the limit is {MAX_LINE_CHARS:,}"
                )
    return pd.DataFrame(records, dtype=object)


def _load_json_document(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the JSON is not valid: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise InputError("the JSON is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"the JSON holds a value that cannot be read: {exc}") from None


def _load_json_lines(text: str) -> list[Any]:
    lines = text.splitlines()
    _check_line_lengths(lines)
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            document = _try_whole_object(text)
            if document is not None:
                return document
            raise InputError(
                f"line {number} is not valid JSON ({exc.msg} at column {exc.colno}); a .jsonl file "
                "needs one complete JSON object per line"
            ) from None
        except RecursionError:
            raise InputError(f"line {number}: the JSON is nested too deeply") from None
        except ValueError as exc:  # e.g. an integer with more digits than Python converts
            raise InputError(f"line {number}: a value cannot be read: {exc}") from None
    return records


def _try_whole_object(text: str) -> list[Any] | None:
    """A pretty-printed single object, or ``{"rows": [...]}``, read as a whole document."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # ValueError covers JSONDecodeError and huge integers
        return None
    if not isinstance(document, dict):
        return None
    lists = [value for value in document.values() if isinstance(value, list)]
    if len(document) == 1 and len(lists) == 1:
        return lists[0]
    return [document]


# ---------------------------------------------------------------- frame → samples


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
    rows = df.itertuples(index=False, name=None)
    samples, problems = [], []
    for number, row in enumerate(rows, 1):
        values = {field: row[positions[column]] for field, column in mapping.items()}
        empty = [field for field, value in values.items() if _is_empty(value)]
        if empty:
            problems.append(f"row {number} ({', '.join(empty)})")
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
) -> list[Sample]:
    """Read an inputs file (CSV/TSV/JSONL/JSON/TXT) with the suggested column mapping; more
    than ``max_rows`` rows are refused (``batch export`` takes more than a run)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(
            f"{path.name} is a directory, not a file; give a CSV, JSONL, JSON or TXT file"
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size > MAX_UPLOAD_BYTES:
        raise InputError(
            f"{path.name} is {size / 1024 / 1024:.1f} MB; the limit is "
            f"{MAX_UPLOAD_BYTES // 1024 // 1024} MB"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    frame = read_upload(path.name, data)
    return auto_samples(frame, task_fields, prefer_reference, max_rows=max_rows)
