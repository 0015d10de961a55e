"""Settings come from the environment when asked, not when a module is imported."""

from __future__ import annotations

import ast
from pathlib import Path

from core.settings import DEFAULT_DB, DEFAULT_STATE_DIR, DEFAULT_WORDNET_ROOT, settings

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_when_nothing_is_set(monkeypatch):
    for name in ("MORPHSCOPE_DB", "MORPHSCOPE_STATE_DIR", "MORPHSCOPE_AUTOSTART"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("MORPHSCOPE_WORDNET_DIR", raising=False)
    now = settings()
    assert now.db_path == DEFAULT_DB == Path("data/morphscope.db")
    assert now.state_dir == DEFAULT_STATE_DIR == Path("data")
    assert now.autostart is True
    assert now.wordnet_root == DEFAULT_WORDNET_ROOT == ROOT / "data" / "wordnet"


def test_a_variable_set_after_import_is_obeyed(monkeypatch, tmp_path):
    monkeypatch.setenv("MORPHSCOPE_DB", str(tmp_path / "x.db"))
    monkeypatch.setenv("MORPHSCOPE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MORPHSCOPE_AUTOSTART", "0")
    monkeypatch.setenv("MORPHSCOPE_WORDNET_DIR", str(tmp_path / "wn"))
    now = settings()
    assert now.db_path == tmp_path / "x.db"
    assert now.state_dir == tmp_path / "state"
    assert now.autostart is False
    assert now.wordnet_root == (tmp_path / "wn").resolve()


def test_an_empty_db_variable_means_the_default(monkeypatch):
    monkeypatch.setenv("MORPHSCOPE_DB", "")
    assert settings().db_path == DEFAULT_DB


def test_the_embedded_server_reads_its_state_dir_when_made(monkeypatch, tmp_path):
    from app.engine.model_server import EmbeddedServer

    monkeypatch.setenv("MORPHSCOPE_STATE_DIR", str(tmp_path))
    assert EmbeddedServer().state_file == tmp_path / "embedded_server.json"


def test_no_module_reads_a_morphscope_variable_but_the_settings():
    readers = []
    for package in ("core", "relations", "storage", "app", "pages"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "core" / "settings.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and str(node.value).startswith("MORPHSCOPE_"):
                    readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert readers == []
