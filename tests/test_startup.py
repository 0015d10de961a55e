"""Fast start: the listing commands import none of the heavy libraries.

`relations --json` and `transform` (a relation that needs no model) must answer well under
1.5 s. Wall-clock times are noisy on a shared machine, so these tests pin the cause instead:
which modules the command imports, read from ``python -X importtime`` in a fresh interpreter.
Before the lazy imports, `relations --json` imported openai, scipy, pandas (through
sqlite-utils) and NLTK (to check WordNet), about 4 s of work under load.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The libraries no listing command needs: the embedder's stack, the statistics stack, the
# dataframe library sqlite-utils would pull in, the model client, and NLTK (WordNet).
HEAVY = ("torch", "sentence_transformers", "scipy", "pandas", "openai", "nltk", "plotly")


def imported_modules(*args: str, db: Path) -> set[str]:
    """Top-level packages a fresh ``python -X importtime -m app ARGS --db DB`` imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "app", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    return names


def test_importtime_parser_sees_packages(tmp_path):
    """Guards the tests below: the parser must find packages the command does import."""
    names = imported_modules("relations", "--json", db=tmp_path / "m.db")
    assert {"app", "relations", "storage", "sqlite_utils", "json"} <= names


def test_relations_json_imports_no_heavy_library(tmp_path):
    names = imported_modules("relations", "--json", db=tmp_path / "m.db")
    assert not names & set(HEAVY), sorted(names & set(HEAVY))


@pytest.mark.parametrize("relation", ["char.leet", "sentence.identity"])
def test_transform_without_a_model_imports_no_heavy_library(tmp_path, relation):
    names = imported_modules(
        "transform", relation, "--text", "a happy movie", "--json", db=tmp_path / "m.db"
    )
    assert not names & set(HEAVY), sorted(names & set(HEAVY))


def test_pandas_still_imports_after_the_store():
    """Hiding pandas while sqlite-utils loads must not leave it unimportable."""
    code = "import storage, pandas, sys; print(type(sys.modules['pandas']).__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "module"


def test_the_cli_process_exits_without_collecting_its_modules(tmp_path):
    """Issue 11, whole-command overhead: after the command, exiting collected every object of
    the imported modules (about 0.2 s of CPU after a `run`, measured with the same imports:
    192 ms to exit, 27 ms with the objects frozen). ``python -m app`` freezes them before it
    exits; atexit handlers (which stop an embedded model server) still run — here one prints
    how many objects were frozen, so this pins the cause, not a time."""
    probe = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
        f"sys.argv = ['app', 'relations', '--json', '--db', {str(tmp_path / 'm.db')!r}]\n"
        "runpy.run_module('app', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.lstrip().startswith("[")  # the command's output is all there
    frozen = [line for line in done.stderr.splitlines() if line.startswith("frozen ")]
    assert frozen and int(frozen[0].split()[1]) > 10_000, done.stderr[-2000:]
