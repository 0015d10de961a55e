"""Exports of the filtered cases: csv | jsonl | llmorph | html, to a file or as bytes.

Files are written atomically (a temporary file renamed into place, so a failure leaves nothing
half-written). Cases hold no secrets (endpoints store only a key's variable *name*, and only in
the endpoints table, which is never exported).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
import zipfile
from collections.abc import Iterable
from pathlib import Path

from app.reports.common import case_filter, json_safe
from app.reports.html_report import render_html_report
from app.reports.llmorph import llmorph_logs
from storage.case_filter import CaseFilter

EXPORT_FORMATS = ("csv", "jsonl", "llmorph", "html")
JSON_COLUMNS = ("source_input", "followup_input", "details")


def export_cases(
    store,
    fmt: str,
    out_path: str | os.PathLike,
    run_ids: Iterable[str] | None = None,
    *,
    flt: CaseFilter | None = None,
) -> int:
    """Write the cases as csv | jsonl | llmorph | html to ``out_path``; returns cases written.

    ``llmorph`` writes a zip when ``out_path`` ends in ``.zip``, else a directory (which must not
    exist yet or be empty). Everything is built next to the target and renamed into place.
    """
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose {', '.join(EXPORT_FORMATS)})")
    flt = case_filter(run_ids, flt)
    if flt.run_ids:
        missing = [r for r in flt.run_ids if store.run(r) is None]
        if missing:
            raise ValueError(f"no run with id {', '.join(map(repr, missing))}")
    out = Path(out_path)
    if fmt == "llmorph" and out.suffix.lower() != ".zip":
        return _export_llmorph_dir(store, flt, out)
    if out.is_dir():
        raise ValueError(f"{out} is a directory; give a file name")
    out.parent.mkdir(parents=True, exist_ok=True)
    # A fresh sibling name opened with "x" (not mkstemp) so the file gets the usual umask mode.
    tmp_name = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp_name, "xb") as fh:
            count = write_export(store, fmt, fh, flt)
        os.replace(tmp_name, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return count


def export_bytes(store, fmt: str, flt: CaseFilter | None = None) -> bytes:
    """The export as bytes (the page's download buttons); ``llmorph`` gives a zip."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose {', '.join(EXPORT_FORMATS)})")
    buffer = io.BytesIO()
    write_export(store, fmt, buffer, flt or CaseFilter())
    return buffer.getvalue()


def write_export(store, fmt: str, fh, flt: CaseFilter) -> int:
    """Write one export format to a binary file object; returns the number of cases."""
    if fmt == "csv":
        return _write_csv(store, flt, fh)
    if fmt == "jsonl":
        return _write_jsonl(store, flt, fh)
    if fmt == "llmorph":
        count = 0
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, document in llmorph_logs(store, flt):
                archive.writestr(name, json.dumps(document, ensure_ascii=False, indent=1))
                count += len(document["data"])
        return count
    if fmt == "html":
        fh.write(render_html_report(store, flt).encode("utf-8"))
        return store.count_cases(flt)
    raise ValueError(f"unknown export format {fmt!r}")


def _write_csv(store, flt: CaseFilter, fh) -> int:
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
    writer = None
    count = 0
    for row in store.iter_cases(flt, decoded=False):
        if writer is None:
            writer = csv.DictWriter(text, fieldnames=list(row))
            writer.writeheader()
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
        count += 1
    if writer is None:  # no cases: still write the header
        columns = store.case_column_names()
        csv.writer(text).writerow(columns)
    text.flush()
    text.detach()
    return count


def _write_jsonl(store, flt: CaseFilter, fh) -> int:
    count = 0
    for row in store.iter_cases(flt):
        line = json.dumps(json_safe(row), ensure_ascii=False)
        fh.write(line.encode("utf-8") + b"\n")
        count += 1
    return count


def _export_llmorph_dir(store, flt: CaseFilter, out: Path) -> int:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    tmp.mkdir()  # not mkdtemp: the folder gets the usual umask mode
    try:
        count = 0
        for name, document in llmorph_logs(store, flt):
            (tmp / name).write_text(json.dumps(document, ensure_ascii=False, indent=1), "utf-8")
            count += len(document["data"])
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        for child in tmp.glob("*"):
            child.unlink()
        with contextlib.suppress(OSError):
            tmp.rmdir()
        raise
    return count
