"""Reports, exports and imports, one module per seam (import the module you need: the command
line reads :mod:`app.reports.formats` to build its parser, and this package imports nothing).

- :mod:`app.reports.summary`: the ``report --json`` document (:func:`report`, :func:`report_json`);
- :mod:`app.reports.formats`: the export formats (writer, label, file name, MIME type);
- :mod:`app.reports.exports`: those exports of the filtered cases, to a file or as bytes;
- :mod:`app.reports.llmorph`: LLMorph result logs, written and imported;
- :mod:`app.reports.html_report`: the standalone, offline HTML report.
"""
