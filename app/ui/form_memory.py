"""A form that keeps its choices across page switches and reloads.

Streamlit forgets a widget's value when a script run does not draw it (another page was shown),
and a reload starts a new session. So each remembered widget is seeded before it is drawn: from
its own state while the page is shown, else from a copy kept in the session (page switches), else
from the page's query parameters (reloads, shared links), else from the page's default. The
widget is then drawn without a default of its own, so the seed is the only source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

_KEPT = "_kept_"
_LIST_SEPARATOR = ","


def seed(key: str, default: Any, options: Sequence[Any] | None = None, *, in_url: bool = False):
    """Put the value the widget ``key`` should start with into the session (a valid option,
    or every item one for a list); call right before drawing the widget without a default."""
    if key in st.session_state and _valid(st.session_state[key], options):
        return
    for candidate in (
        st.session_state.get(_KEPT + key),
        _from_url(key, default) if in_url else None,
    ):
        if candidate is not None and _valid(candidate, options):
            st.session_state[key] = candidate
            return
    st.session_state[key] = default


def keep(key: str, *, in_url: bool = False) -> None:
    """After drawing the widget ``key``: remember its value for the next visit (and the URL)."""
    if key not in st.session_state:
        return
    value = st.session_state[key]
    st.session_state[_KEPT + key] = value
    if in_url:
        text = _LIST_SEPARATOR.join(map(str, value)) if isinstance(value, list) else str(value)
        if st.query_params.get(key) != text:
            st.query_params[key] = text


def _valid(value: Any, options: Sequence[Any] | None) -> bool:
    if options is None:
        return True
    if isinstance(value, list):
        return all(item in options for item in value)
    return value in options


def _from_url(key: str, default: Any) -> Any:
    text = st.query_params.get(key)
    if text is None:
        return None
    try:
        if isinstance(default, list):
            return [item for item in text.split(_LIST_SEPARATOR) if item]
        if isinstance(default, bool):
            return text == "True"
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        return None  # a hand-edited URL: fall back to the default
    return text
