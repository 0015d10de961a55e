"""The export formats, one entry each: how the filtered cases are written and how they are offered.

:data:`FORMATS` is read by the command line (``export --format``) and by the Analysis page's
download buttons, so a new format is one writer and one entry here. The command line builds its
parser from this module, so the writers import their libraries (the HTML report's charts, the
statistics of the JSON report) only when a file is written.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from app.reports.common import json_safe
from core.case_filter import CaseFilter

# store, a binary file to write into, the cases to write → the number of cases written
Writer = Callable[[Any, IO[bytes], CaseFilter], int]


@dataclass(frozen=True)
class ExportFormat:
    """One export: its writer and how a download presents the file it writes."""

    key: str  # ``export --format KEY``, and the download button's widget key
    label: str  # the download button's text
    file_name: str  # the downloaded file's name
    mime: str
    write: Writer
    # ``export --format`` offers it; the report has its own command (``report --json``).
    on_command_line: bool = True


def write_csv(store, fh: IO[bytes], flt: CaseFilter) -> int:
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


def write_jsonl(store, fh: IO[bytes], flt: CaseFilter) -> int:
    count = 0
    for row in store.iter_cases(flt):
        line = json.dumps(json_safe(row), ensure_ascii=False)
        fh.write(line.encode("utf-8") + b"\n")
        count += 1
    return count


def write_report_json(store, fh: IO[bytes], flt: CaseFilter) -> int:
    from app.reports.summary import report

    document = report(store, flt=flt)
    fh.write(json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8"))
    return document["n_cases"]


def llmorph_json(document: dict[str, Any]) -> str:
    """One LLMorph log file's text."""
    return json.dumps(document, ensure_ascii=False, indent=1)


def write_llmorph_zip(store, fh: IO[bytes], flt: CaseFilter) -> int:
    from app.reports.llmorph import llmorph_logs

    count = 0
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, document in llmorph_logs(store, flt):
            archive.writestr(name, llmorph_json(document))
            count += len(document["data"])
    return count


def write_html(store, fh: IO[bytes], flt: CaseFilter) -> int:
    from app.reports.html_report import render_html_report

    fh.write(render_html_report(store, flt).encode("utf-8"))
    return store.count_cases(flt)


FORMATS: dict[str, ExportFormat] = {
    f.key: f
    for f in (
        ExportFormat("csv", "Cases (CSV)", "morphscope_cases.csv", "text/csv", write_csv),
        ExportFormat(
            "jsonl", "Cases (JSONL)", "morphscope_cases.jsonl", "application/jsonl", write_jsonl
        ),
        ExportFormat(
            "report",
            "Report (JSON)",
            "morphscope_report.json",
            "application/json",
            write_report_json,
            on_command_line=False,
        ),
        ExportFormat(
            "llmorph",
            "LLMorph logs (zip)",
            "morphscope_llmorph.zip",
            "application/zip",
            write_llmorph_zip,
        ),
        ExportFormat("html", "HTML report", "morphscope_report.html", "text/html", write_html),
    )
}
"""Every export by key, in the order the download buttons show them."""

EXPORT_FORMATS = tuple(key for key, f in FORMATS.items() if f.on_command_line)
"""The formats ``export --format`` writes to a file."""


def export_format(key: str, offered: tuple[str, ...] = tuple(FORMATS)) -> ExportFormat:
    """The format ``key`` names, or a ValueError listing the ``offered`` ones."""
    if key not in offered:
        raise ValueError(f"unknown export format {key!r} (choose {', '.join(offered)})")
    return FORMATS[key]
