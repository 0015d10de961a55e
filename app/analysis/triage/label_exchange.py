"""Label history exchanged between databases: exported as CSV or JSONL, imported all or nothing."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.json_text import UnreadableJsonError, load_json
from storage.label_verbs import LABELS, RETRACTED

if TYPE_CHECKING:
    from storage import Store

EXPORT_COLUMNS: tuple[str, ...] = (
    "case_id",
    "labeler",
    "label",
    "note",
    "created_at",
    "retracts_created_at",
    "run_id",
    "model",
    "relation_id",
)
IMPORT_FORMATS: tuple[str, ...] = ("csv", "jsonl")


class LabelImportError(ValueError):
    """An import that was refused as a whole; ``errors`` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        shown = "; ".join(errors[:10])
        more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
        super().__init__(f"label import refused, nothing written: {shown}{more}")


def export_labels(store: Store, fmt: str = "csv", run_ids: Iterable[str] | None = None) -> str:
    """The full label history (undo entries included) as CSV or JSONL text.

    Columns: case_id, labeler, label, note, created_at, retracts_created_at (for 'retracted'
    entries: the time of the label they cancel), run_id, model, relation_id (context only).
    """
    rows = [
        {column: row.get(column) for column in EXPORT_COLUMNS} for row in store.all_labels(run_ids)
    ]
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: "" if value is None else value for key, value in row.items()})
        return buffer.getvalue()
    raise ValueError(f"unknown export format {fmt!r}; expected csv or jsonl")


class TimeOutOfRangeError(ValueError):
    """An ISO time that cannot be expressed in UTC (past year 9999 or before year 1)."""


def _normalise_time(text: str) -> str:
    """ISO time → UTC with microseconds (the form labels are stored in); ValueError if not ISO
    or out of range (year 9999 at -01:00 is past the last representable moment in UTC)."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).isoformat(timespec="microseconds")
    except OverflowError:
        raise TimeOutOfRangeError(f"{text.strip()!r} is out of range in UTC") from None


def _parse_rows(text: str, fmt: str) -> tuple[list[dict[str, Any]], list[str]]:
    errors: list[str] = []
    rows: list[dict[str, Any]] = []
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = load_json(line)
            except json.JSONDecodeError as error:
                errors.append(f"line {number}: not valid JSON ({error.msg})")
                continue
            except UnreadableJsonError as error:
                errors.append(f"line {number}: {error}")
                continue
            if not isinstance(row, dict):
                errors.append(f"line {number}: expected a JSON object")
                continue
            rows.append({"_where": f"line {number}", **row})
    elif fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in ("case_id", "label") if c not in (reader.fieldnames or [])]
        if missing:
            return [], [f"CSV header lacks column(s): {', '.join(missing)}"]
        try:
            for number, row in enumerate(reader, start=2):
                rows.append({"_where": f"row {number}", **row})
        except csv.Error as error:  # e.g. a field over the CSV module's size limit
            return [], [f"row {reader.line_num}: the CSV cannot be read ({error})"]
    else:
        raise ValueError(f"unknown import format {fmt!r}; expected csv or jsonl")
    return rows, errors


def _clean(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _labels_on_cases_never_failed(
    store: Store, rows: list[dict[str, Any]], known: set[str]
) -> list[str]:
    """Labels judge FAIL verdicts: a label on a case that is not FAIL, and never was before a
    threshold change, would count in the false-positive rates without being one."""
    errors = []
    verdicts: dict[str, tuple[str | None, str | None]] = {}
    for row in rows:
        case_id = row["case_id"]
        if row["label"] == RETRACTED or case_id not in known:
            continue
        if case_id not in verdicts:
            case = store.case(case_id)
            verdicts[case_id] = (case.verdict, case.original_verdict) if case else (None, None)
        verdict, original = verdicts[case_id]
        if "FAIL" not in (verdict, original):
            errors.append(
                f"{row['where']}: case {case_id} is {verdict}, not FAIL; only FAIL cases are labeled"
            )
    return errors


def import_labels(store: Store, text: str, fmt: str = "csv") -> dict[str, int]:
    """Add labels exported by ``export_labels`` (e.g. from a teammate's database).

    Everything is validated first — format, label names, times, that every case exists, that every
    retraction's label exists — and on any problem LabelImportError is raised with all of them and
    nothing is written. Rows identical to stored ones (same case, label, note, labeler and time)
    are skipped, so importing a file twice adds nothing the second time.

    Returns {"added", "duplicates", "rows"}.
    """
    parsed, errors = _parse_rows(text, fmt)
    cleaned: list[dict[str, Any]] = []
    for row in parsed:
        where = row["_where"]
        case_id = _clean(row.get("case_id"))
        label = _clean(row.get("label"))
        if not case_id:
            errors.append(f"{where}: missing case_id")
        if label not in (*LABELS, RETRACTED):
            errors.append(f"{where}: unknown label {label!r}")
        try:
            created_at = _normalise_time(_clean(row.get("created_at")))
        except TimeOutOfRangeError as error:
            errors.append(f"{where}: created_at {error}")
            created_at = ""
        except ValueError:
            errors.append(f"{where}: created_at {row.get('created_at')!r} is not an ISO time")
            created_at = ""
        retracts = None
        if label == RETRACTED:
            try:
                retracts = _normalise_time(_clean(row.get("retracts_created_at")))
            except ValueError:
                errors.append(f"{where}: a 'retracted' row needs retracts_created_at (ISO time)")
        cleaned.append(
            {
                "where": where,
                "case_id": case_id,
                "label": label,
                "note": _clean(row.get("note")),
                "labeler": _clean(row.get("labeler")),
                "created_at": created_at,
                "retracts_created_at": retracts,
            }
        )
    case_ids = sorted({row["case_id"] for row in cleaned if row["case_id"]})
    known = store.existing_case_ids(case_ids)
    unknown = [case_id for case_id in case_ids if case_id not in known]
    if unknown:
        listed = ", ".join(unknown[:10]) + (" …" if len(unknown) > 10 else "")
        errors.append(f"{len(unknown)} unknown case id(s) (not in this database): {listed}")
    errors += _labels_on_cases_never_failed(store, cleaned, known)
    if errors:
        raise LabelImportError(errors)

    def identity(row: dict[str, Any]) -> tuple:
        return (row["case_id"], row["label"], row["note"], row["labeler"], row["created_at"])

    existing = {identity(row) for row in store.all_labels()}
    fresh: list[dict[str, Any]] = []
    for row in sorted(cleaned, key=lambda r: (r["created_at"], r["label"] == RETRACTED)):
        key = identity(row)
        if key in existing:
            continue
        existing.add(key)
        fresh.append(row)
    try:
        added = store.insert_label_rows(fresh)
    except ValueError as error:
        raise LabelImportError([str(error)]) from None
    return {"added": added, "duplicates": len(cleaned) - added, "rows": len(cleaned)}
