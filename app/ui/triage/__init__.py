"""The Triage page's panels, one render function each, and the callbacks behind their buttons.

Panels, top to bottom: who labels and which FAILs (``filters``), the current case with its label
and navigation buttons (``case``), the progress, false-positive rates and threshold suggestions
(``feedback``), and team export/import/agreement (``team``). Session-state keys start with
``triage_`` (see ``state``).
"""
