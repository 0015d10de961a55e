"""The layering of the code base, checked on every test run.

pages → app/ui → app → relations / storage → core. A module may import its own layer and the
layers below it, never one above. Only storage/ talks to SQLite; only app/ui/, pages/ and the
entrypoint import streamlit; page scripts stay thin; relation modules stay small.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_PAGE_LINES = 150
MAX_RELATION_MODULE_LINES = 600

# Lower number = lower layer. Relations and storage sit side by side and may not import each
# other: relations get a store passed in when they need one.
LAYERS = {"core": 0, "relations": 1, "storage": 1, "app": 2, "app.ui": 3, "pages": 4}
SIDE_BY_SIDE_FORBIDDEN = {("relations", "storage"), ("storage", "relations")}
SQLITE_MODULES = {"sqlite3", "sqlite_utils"}
UI_MODULES = {"streamlit"}
# Talking to the database directly: using a handle (`store.db.atomic()`, `store.conn.execute`)
# or calling a query method (`store.query(sql)`).
RAW_DB_HANDLES = {"db", "_db", "conn", "_conn"}
RAW_DB_CALLS = {"query", "_query", "_write", "executemany", "executescript"}
CHECKED_PACKAGES = ("core", "relations", "storage", "app", "pages")


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def layer_of(module: str) -> str | None:
    """The layer a dotted module name (or a file's module name) belongs to."""
    if module == "app.ui" or module.startswith("app.ui."):
        return "app.ui"
    top = module.split(".", 1)[0]
    return top if top in LAYERS else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.AST, own_module: str) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (lazy imports inside functions count too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the file's package
                package = own_module.split(".")[: -node.level or None]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append((node.lineno, base))
            # `from app import ui` imports app.ui
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if base]
    return found


def check_source(source: str, rel_path: str) -> list[Violation]:
    """All layering violations of one file (``rel_path`` relative to the repository root)."""
    own = module_name(ROOT / rel_path) if rel_path != "streamlit_app.py" else "pages"
    own_layer = layer_of(own) or ("pages" if rel_path == "streamlit_app.py" else None)
    tree = ast.parse(source)
    violations: list[Violation] = []
    for line, name in imported_modules(tree, own):
        top = name.split(".", 1)[0]
        target = layer_of(name)
        if own_layer and target and LAYERS[target] > LAYERS[own_layer]:
            violations.append(Violation(rel_path, line, f"{own_layer} imports {name} ({target})"))
        if own_layer and target and (own_layer, target) in SIDE_BY_SIDE_FORBIDDEN:
            violations.append(Violation(rel_path, line, f"{own_layer} imports {name} ({target})"))
        if top in SQLITE_MODULES and own_layer != "storage":
            violations.append(Violation(rel_path, line, f"only storage/ may import {top}"))
        if top in UI_MODULES and own_layer not in ("app.ui", "pages"):
            violations.append(Violation(rel_path, line, f"only app/ui/ and pages/ import {top}"))
    if own_layer != "storage":
        violations += raw_database_access(tree, rel_path)
    return violations


def raw_database_access(tree: ast.AST, rel_path: str) -> list[Violation]:
    found = []
    for node in ast.walk(tree):
        handle = (
            isinstance(node, ast.Attribute | ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in RAW_DB_HANDLES
        )
        if handle:
            found.append(
                Violation(rel_path, node.lineno, f"raw database access `.{node.value.attr}`")
            )
        call = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RAW_DB_CALLS
        )
        if call:
            found.append(
                Violation(rel_path, node.lineno, f"raw database access `.{node.func.attr}`")
            )
    return found


def project_files() -> list[Path]:
    files = [ROOT / "streamlit_app.py"]
    for package in CHECKED_PACKAGES:
        files += sorted((ROOT / package).rglob("*.py"))
    return files


def test_layers_import_only_downwards_and_only_storage_talks_to_sqlite():
    violations = [
        str(v)
        for path in project_files()
        for v in check_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert violations == [], "\n".join(violations)


def test_page_scripts_are_thin():
    pages = [ROOT / "streamlit_app.py", *sorted((ROOT / "pages").glob("*.py"))]
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in pages
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PAGE_LINES
    }
    assert too_long == {}


def test_relation_modules_are_small():
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "relations").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_RELATION_MODULE_LINES
    }
    assert too_long == {}


# The checker itself must be able to fail: each rule is shown a file that breaks it.
@pytest.mark.parametrize(
    ("rel_path", "source", "expected"),
    [
        ("relations/x.py", "from app.tasks import Task\n", "relations imports app.tasks"),
        ("storage/x.py", "import app.metrics\n", "storage imports app.metrics"),
        ("app/x.py", "def f():\n    from app.ui import data\n", "app imports app.ui"),
        ("core/x.py", "from storage import Store\n", "core imports storage"),
        ("relations/x.py", "from storage.store import Store\n", "relations imports storage"),
        ("app/x.py", "import sqlite3\n", "only storage/ may import sqlite3"),
        ("pages/x.py", "from sqlite_utils import Database\n", "only storage/ may import"),
        ("app/x.py", "import streamlit as st\n", "only app/ui/ and pages/ import streamlit"),
        ("app/x.py", "rows = store.query('SELECT 1')\n", "raw database access `.query`"),
        ("app/ui/x.py", "with store.db.atomic():\n    pass\n", "raw database access `.db`"),
        ("app/x.py", "store._write()\n", "raw database access `._write`"),
        ("app/x.py", "store.conn.execute('DELETE FROM cases')\n", "raw database access `.conn`"),
        ("app/x.py", "rows = store._db['cases'].rows\n", "raw database access `._db`"),
        ("app/x.py", "path = args.db\n", None),
        ("app/ui/x.py", "from .data import get_store\n", None),
        ("app/x.py", "from .ui import data\n", "app imports app.ui"),
    ],
)
def test_checker_catches_each_kind_of_violation(rel_path, source, expected):
    messages = [v.message for v in check_source(source, rel_path)]
    if expected is None:
        assert messages == []
    else:
        assert any(expected in m for m in messages), messages
