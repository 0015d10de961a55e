"""Several real processes on one database, and a run killed with ``kill -9``.

Run as a module (``python -m tests.test_concurrency ARGS``) this file is the CLI with the fast
offline embedder, so the child processes need no sentence-transformers model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from storage import Store
from storage.run_verbs import run_is_stale

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str, start_at: float | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if start_at is not None:
        env["MORPHSCOPE_TEST_START_AT"] = repr(start_at)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_concurrency", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _clean_run(monkeypatch, args: tuple[str, ...], db: Path, *extra: str) -> None:
    """The same ``run`` command (plus ``extra``), in this process, alone and uninterrupted, into
    the new database ``db``: the reference that interrupted or concurrent runs must equal."""
    import functools

    from app.cli.main import main
    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    monkeypatch.setattr(
        workspace,
        "make_runner",
        functools.partial(workspace.make_runner, embedder_factory=BagOfWordsEmbedder),
    )
    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)
    assert not db.exists()
    at = args.index("--db")
    assert main([*args[:at], "--db", str(db), *args[at + 2 :], *extra]) == 0


def _cases_by_id(db: Path, run_id: str) -> dict[str, dict]:
    """Every column of a run's cases but the time it was recorded, by case id."""
    store = Store(db)
    try:
        return {c.id: {**c.to_row(), "created_at": None} for c in store.cases_for([run_id])}
    finally:
        store.close()


@pytest.fixture
def inputs(tmp_path):
    path = tmp_path / "inputs.csv"
    rows = [f"Review {i}: the food was {'good' if i % 2 else 'cold'}." for i in range(15)]
    path.write_text("text\n" + "\n".join(rows) + "\n")
    return path


def test_four_processes_create_one_new_database_at_once(tmp_path):
    """Each round, six processes import first, then open the same new file at the same instant.
    Without a lock around the migrations, some failed with "table endpoints already exists" or
    "database is locked"."""
    script = textwrap.dedent(
        """
        import sys, time
        from storage import Store
        time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
        store = Store(sys.argv[1])
        store.runs()
        store.close()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for round_ in range(2):
        db = tmp_path / f"new{round_}.db"
        start_at = time.time() + 2.0
        command = [sys.executable, "-c", script, str(db), repr(start_at)]
        procs = [
            subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, "\n".join(errors)
        assert Store(db).runs() == []


def test_a_database_opens_without_a_usable_lock_folder(tmp_path, monkeypatch):
    """The setup lock lives in the temp folder; where that cannot be written, opening still
    works (unguarded, as before) instead of failing."""
    import tempfile

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(blocked))
    store = Store(tmp_path / "x.db")
    assert store.runs() == []


def test_four_cli_runs_write_one_database_at_once(tmp_path, inputs, monkeypatch):
    """Four runs (different seeds, the same prompts: they race on the same cache rows) on one new
    database: every run completes, nothing says "database is locked", no case is ERROR, and each
    run's cases equal, case for case, those of the same run made alone in another database."""
    from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

    db = tmp_path / "shared.db"
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.005)) as server:
        start_at = time.time() + 3.0
        common = (
            "run", "--endpoint", server.base_url, "--model", "fake-model",
            "--task", "sentiment", "--relations", "si.identity,char.leet,char.random_replace",
            "--inputs", str(inputs), "--db", str(db), "--concurrency", "4", "--quiet", "--json",
        )  # fmt: skip
        procs = [_cli(*common, "--seed", str(seed), start_at=start_at) for seed in range(4)]
        results = [p.communicate(timeout=120) for p in procs]
        # Each seed alone in its own database: no answer cached by another run to reuse.
        for seed in range(4):
            _clean_run(monkeypatch, common, tmp_path / f"clean{seed}.db", "--seed", str(seed))
    run_ids = []
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
        assert json.loads(out)["cases"] == 45
        run_ids.append(json.loads(out)["run_id"])
    store = Store(db)
    runs = store.runs()
    assert len(runs) == 4 and {r.status for r in runs} == {"done"}
    assert store.cases_for(verdicts=["ERROR"]) == []
    for seed, run_id in enumerate(run_ids):
        shared = _cases_by_id(db, run_id)
        assert len(shared) == 45 and shared == _cases_by_id(tmp_path / f"clean{seed}.db", run_id)


def test_a_run_killed_with_kill_9_reads_interrupted_and_resumes(tmp_path, inputs, monkeypatch):
    """``kill -9`` leaves the run stored as "running"; its process is gone, so it reads
    "interrupted" (Probe offers to resume it), and the same command finishes it with the cases,
    case for case, of the same run never interrupted (in another database)."""
    from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

    db = tmp_path / "killed.db"
    args = (
        "run", "--endpoint", None, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity,sentence.uppercase", "--inputs", str(inputs),
        "--db", str(db), "--concurrency", "1", "--quiet", "--json",
    )  # fmt: skip
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.05)) as server:
        args = tuple(server.base_url if a is None else a for a in args)
        proc = _cli(*args)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.2)
            if db.exists() and any(r.n_cases for r in Store(db).runs()):
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        (run,) = Store(db).runs()
        assert 0 < run.n_cases < 30 and run.status == "interrupted"
        resumed = _cli(*args)
        out, err = resumed.communicate(timeout=120)
        clean = tmp_path / "clean.db"
        _clean_run(monkeypatch, args, clean)
    assert resumed.returncode == 0, err
    summary = json.loads(out)
    assert summary["run_id"] == run.id and summary["cases"] == 30
    assert Store(db).run(run.id).status == "done"
    resumed_cases = _cases_by_id(db, run.id)
    assert len(resumed_cases) == 30 and resumed_cases == _cases_by_id(clean, run.id)


def test_a_running_run_is_stale_without_a_live_owner_or_a_recent_heartbeat():
    import socket
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    recent = (now - timedelta(seconds=5)).isoformat(timespec="seconds")
    old = (now - timedelta(minutes=10)).isoformat(timespec="seconds")
    here = socket.gethostname()
    mine = {"status": "running", "owner": f"{here}:{os.getpid()}", "heartbeat_at": recent}
    assert not run_is_stale(mine)
    assert run_is_stale(mine | {"heartbeat_at": old})  # frozen, or a clock that stopped
    assert run_is_stale(mine | {"owner": f"{here}:999999999"})  # no such process
    assert not run_is_stale(mine | {"owner": "other-host:1"})  # elsewhere: the heartbeat decides
    assert run_is_stale(mine | {"owner": None, "heartbeat_at": None})  # from before heartbeats
    assert not run_is_stale(mine | {"status": "done", "heartbeat_at": old})


def _offline_cli() -> int:
    import functools

    from app.cli.main import main
    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    # make_runner binds its default embedder when defined: pass the fast one explicitly.
    workspace.make_runner = functools.partial(
        workspace.make_runner, embedder_factory=BagOfWordsEmbedder
    )
    workspace.default_embedder = BagOfWordsEmbedder  # `run` starts it first: no model process
    start_at = os.environ.get("MORPHSCOPE_TEST_START_AT")
    if start_at:
        time.sleep(max(0.0, float(start_at) - time.time()))
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(_offline_cli())
