"""Fixtures of the panel tests (render functions run alone with AppTest.from_function)."""

from __future__ import annotations

import pytest


@pytest.fixture
def db_path(tmp_path, monkeypatch):
    """A database path that the panels' own ``get_store()`` opens."""
    path = tmp_path / "panels.db"
    monkeypatch.setenv("MORPHSCOPE_DB", str(path))
    return path
