"""Real processes sharing one database, and runs stopped from outside: nothing committed is lost.

Issue 20, items 1-5. Each test runs real processes (the CLI with the fast offline embedder, as
``tests/test_concurrency.py`` starts it, and plain ``sqlite3`` readers) against the fake OpenAI
server of this process, whose answers are timed and counted:

1. a dashboard-like process with two stores, a CLI ``report`` and an outside reader beside it,
   then labels, then ``kill -9``: every committed label is still there;
2. ``delete-run`` of a run while its writer runs, beside another writer's finished run: the
   writer stops with one line and the database (the other run with it) stays;
3. the disk fills (``ulimit -f``) during a run on a new database: what was stored stays, and the
   rerun sends only what was never stored;
4. ``kill -9`` during a run: no answer older than a moment is sent again;
5. SIGTERM: the run ends as Ctrl-C ends it (interrupted, every answer kept) within 5 s.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer, echo_sentiment
from tests.triage_data import make_case, save_runs

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
RELATIONS = "sentence.uppercase,char.leet"  # every prompt of a run is distinct: one per call key


def _cli(*args: str, loading: bool = False, **popen) -> subprocess.Popen:
    """The CLI in a process of its own, with the fast offline embedder (``loading``: one whose
    model takes seconds to load, see ``LoadingEmbedder``)."""
    module = "tests.test_faults_processes" if loading else "tests.test_concurrency"
    popen.setdefault("env", ENV)
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


class LoadingEmbedder(BagOfWordsEmbedder):
    """Like the real embedder, its model loads for a while (``LOAD_S``; MiniLM takes 5-16 s)
    after ``load``, ``embed`` waits for it, and ``stop`` ends a load at once (the real one kills
    its process). Meanwhile the run's first batch of cases waits and answers keep arriving."""

    LOAD_S = 6.0

    def __init__(self) -> None:
        super().__init__()
        self.loaded_at: float | None = None
        self.stopped = threading.Event()

    def load(self) -> None:
        if self.loaded_at is None:
            self.loaded_at = time.monotonic() + self.LOAD_S

    def stop(self) -> None:
        self.stopped.set()

    def embed(self, texts):
        self.load()
        if self.stopped.wait(timeout=max(0.0, self.loaded_at - time.monotonic())):
            raise RuntimeError("the embedding model was stopped")
        return super().embed(texts)


def _loading_cli() -> int:
    """``python -m tests.test_faults_processes ARGS``: the CLI with one ``LoadingEmbedder``."""
    import functools

    from app.cli.main import main
    from app.engine import workspace

    embedder = LoadingEmbedder()
    embedder.LOAD_S = float(os.environ.get("TEST_EMBEDDER_LOAD_S", LoadingEmbedder.LOAD_S))
    workspace.make_runner = functools.partial(
        workspace.make_runner, embedder_factory=lambda: embedder
    )
    workspace.default_embedder = lambda: embedder
    return main(sys.argv[1:])


def _inputs(path: Path, n: int, word: str = "review") -> Path:
    rows = [f"{word.title()} {i}: the soup was {'good' if i % 2 else 'cold'}." for i in range(n)]
    path.write_text("text\n" + "\n".join(rows) + "\n")
    return path


def _run_args(server: FakeOpenAIServer, inputs: Path, db: Path, *extra: str) -> list[str]:
    return [
        "run", "--endpoint", server.base_url, "--model", "fake-model", "--task", "sentiment",
        "--relations", RELATIONS, "--inputs", str(inputs), "--db", str(db), "--quiet", "--json",
        *extra,
    ]  # fmt: skip


def _read(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """A query through a plain read-only connection of this process (no Store, no migrations)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    except sqlite3.OperationalError:  # not created yet
        return []
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:  # the file exists but its tables do not yet
        return []
    finally:
        conn.close()


def _count_calls(db: Path) -> int:
    rows = _read(db, "SELECT count(*) FROM calls") if db.exists() else []
    return rows[0][0] if rows else 0


def _integrity(db: Path) -> str:
    return _read(db, "PRAGMA integrity_check")[0][0]


class TimedAnswers:
    """The fake model's answers, each with the moment it was sent (its prompt is its call)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[tuple[float, str]] = []

    def __call__(self, messages: list[dict[str, str]]) -> str:
        with self.lock:
            self.sent.append((time.monotonic(), messages[-1]["content"]))
        return echo_sentiment(messages)

    def prompts(self, since: int = 0, before: float | None = None) -> list[str]:
        with self.lock:
            return [p for t, p in self.sent[since:] if before is None or t < before]

    def __len__(self) -> int:
        with self.lock:
            return len(self.sent)


def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert "Traceback" not in err, err
    return lines[-1] if lines else ""


# ------------------------------------------------------------------ 1: labels survive


DASHBOARD = textwrap.dedent(
    """
    import sys, time
    from storage import Store

    db, case_ids = sys.argv[1], sys.argv[2].split(",")
    page = Store(db)
    page.runs()  # a page's store: its connection reads, and holds its lock
    other = Store(db)  # a second page opens its own store beside it
    other.runs()
    print("open", flush=True)
    sys.stdin.readline()  # a CLI command and an outside reader use the database meanwhile
    for i, case_id in enumerate(case_ids):
        (page if i % 2 else other).add_label(case_id, "confirmed", labeler="pat")
        print("labelled", case_id, flush=True)  # committed
    print("done", flush=True)
    time.sleep(120)  # killed here
    """
)


def test_labels_committed_beside_a_cli_command_and_a_reader_survive_kill_9(tmp_path):
    """Issue 20, item 1: opening a store read the database's header with ``open()``/``close()``
    while the same process held SQLite connections to it, which drops every POSIX lock that
    process holds. A ``report`` then took itself for the last connection and deleted the WAL
    the dashboard kept committing into: labels committed after it vanished at the next crash.
    """
    db = tmp_path / "shared.db"
    store = Store(db)
    cases = [make_case(f"case-{i:02d}", index=i) for i in range(13)]
    save_runs(store, cases)
    store.close()
    case_ids = [case.id for case in cases]

    dashboard = subprocess.Popen(
        [sys.executable, "-c", DASHBOARD, str(db), ",".join(case_ids)],
        cwd=ROOT,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert dashboard.stdout.readline().strip() == "open", dashboard.stderr.read()
        report = subprocess.run(
            [sys.executable, "-m", "app", "report", "--db", str(db), "--json"],
            cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert report.returncode == 0, report.stderr
        reader = subprocess.run(
            [sys.executable, "-c", "import sqlite3, sys; "
             "print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM cases').fetchone()[0])",
             str(db)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert reader.stdout.strip() == "13", reader.stderr
        dashboard.stdin.write("go\n")
        dashboard.stdin.flush()
        committed = []
        for line in dashboard.stdout:
            if line.startswith("labelled "):
                committed.append(line.split()[1])
            if line.strip() == "done":
                break
        assert committed == case_ids, dashboard.stderr.read()
    finally:
        dashboard.kill()  # SIGKILL: no clean close, no checkpoint
        dashboard.wait(timeout=30)

    labelled = {row[0] for row in _read(db, "SELECT case_id FROM labels")}
    assert labelled == set(case_ids)
    assert _integrity(db) == "ok"


# ------------------------------------------------------------------ 2: delete-run


def test_delete_run_beside_its_writer_stops_it_and_keeps_the_database(tmp_path):
    """Issue 20, item 2: writer A starts on a new database, writer B finishes its run in it,
    then ``delete-run A``. A failed with "FOREIGN KEY constraint failed" and its clean-up removed
    the file it had created, B's finished run with it. Now A stops with one line, exit 1, and
    writes nothing more; the database keeps B's run."""
    db = tmp_path / "new.db"
    gate = threading.Event()
    answered_alpha = 0
    lock = threading.Lock()

    def model(messages):
        nonlocal answered_alpha
        if "Alpha" in messages[-1]["content"]:
            with lock:
                answered_alpha += 1
                held = answered_alpha > 12
            if held:  # A's later calls wait until its run has been deleted
                gate.wait(timeout=60)
        return echo_sentiment(messages)

    with FakeOpenAIServer(FakeBehaviour(responder=model)) as server:
        a_inputs = _inputs(tmp_path / "a.csv", 30, "alpha")
        writer_a = _cli(*_run_args(server, a_inputs, db, "--concurrency", "2"))
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not _read(db, "SELECT id FROM cases"):
                time.sleep(0.1)
            (run_a,) = _read(db, "SELECT id FROM runs")[0]
            b_inputs = _inputs(tmp_path / "b.csv", 6, "beta")
            writer_b = _cli(*_run_args(server, b_inputs, db, "--concurrency", "4"))
            out_b, err_b = writer_b.communicate(timeout=120)
            assert writer_b.returncode == 0, err_b
            run_b = json.loads(out_b)["run_id"]
            delete = _cli("delete-run", run_a, "--db", str(db))
            _, err = delete.communicate(timeout=120)
            assert delete.returncode == 0, err
        finally:
            gate.set()
        _, err_a = writer_a.communicate(timeout=120)

    assert writer_a.returncode == 1, err_a
    assert _one_error_line(err_a) == (
        f"error: run {run_a} was deleted while it ran; nothing more written"
    )
    assert db.exists()
    assert _read(db, "SELECT id, status FROM runs") == [(run_b, "done")]
    assert _read(db, "SELECT count(*) FROM cases WHERE run_id = ?", (run_a,)) == [(0,)]
    assert _read(db, "SELECT count(*) FROM cases WHERE run_id = ?", (run_b,))[0][0] == 12
    assert _integrity(db) == "ok"


# ------------------------------------------------------------------ 3: disk full


def _file_size_limit(kib: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))

    return limit


def test_a_full_disk_keeps_what_was_stored_and_the_rerun_sends_only_the_rest(tmp_path):
    """Issue 20, item 3: ``ulimit -f 700`` and a 720-call run on a new database. Every call was
    made, then "disk I/O error", and the new file was removed: the rerun paid for all 720 again.
    Now the run stops when the disk is full, says so with the number of answers kept, and the
    rerun sends only the calls whose answers were never stored (the cases stored already need
    none)."""
    db = tmp_path / "full" / "runs.db"
    inputs = _inputs(tmp_path / "in.csv", 240)
    answers = TimedAnswers()
    with FakeOpenAIServer(FakeBehaviour(responder=answers)) as server:
        args = _run_args(server, inputs, db, "--concurrency", "8")
        full = _cli(*args, preexec_fn=_file_size_limit(700))
        _, err = full.communicate(timeout=300)
        first_sent = len(answers)

        assert full.returncode == 1, err
        line = _one_error_line(err)
        found = re.fullmatch(
            r"error: the disk is full: .*; (\d+) answers kept, rerun to finish", line
        )
        assert found, line
        assert db.exists()
        kept = _count_calls(db)
        # Calls still in flight when the disk filled were sent but not kept. There may be none:
        # a loaded machine can starve the event loop while the batch that fills the disk is
        # judged, and then every call sent was also stored.
        assert 0 < kept == int(found.group(1)) <= first_sent
        assert _integrity(db) == "ok"
        stored = {
            json.loads(row[0])[-1]["content"] for row in _read(db, "SELECT messages FROM calls")
        }

        rerun = _cli(*args)
        out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    summary = json.loads(out)
    resent = answers.prompts(since=first_sent)
    assert summary["status"] == "done" and "ERROR" not in summary["verdicts"]
    assert summary["calls_made"] > 0  # the disk filled mid-run: the rest was still to send
    assert len(resent) == summary["calls_made"] and not stored & set(resent)
    assert _count_calls(db) == kept + summary["calls_made"]


# ------------------------------------------------------------------ 4: kill -9


def _wait_for_a_flush(db: Path, timeout_s: float = 60.0) -> float:
    """The moment the run's cached answers were seen to grow, after they first existed."""
    deadline = time.monotonic() + timeout_s
    seen = 0
    while time.monotonic() < deadline:
        count = _count_calls(db)
        if seen and count > seen:
            return time.monotonic()
        seen = count or seen
        time.sleep(0.01)
    raise AssertionError("the run stored no answers")


def test_kill_9_loses_at_most_the_calls_in_flight_and_a_moment_of_answers(tmp_path):
    """Issue 20, item 4: answers were written with the cases, about once a second, so ``kill -9``
    sent 25-73 answered calls again. Now answers reach the store within a tenth of a second:
    killed 0.85 s after the store was seen to grow, the run loses no answer older than 0.4 s
    (slack for a loaded machine), and the rerun re-sends at most the calls in flight plus
    those last answers."""
    db = tmp_path / "killed.db"
    inputs = _inputs(tmp_path / "in.csv", 200)
    answers = TimedAnswers()
    concurrency = 4
    behaviour = FakeBehaviour(responder=answers, latency_s=0.02)
    with FakeOpenAIServer(behaviour) as server:
        args = _run_args(server, inputs, db, "--concurrency", str(concurrency))
        run = _cli(*args, loading=True)
        flushed_at = _wait_for_a_flush(db)
        time.sleep(0.85)
        killed_at = time.monotonic()
        os.kill(run.pid, signal.SIGKILL)
        run.communicate(timeout=30)
        answered = answers.prompts()
        first_sent = len(answers)
        rerun = _cli(*args)
        _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    resent = set(answers.prompts(since=first_sent))
    old = set(answers.prompts(before=killed_at - 0.4)) & resent
    assert not old, f"{len(old)} answers older than 0.4 s were sent again"
    window = [t for t, _ in answers.sent[:first_sent] if t > flushed_at]
    rate = len(window) / max(killed_at - flushed_at, 0.1)
    assert len(resent & set(answered)) <= concurrency + 0.4 * rate + 2


# ------------------------------------------------------------------ 5: SIGTERM


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path):
    """Issue 20, item 5: SIGTERM (systemd, ``docker stop``, CI) killed the process at once, and
    the run stayed "running" with its last second of answers lost. Now it acts as Ctrl-C: the
    run is stored as interrupted, every answer received is kept, one line, exit 1, without
    waiting for the embedding model (it never finishes loading here, so a run that waited for it
    would never end); the rerun sends again at most the calls that were in flight."""
    db = tmp_path / "term.db"
    inputs = _inputs(tmp_path / "in.csv", 200)
    answers = TimedAnswers()
    concurrency = 4
    with FakeOpenAIServer(FakeBehaviour(responder=answers, latency_s=0.02)) as server:
        args = _run_args(server, inputs, db, "--concurrency", str(concurrency))
        never_loads = {**ENV, "TEST_EMBEDDER_LOAD_S": "3600"}
        run = _cli(*args, loading=True, env=never_loads)
        _wait_for_a_flush(db)
        time.sleep(0.3)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=120)  # a guard against a hang, not a speed limit
        answered = set(answers.prompts())
        first_sent = len(answers)
        assert run.returncode == 1, err
        assert _read(db, "SELECT count(*) FROM cases") == [(0,)]  # nothing was judged
        assert _one_error_line(err).startswith("terminated: ")
        assert len([line for line in err.splitlines() if line.strip()]) == 1, err
        assert _read(db, "SELECT status FROM runs") == [("interrupted",)]
        rerun = _cli(*args)
        _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    resent = set(answers.prompts(since=first_sent)) & answered
    assert len(resent) <= concurrency


if __name__ == "__main__":
    sys.exit(_loading_cli())
