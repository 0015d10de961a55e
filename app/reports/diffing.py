"""Word-level differences between two texts, as escaped HTML for side-by-side views and reports.

Model output is untrusted: every piece of text is HTML-escaped *before* any markup is added.
For HTML shown through Markdown (Streamlit's ``unsafe_allow_html``), ``for_markdown=True`` also
writes newlines as ``<br>``: a blank line would otherwise end the HTML block and hand the rest of
the text to the Markdown parser, where ``![x](http://host/a.png)`` becomes an image the browser
fetches.
"""

from __future__ import annotations

import difflib
import html
import re

_TOKEN = re.compile(r"\s+|[^\s]+")

DELETED_STYLE = "background:#ffd7d5;text-decoration:line-through;"
INSERTED_STYLE = "background:#ccffd8;"


def _escape_for_markdown(text: str) -> str:
    """Escaped HTML without a newline: inside one line, a Markdown HTML block never ends, so the
    Markdown parser never sees the text (``<br>`` keeps the line breaks)."""
    escaped = html.escape(text)
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def _tokens(text: str | None) -> list[str]:
    return _TOKEN.findall(text if isinstance(text, str) else "")


def diff_html(source: str, followup: str, *, for_markdown: bool = False) -> tuple[str, str]:
    """(source, follow-up) as escaped HTML with removed / added words highlighted.

    ``for_markdown``: safe inside a Markdown HTML block too (no newline, no Markdown syntax)."""
    escape = _escape_for_markdown if for_markdown else html.escape
    a, b = _tokens(source), _tokens(followup)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old = escape("".join(a[i1:i2]))
        new = escape("".join(b[j1:j2]))
        if op == "equal":
            left.append(old)
            right.append(new)
            continue
        if old:
            left.append(f'<span style="{DELETED_STYLE}">{old}</span>')
        if new:
            right.append(f'<span style="{INSERTED_STYLE}">{new}</span>')
    return "".join(left), "".join(right)


def diff_line(source: str | None, followup: str | None, limit: int = 200) -> str:
    """The word changes from ``source`` to ``followup`` on one plain-text line:
    ``-removed +added`` per changed stretch (whitespace runs shown as one space), cut at
    ``limit`` characters; ``(no difference)`` when the texts have the same words."""
    a, b = _tokens(source), _tokens(followup)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    parts = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        old = " ".join("".join(a[i1:i2]).split())
        new = " ".join("".join(b[j1:j2]).split())
        parts.append(" ".join(p for p in (f"-{old}" if old else "", f"+{new}" if new else "") if p))
    line = " · ".join(p for p in parts if p) or "(no difference)"
    return line if len(line) <= limit else line[: limit - 1] + "…"
