"""AppTest helpers: every page is tested through the entrypoint against a temporary DB."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    st.cache_data.clear()
    yield
    st.cache_data.clear()


@pytest.fixture
def app_db(tmp_path, monkeypatch):
    path = tmp_path / "page.db"
    monkeypatch.setenv("MORPHSCOPE_DB", str(path))
    return path


APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(page)
    at.run()
    return at
