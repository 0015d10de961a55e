"""CSV and TSV text → a DataFrame of strings, with the line each row starts on."""

from __future__ import annotations

import csv
import io

import pandas as pd

from app.inputs.errors import InputError, listing
from app.inputs.limits import check_line_lengths


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


def read_csv(text: str, delimiter: str | None) -> pd.DataFrame:
    """CSV text → DataFrame; ``delimiter`` None guesses it from the header line."""
    check_line_lengths(text.splitlines())
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
            f"{listing(problems)}. Wrap values that contain the delimiter in double quotes."
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
