"""Exports of the filtered cases in one of :data:`~app.reports.formats.FORMATS`, to a file or as
bytes.

Files are written atomically (a temporary file renamed into place, so a failure leaves nothing
half-written). Cases hold no secrets (endpoints store only a key's variable *name*, and only in
the endpoints table, which is never exported).
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from app.reports.common import case_filter
from app.reports.formats import EXPORT_FORMATS, export_format, llmorph_json
from app.reports.llmorph import llmorph_logs
from core.case_filter import CaseFilter


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
    export = export_format(fmt, EXPORT_FORMATS)
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
            count = export.write(store, fh, flt)
        os.replace(tmp_name, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return count


def export_bytes(store, fmt: str, flt: CaseFilter) -> bytes:
    """The export as bytes (the page's download buttons); ``llmorph`` gives a zip."""
    export = export_format(fmt)
    buffer = io.BytesIO()
    export.write(store, buffer, flt)
    return buffer.getvalue()


def _export_llmorph_dir(store, flt: CaseFilter, out: Path) -> int:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    tmp.mkdir()  # not mkdtemp: the folder gets the usual umask mode
    try:
        count = 0
        for name, document in llmorph_logs(store, flt):
            (tmp / name).write_text(llmorph_json(document), "utf-8")
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
