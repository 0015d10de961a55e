"""Reusable widgets: side-by-side diff, verdict badge, endpoint picker. Text is always escaped
(never raw HTML), and text from outside (model output, reasons, imported files) goes through
``inert`` before it reaches anything that renders Markdown."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import streamlit as st

from app.diffing import diff_html
from core.types import Endpoint

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


def page_link(page: str, label: str, icon: str, help: str | None = None) -> None:
    """A real link to another page of the app (it opens in a new tab on a middle click). A
    panel drawn outside the app's navigation (alone, in a test) says where to find it instead."""
    from streamlit.errors import StreamlitPageNotFoundError

    try:
        st.page_link(page, label=label, icon=icon, help=help)
    except StreamlitPageNotFoundError:
        st.caption(f"{label}: in the sidebar")


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
    """Two texts next to each other with word differences highlighted."""
    left_html, right_html = diff_html(left or "", right or "", for_markdown=True)
    col_left, col_right = st.columns(2)
    with col_left:
        st.markdown(f"**{inert(left_title, one_line=True)}**")
        st.markdown(f'<div style="{_BOX}">{left_html}</div>', unsafe_allow_html=True)
    with col_right:
        st.markdown(f"**{inert(right_title, one_line=True)}**")
        st.markdown(f'<div style="{_BOX}">{right_html}</div>', unsafe_allow_html=True)


def endpoint_choices(store) -> dict[str, Endpoint]:
    """The embedded model first (preselected), then the saved endpoints, by display name."""
    from app.embedded import get_server

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
    from app.embedded import ServerState, get_server

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
