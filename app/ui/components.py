"""Reusable widgets: side-by-side diff, verdict badge, endpoint picker. Text is always escaped
(never raw HTML), and text from outside (model output, reasons, imported files) goes through
``inert`` before it reaches anything that renders Markdown."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.catalogue.definitions import column_help
from app.analysis.catalogue.formats import MISSING, Unit, format_shown
from app.analysis.catalogue.tables import Shown
from app.reports.diffing import diff_html
from core.types import Endpoint
from relations.registry import get_relation

log = logging.getLogger(__name__)

VERDICT_COLOURS = {"PASS": "green", "FAIL": "red", "SKIP": "gray", "ERROR": "orange"}
# Material icons come with Streamlit's own font: no emoji font needed, nothing fetched.
VERDICT_ICONS = {
    "PASS": ":material/check_circle:",
    "FAIL": ":material/cancel:",
    "SKIP": ":material/skip_next:",
    "ERROR": ":material/error:",
}

_BOX = (
    "white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:0.85rem;"
    "border:1px solid #ddd;border-radius:6px;padding:8px;max-height:420px;overflow:auto;"
)


# The characters that start Markdown that does something: links and images ([, ], !), autolinks
# and HTML (<, >, &), emphasis and code (*, _, `, ~), math ($), tables (|), headings (#) and the
# escape itself. Plain punctuation (.,:;()-) stays as it is, so messages read normally, except
# where it would make a bare URL a live link ("://", "www.").
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>!$~|#&]|:(?=//)|(?<=www)\.)", re.IGNORECASE)


def inert(text: object, *, one_line: bool = False) -> str:
    """Untrusted text for ``st.markdown`` and friends (captions, alerts, expander titles): every
    Markdown character backslash-escaped, so links, images, emphasis, directives and HTML show
    as the characters they are. ``one_line`` folds newlines (for titles and labels)."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", "" if text is None else str(text))
    return " ".join(escaped.split()) if one_line else escaped.replace("\n", "  \n")


def verdict_badge(verdict: str) -> str:
    """A Streamlit markdown badge, e.g. ':red-badge[FAIL]'."""
    return (
        f":{VERDICT_COLOURS.get(verdict, 'gray')}-badge[{VERDICT_ICONS.get(verdict, '')} {verdict}]"
    )


@contextmanager
def error_boundary(what: str) -> Iterator[None]:
    """Run one panel (an Analysis tab, a Triage panel, Probe results) so that a failure in it
    shows a one-line message instead of a traceback, and the rest of the page still renders.

    The details (exception and traceback) go to the log. Streamlit's own stop/rerun signals are
    ``BaseException``s, not ``Exception``s, so they pass through untouched.
    """
    try:
        yield
    except Exception as error:  # the boundary: every failure becomes a message
        log.exception("%s failed", what)
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        st.error(
            f"{inert(what, one_line=True)} could not be shown: "
            f"{inert(first_line[:200], one_line=True)} (details are in the log).",
            icon=":material/error:",
        )


# Text colours of the verdict column (a table cell cannot hold a badge).
VERDICT_CELL_STYLES = {
    "PASS": "color: #1b7f3b; font-weight: 600",
    "FAIL": "color: #c62828; font-weight: 600",
    "SKIP": "color: #6b6b6b",
    "ERROR": "color: #b35c00; font-weight: 600",
}

TABLE_TEXT_LIMIT = 80
"""Longer text cells (reasons, answers) are cut here with "…"; the case view shows them whole."""


def shorten(text: object, limit: int = TABLE_TEXT_LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…" ("—" when missing)."""
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return MISSING
    if isinstance(text, bool):
        return "yes" if text else "no"
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def styled_table(df: pd.DataFrame, layout: Sequence[Shown]) -> tuple[Any, dict[str, Any]]:
    """A displayed table (``app.ui.analysis_view.frame``'s output) with one format per column
    from the metric catalogue, "—" for missing values, the verdict column coloured and long text
    shortened; plus the ``column_config`` whose header tooltips say what a column means and why
    a cell may read "—". The data underneath keeps its raw numbers (sorting stays numeric)."""
    by_header = {
        shown.label + (" %" if shown.unit is Unit.PERCENT else ""): shown for shown in layout
    }
    formats: dict[str, Any] = {}
    config: dict[str, Any] = {}
    df = df.copy()
    for header in df.columns:
        shown = by_header.get(header)
        if shown is None:
            continue
        if shown.unit is Unit.TEXT:
            formats[header] = shorten
        else:
            formats[header] = lambda v, unit=shown.unit: format_shown(v, unit, scaled_percent=True)
            if df[header].isna().any():
                # The grid draws a missing number as "None" whatever the Styler says: a column
                # with gaps is shown as its formatted text ("—" in the gaps); a full column
                # keeps its numbers, so it still sorts by value.
                df[header] = df[header].map(formats[header])
        config[header] = st.column_config.Column(help=column_help(shown.key, shown.unit))
    styler = df.style.format(formats, na_rep=MISSING)
    verdict_header = next((h for h, s in by_header.items() if s.key == "verdict"), None)
    if verdict_header in df.columns:
        styler = styler.map(lambda v: VERDICT_CELL_STYLES.get(v, ""), subset=[verdict_header])
    return styler, config


def show_table(df: pd.DataFrame, layout: Sequence[Shown], *, key: str | None = None) -> None:
    """``st.dataframe`` of :func:`styled_table` (no index, full width)."""
    styler, config = styled_table(df, layout)
    st.dataframe(styler, hide_index=True, column_config=config, width="stretch", key=key)


def page_link(page: str, label: str, icon: str, help: str | None = None) -> None:
    """A real link to another page of the app (it opens in a new tab on a middle click). A
    panel drawn outside the app's navigation (alone, in a test) says where to find it instead."""
    from streamlit.errors import StreamlitPageNotFoundError

    try:
        st.page_link(page, label=label, icon=icon, help=help)
    except StreamlitPageNotFoundError:
        st.caption(f"{label}: in the sidebar")


def relation_name(relation_id: str) -> str:
    """A relation's human name ("Negation"); its id when it is not a built-in one (a custom or
    imported relation), which is the only name it has."""
    try:
        return get_relation(relation_id).name
    except KeyError:
        return relation_id


def fields_text(fields: Any) -> str:
    """A case's (decoded) input fields as readable text: the value alone for one field,
    ``name: value`` lines for several; "" when there are none (a SKIP or ERROR case may have no
    follow-up: None, or NaN in a DataFrame)."""
    if isinstance(fields, str):
        return fields
    if isinstance(fields, list):
        return str(fields)
    if not isinstance(fields, dict):
        return ""
    if len(fields) == 1:
        return str(next(iter(fields.values())))
    return "\n".join(f"{name}: {value}" for name, value in fields.items())


def side_by_side(left_title: str, left: str | None, right_title: str, right: str | None) -> None:
    """Two texts next to each other with word differences highlighted. When one side is
    missing (a SKIP or ERROR case has no follow-up or no output), nothing is marked as deleted or
    inserted: the present side is shown plain and the missing one as "—"."""
    if left and right:
        left_html, right_html = diff_html(left, right, for_markdown=True)
    else:
        left_html = diff_html(left, left, for_markdown=True)[0] if left else MISSING
        right_html = diff_html(right, right, for_markdown=True)[0] if right else MISSING
    col_left, col_right = st.columns(2)
    with col_left:
        st.markdown(f"**{inert(left_title, one_line=True)}**")
        st.markdown(f'<div style="{_BOX}">{left_html}</div>', unsafe_allow_html=True)
    with col_right:
        st.markdown(f"**{inert(right_title, one_line=True)}**")
        st.markdown(f'<div style="{_BOX}">{right_html}</div>', unsafe_allow_html=True)


def endpoint_choices(store) -> dict[str, Endpoint]:
    """The embedded model first (preselected), then the saved endpoints, by display name."""
    from app.engine.model_server import get_server

    choices = {get_server().endpoint().name: get_server().endpoint()}
    for endpoint in store.endpoints():
        choices[endpoint.name] = endpoint
    return choices


def endpoint_picker(
    store, label: str, key: str, help: str | None = None, *, remember: bool = False
) -> Endpoint:
    """A selectbox of endpoints; returns the chosen Endpoint (embedded model by default).
    ``remember`` keeps the choice across page switches and reloads (by name, in the URL)."""
    from app.ui import form_memory

    choices = endpoint_choices(store)
    names = list(choices)
    if remember:
        form_memory.seed(key, names[0], names, in_url=True)
    name = st.selectbox(label, names, key=key, help=help)
    if remember:
        form_memory.keep(key, in_url=True)
    return choices[name]


def resolve_embedded(endpoint: Endpoint, wait_s: float = 180.0) -> Endpoint | None:
    """The embedded endpoint with its live port (starting the server if needed), or None."""
    from app.engine.model_server import ServerState, get_server

    if not endpoint.embedded:
        return endpoint
    server = get_server()
    status = server.status()
    if status.state is not ServerState.READY:
        with st.spinner("Starting the embedded model (first start takes a few seconds)…"):
            status = server.wait_ready(wait_s)
    if status.state is not ServerState.READY:
        st.error(f"The embedded model is not available: {status.message}")
        return None
    live = server.endpoint()
    return replace(
        live,
        temperature=endpoint.temperature,
        top_p=endpoint.top_p,
        max_tokens=endpoint.max_tokens,
        seed=endpoint.seed,
    )
