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
# Inside app/, one package per stage of the data's path: inputs and clients feed the engine;
# analysis reads what the engine stored; reports and batch mode sit on both; the command line and
# the dashboard sit on top.
LAYERS = {
    "core": 0,
    "relations": 1,
    "storage": 1,
    "app": 2,  # app/__init__.py and app/settings.py
    "app.inputs": 3,
    "app.clients": 3,
    "app.engine": 4,
    "app.analysis": 4,
    "app.reports": 5,
    "app.batch": 5,
    "app.cli": 6,
    "app.ui": 7,
    "pages": 8,
}
SIDE_BY_SIDE_FORBIDDEN = {
    ("relations", "storage"),
    ("storage", "relations"),
    ("app.inputs", "app.clients"),
    ("app.clients", "app.inputs"),
    ("app.engine", "app.analysis"),
    ("app.analysis", "app.engine"),
    ("app.reports", "app.batch"),
    ("app.batch", "app.reports"),
}
APP_STAGES = ("inputs", "clients", "engine", "analysis", "reports", "batch", "cli", "ui")
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
    parts = module.split(".")
    if parts[0] == "app" and len(parts) > 1:
        if parts[1] == "__main__":
            return "app.cli"
        return f"app.{parts[1]}" if parts[1] in APP_STAGES else "app"
    top = parts[0]
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
        (
            "relations/x.py",
            "from app.inputs.tasks import Task\n",
            "relations imports app.inputs.tasks",
        ),
        ("storage/x.py", "import app.analysis.metrics\n", "storage imports app.analysis.metrics"),
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
        (
            "app/engine/x.py",
            "from app.analysis import metrics\n",
            "app.engine imports app.analysis",
        ),
        ("app/inputs/x.py", "def f():\n    from app.engine import runner\n", "app.inputs imports"),
        ("app/analysis/x.py", "import app.cli.main\n", "app.analysis imports app.cli.main"),
        ("app/engine/x.py", "from app.inputs.datasets import load_dataset\n", None),
    ],
)
def test_checker_catches_each_kind_of_violation(rel_path, source, expected):
    messages = [v.message for v in check_source(source, rel_path)]
    if expected is None:
        assert messages == []
    else:
        assert any(expected in m for m in messages), messages


# --- import loops and sizes -------------------------------------------------------------------

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
# The few that may be longer, each with its reason.
SIZE_EXCEPTIONS = {
    "storage/migrations.py::m001_initial": "the initial schema: one list of CREATE statements",
}


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """Module → the project modules it imports (lazy imports inside functions count too).

    ``from package import name`` is an edge to ``package.name`` when that is a module, else to
    ``package`` (whose ``__init__`` runs first either way).
    """
    sources = {module_name(p): p for p in files if p.name != "streamlit_app.py"}
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        edges = set()
        for node in ast.walk(tree):
            if id(node) in type_only:  # never runs, so never part of a loop
                continue
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in sources}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    package = module.split(".")[: -node.level or None]
                    if path.name == "__init__.py":
                        package = module.split(".")[: -(node.level - 1) or None]
                    base = ".".join(package + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    edges.add(target if target in sources else base)
        graph[module] = {e for e in edges if e in sources and e != module}
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                loops.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return loops


def test_no_import_loops_even_through_lazy_imports():
    assert import_loops(import_graph(project_files())) == []


def test_the_loop_finder_finds_a_loop():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_loops(graph) == [["a", "b", "c"]]
    assert import_loops({"a": {"b"}, "b": set()}) == []


def oversized(files: list[Path]) -> dict[str, int]:
    """Modules over MAX_MODULE_LINES and functions over MAX_FUNCTION_LINES, by name."""
    found = {}
    for path in files:
        rel = str(path.relative_to(ROOT))
        source = path.read_text(encoding="utf-8")
        if (n := len(source.splitlines())) > MAX_MODULE_LINES:
            found[rel] = n
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    found[f"{rel}::{node.name}"] = n
    return {k: n for k, n in found.items() if k not in SIZE_EXCEPTIONS}


def test_modules_and_functions_stay_small():
    assert oversized(project_files()) == {}
