"""Reports, exports and imports, one module per seam.

- :mod:`app.reports.summary`: the ``report --json`` document (:func:`report`, :func:`report_json`);
- :mod:`app.reports.exports`: csv | jsonl | llmorph | html files or bytes of the filtered cases;
- :mod:`app.reports.llmorph`: LLMorph result logs, written and imported;
- :mod:`app.reports.html_report`: the standalone, offline HTML report.
"""

from app.reports.exports import EXPORT_FORMATS, export_bytes, export_cases, write_export
from app.reports.html_report import html_table, render_html_report
from app.reports.llmorph import LLMORPH_TASKS, MAX_IMPORT_BYTES, import_llmorph, llmorph_logs
from app.reports.summary import report, report_json, report_table

__all__ = [
    "EXPORT_FORMATS",
    "LLMORPH_TASKS",
    "MAX_IMPORT_BYTES",
    "export_bytes",
    "export_cases",
    "html_table",
    "import_llmorph",
    "llmorph_logs",
    "render_html_report",
    "report",
    "report_json",
    "report_table",
    "write_export",
]
