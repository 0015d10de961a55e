"""Word-level differences between two texts, as escaped HTML for side-by-side views and reports.

Model output is untrusted: every piece of text is HTML-escaped *before* any markup is added.
"""

from __future__ import annotations

import difflib
import html
import re

_TOKEN = re.compile(r"\s+|[^\s]+")

DELETED_STYLE = "background:#ffd7d5;text-decoration:line-through;"
INSERTED_STYLE = "background:#ccffd8;"


def _tokens(text: str | None) -> list[str]:
    return _TOKEN.findall(text if isinstance(text, str) else "")


def diff_html(source: str, followup: str) -> tuple[str, str]:
    """(source, follow-up) as escaped HTML with removed / added words highlighted."""
    a, b = _tokens(source), _tokens(followup)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old = html.escape("".join(a[i1:i2]))
        new = html.escape("".join(b[j1:j2]))
        if op == "equal":
            left.append(old)
            right.append(new)
            continue
        if old:
            left.append(f'<span style="{DELETED_STYLE}">{old}</span>')
        if new:
            right.append(f'<span style="{INSERTED_STYLE}">{new}</span>')
    return "".join(left), "".join(right)
