"""A run stopped anywhere and resumed equals a run never stopped; a locked database loses nothing.

Issue 21, items 2 and 3. Every check here is against an *uninterrupted* run of the same config
into another database, never against the run itself:

- the cases of the resumed run (ids, inputs, prompts, outputs, verdicts, values, reasons) are
  those of the uninterrupted run, column for column;
- the resume sends exactly the calls the stopped run did not store, and the stopped run lost no
  answer it had received (only the calls in flight are sent twice; a cancelled run drops its
  calls in flight, so at most that many answers).

The run mixes an LLM-prompted relation (its rewrites come from a second fake server, the
transformation endpoint), a multi-input relation (partner and companion calls), ``si.identity``
(the same prompt twice) and rule relations. Runs are stopped at points chosen by counting, never
by sleeping: ``kill -9`` of a real CLI process while its rewrites are being made, while it sends
(the model has answered N calls and holds the rest), while it judges (its embedder blocks on the
first answers it is asked to embed, and answers keep coming and must be stored meanwhile), and
inside the transaction that writes a batch of cases (the process kills itself before the
commit); and the runner's cancel event, in this process, at the same four points.

Last, forced contention: another process holds ``BEGIN IMMEDIATE`` on the database as the
runner, whose connection waits only 50 ms for a lock, stores answers, vectors, cases and the
run's end. The busy retry must absorb it: no ERROR case, nothing missing from the call cache,
the same cases as an uncontended run.

Run as a module (``python -m tests.test_crash_resume ARGS``) this file is the CLI with the fast
offline embedder and the test hooks named by ``JUDGING_BLOCKS_ENV`` and ``KILL_IN_WRITE_ENV``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.engine.embedder import EmbeddingCache
from app.engine.run_setup import samples_from_file
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer
from tests.golden.build_engine1_fixture import rewritten, text_to_rewrite

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TASK = "sentiment_score"
# LLM-prompted, multi-input (a partner, two companion calls), the same prompt twice, rule-based.
RELATIONS = ("si.paraphrase", "multi.pairwise_order", "si.identity", "char.leet", "word.negation")
SEED = 7
N_INPUTS = 24
CONCURRENCY = 4
# Rewrites in flight at most: the runner makes follow-ups on a pool of 8 threads.
IN_FLIGHT_MOST = {"model": CONCURRENCY, "rewriter": 8}
# The child process's hooks: a file it creates when its embedder first blocks on an answer; the
# number of stored calls from which a write of cases kills the process before it commits.
JUDGING_BLOCKS_ENV = "MORPHSCOPE_TEST_JUDGING_BLOCKS"
KILL_IN_WRITE_ENV = "MORPHSCOPE_TEST_KILL_IN_WRITE"
ANSWER_MARK = "(answer to prompt"


def model_answer(prompt: str) -> str:
    """The model's answer: a score and a tag, both a function of the exact prompt."""
    digest = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    return f"0.{10 + digest % 90} {ANSWER_MARK} {digest % 10**8:08d})"


class Switchboard:
    """One fake server's model, counted: each prompt it received and each it answered, in order.

    ``hold_after(n)``: the calls after the first ``n`` answers wait, in flight, until the limit
    is raised or removed (``hold_after(None)``). ``on_answer(n)`` is called as the n-th answer
    leaves.
    """

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.received: list[str] = []
            self.answered: list[str] = []
            self.tickets = 0
            self.answer_limit: int | None = None
            self.on_answer: Callable[[int], None] | None = None
            self.lock.notify_all()

    def hold_after(self, answers: int | None) -> None:
        with self.lock:
            self.answer_limit = answers
            self.lock.notify_all()

    def __call__(self, messages: list[dict[str, str]]) -> str:
        prompt = messages[-1]["content"]
        with self.lock:
            self.received.append(prompt)
            ticket, self.tickets = self.tickets, self.tickets + 1
            self.lock.wait_for(
                lambda: self.answer_limit is None or ticket < self.answer_limit, timeout=60
            )
        text = text_to_rewrite(prompt)
        answer = model_answer(prompt) if text is None else rewritten(text)
        with self.lock:
            self.answered.append(prompt)
            count = len(self.answered)
            hook = self.on_answer
        if hook is not None:
            hook(count)
        return answer

    def snapshot(self) -> tuple[Counter, Counter]:
        """(received, answered) so far, as multisets of prompts."""
        with self.lock:
            return Counter(self.received), Counter(self.answered)

    def answered_count(self) -> int:
        with self.lock:
            return len(self.answered)


@dataclass
class Servers:
    model: FakeOpenAIServer
    rewriter: FakeOpenAIServer
    model_calls: Switchboard
    rewriter_calls: Switchboard

    def name_of(self, base_url: str) -> str:
        return "model" if base_url == self.model.base_url.rstrip("/") else "rewriter"

    def reset(self) -> None:
        self.model_calls.reset()
        self.rewriter_calls.reset()

    def release(self) -> None:
        self.model_calls.hold_after(None)
        self.rewriter_calls.hold_after(None)

    def snapshot(self) -> dict[str, tuple[Counter, Counter]]:
        return {"model": self.model_calls.snapshot(), "rewriter": self.rewriter_calls.snapshot()}


@pytest.fixture(scope="module")
def servers():
    model_calls, rewriter_calls = Switchboard(), Switchboard()
    # The transformation endpoint answers slowly, so planning takes a while (as it does).
    with (
        FakeOpenAIServer(FakeBehaviour(responder=model_calls)) as model,
        FakeOpenAIServer(FakeBehaviour(responder=rewriter_calls, latency_s=0.01)) as rewriter,
    ):
        servers = Servers(model, rewriter, model_calls, rewriter_calls)
        yield servers
        servers.release()


@pytest.fixture(autouse=True)
def _fresh_switchboards(request):
    if "servers" in request.fixturenames:
        request.getfixturevalue("servers").reset()
    yield
    if "servers" in request.fixturenames:
        request.getfixturevalue("servers").release()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("inputs") / "reviews.csv"
    words = ("good", "cold", "great", "slow", "fine", "bland")
    rows = [f"Review {i}: the soup was {words[i % len(words)]} and the bread {i % 5}." for i in range(N_INPUTS)]  # fmt: skip
    path.write_text("text\n" + "\n".join(rows) + "\n")
    return path


# ------------------------------------------------------------------ reading a database


def _connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def _cases(db: Path) -> dict[str, dict]:
    """Every stored case by id, every column but when it was written."""
    with contextlib.closing(_connect(db)) as conn:
        rows = conn.execute("SELECT * FROM cases").fetchall()
    return {row["id"]: {k: v for k, v in dict(row).items() if k != "created_at"} for row in rows}


def _stored_calls(db: Path, servers: Servers) -> dict[str, Counter]:
    """The prompts of the call cache, by server ("model", "rewriter"); none before it exists."""
    found: dict[str, Counter] = {"model": Counter(), "rewriter": Counter()}
    if not db.exists():
        return found
    try:
        with contextlib.closing(_connect(db)) as conn:
            rows = conn.execute("SELECT base_url, messages FROM calls").fetchall()
    except sqlite3.OperationalError:  # created, its tables not yet
        return found
    for base_url, messages in rows:
        found[servers.name_of(base_url)][json.loads(messages)[-1]["content"]] += 1
    return found


def _runs(db: Path) -> list[tuple[str, str]]:
    with contextlib.closing(_connect(db)) as conn:
        return [tuple(row) for row in conn.execute("SELECT id, status FROM runs")]


def _wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


@dataclass
class Reference:
    """The uninterrupted run: its id, cases, and the calls each server received for it."""

    run_id: str
    cases: dict[str, dict]
    calls: dict[str, Counter]

    @property
    def stored_calls(self) -> int:
        return sum(sum(c.values()) for c in self.calls.values())


def check_resumed_as_never_stopped(
    db: Path,
    reference: Reference,
    servers: Servers,
    first: dict[str, tuple[Counter, Counter]],
    stored_first: dict[str, Counter],
    resumed: dict[str, tuple[Counter, Counter]],
    *,
    lost_most: dict[str, int] | None = None,
) -> None:
    """The resumed run is the uninterrupted run, case for case, and cost only what was missing.

    ``first``/``resumed``: (received, answered) per server by the stopped run and the resume;
    ``stored_first``: the call cache after the stop. ``lost_most``: how many answers of each
    server the stopped run may have received and not stored (a cancelled run drops its calls in
    flight; none after ``kill -9`` here, where the test waits until every answer is stored)."""
    assert _runs(db) == [(reference.run_id, "done")]
    cases = _cases(db)
    assert set(cases) == set(reference.cases)
    for case_id, expected in reference.cases.items():
        assert cases[case_id] == expected, case_id
    assert _stored_calls(db, servers) == reference.calls  # each call's answer, once
    for name in ("model", "rewriter"):
        received_first, answered_first = first[name]
        stored = stored_first[name]
        assert stored <= answered_first, f"{name}: stored answers the server never gave"
        lost = answered_first - stored
        assert lost.total() <= (lost_most or {}).get(name, 0), (
            f"{name}: {lost.total()} answers received, not stored"
        )
        # Every call of the uninterrupted run is sent once, by one process or the other, but
        # the calls in flight when the run stopped. Counted over both: a call that a cancelled
        # run gave up on may reach the server after the resume has started.
        sent_twice = (received_first + resumed[name][0]) - reference.calls[name]
        assert sent_twice.total() <= IN_FLIGHT_MOST[name], (
            f"{name}: {sent_twice.total()} calls sent twice"
        )
    with contextlib.closing(_connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# ------------------------------------------------------------------ CLI processes


def _run_args(servers: Servers, inputs: Path, db: Path) -> list[str]:
    return [
        "run", "--endpoint", servers.model.base_url, "--model", "fake-model", "--task", TASK,
        "--relations", ",".join(RELATIONS), "--inputs", str(inputs), "--db", str(db),
        "--transformation-endpoint", servers.rewriter.base_url,
        "--transformation-model", "fake-model", "--seed", str(SEED),
        "--concurrency", str(CONCURRENCY), "--quiet", "--json",
    ]  # fmt: skip


def _cli(args: list[str], **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_crash_resume", *args],
        cwd=ROOT,
        env={**ENV, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    return json.loads(out)


@pytest.fixture(scope="module")
def cli_reference(servers, inputs, tmp_path_factory) -> Reference:
    """The CLI's run never stopped, into a database of its own."""
    servers.reset()
    db = tmp_path_factory.mktemp("reference") / "clean.db"
    summary = _finish(_cli(_run_args(servers, inputs, db)))
    calls = {name: received for name, (received, _) in servers.snapshot().items()}
    assert calls == _stored_calls(db, servers)  # each call sent once, each answer stored
    assert summary["status"] == "done" and "ERROR" not in summary["verdicts"]
    assert {"PASS", "FAIL", "SKIP"} <= set(summary["verdicts"])
    cases = _cases(db)
    assert len(cases) == summary["cases"] > 100
    return Reference(summary["run_id"], cases, calls)


def _kill_and_resume(
    proc: subprocess.Popen, servers: Servers, inputs: Path, db: Path, reference: Reference
) -> None:
    """SIGKILL the run (unless it died already), then resume it with a plain CLI run."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    first = servers.snapshot()
    stored_first = _stored_calls(db, servers)
    # Its process is gone: a run it had started reads "interrupted" (planning had not stored it).
    with contextlib.closing(Store(db)) as store:
        assert {run.status for run in store.runs()} <= {"interrupted"}
    assert len(_cases(db)) < len(reference.cases)
    servers.release()  # the calls held in flight are answered to a dead process
    _wait_until(
        lambda: all(sum(a.values()) == sum(r.values()) for r, a in servers.snapshot().values()),
        "the held calls were answered",
    )
    servers.reset()
    summary = _finish(_cli(_run_args(servers, inputs, db)))
    assert summary["run_id"] == reference.run_id
    check_resumed_as_never_stopped(db, reference, servers, first, stored_first, servers.snapshot())


def test_kill_9_while_rewrites_are_made_resumes_as_never_stopped(
    servers, inputs, cli_reference, tmp_path
):
    """Killed while planning: 10 rewrites answered and stored, the others in flight."""
    db = tmp_path / "planning.db"
    servers.rewriter_calls.hold_after(10)
    proc = _cli(_run_args(servers, inputs, db))
    try:
        _wait_until(
            lambda: _stored_calls(db, servers)["rewriter"].total() == 10, "10 rewrites stored"
        )
        assert servers.model_calls.answered_count() == 0  # still planning
    finally:
        _kill_and_resume(proc, servers, inputs, db, cli_reference)


def test_kill_9_while_sending_resumes_as_never_stopped(servers, inputs, cli_reference, tmp_path):
    """Killed while sending: 60 answers received and stored, the next calls in flight."""
    db = tmp_path / "sending.db"
    servers.model_calls.hold_after(60)
    proc = _cli(_run_args(servers, inputs, db))
    try:
        _wait_until(lambda: _stored_calls(db, servers)["model"].total() == 60, "60 answers stored")
    finally:
        _kill_and_resume(proc, servers, inputs, db, cli_reference)


def test_kill_9_while_judging_resumes_as_never_stopped(servers, inputs, cli_reference, tmp_path):
    """Killed while judging: the embedder blocks on the first answers it is asked to embed
    (the model holds its calls after 60 answers until then); the model then gives 60 answers
    more and holds the rest, and those answers are stored while the cases wait for the
    embedder and calls are still in flight."""
    db = tmp_path / "judging.db"
    blocked = tmp_path / "embedder-blocked"
    servers.model_calls.hold_after(60)
    proc = _cli(_run_args(servers, inputs, db), **{JUDGING_BLOCKS_ENV: str(blocked)})
    try:
        _wait_until(blocked.exists, "the evaluator blocked")
        servers.model_calls.hold_after(120)
        _wait_until(
            lambda: _stored_calls(db, servers)["model"].total() == 120,
            "120 answers were stored, the evaluator still blocked",
        )
    finally:
        _kill_and_resume(proc, servers, inputs, db, cli_reference)


def test_kill_9_inside_a_write_of_cases_resumes_without_a_call(
    servers, inputs, cli_reference, tmp_path
):
    """Killed inside the transaction that writes a batch of cases, before its commit (the process
    kills itself there, once every answer is stored): that batch is not in the database, and the
    resume makes those cases again from the cache."""
    db = tmp_path / "writing.db"
    proc = _cli(
        _run_args(servers, inputs, db), **{KILL_IN_WRITE_ENV: str(cli_reference.stored_calls)}
    )
    try:
        proc.wait(timeout=60)  # it kills itself
    finally:
        _kill_and_resume(proc, servers, inputs, db, cli_reference)
    assert servers.model_calls.snapshot()[0].total() == 0


class _JudgingBlocksEmbedder(BagOfWordsEmbedder):
    """Blocks for good on the first batch that holds a model answer (inputs, which the validity
    gate embeds while planning, go through), after creating ``marker``."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker

    def embed(self, texts):
        if any(ANSWER_MARK in text for text in texts):
            self.marker.touch()
            threading.Event().wait()  # until killed
        return super().embed(texts)


def _kill_inside_case_writes(calls_stored: int) -> None:
    """From the first write of cases made when ``calls_stored`` calls are in the cache, the
    process kills itself inside the transaction, its rows written and not committed."""
    from storage import store as store_module

    real_write = store_module.Store._write
    real_record = store_module.Store.record_cases
    dying = threading.local()

    @contextlib.contextmanager
    def write(self):
        with real_write(self):
            yield
            if getattr(dying, "now", False):
                os.kill(os.getpid(), signal.SIGKILL)

    def record_cases(self, cases):
        cases = list(cases)
        dying.now = bool(cases) and self.count_calls() >= calls_stored
        try:
            return real_record(self, cases)
        finally:
            dying.now = False

    store_module.Store._write = write
    store_module.Store.record_cases = record_cases


def _child_cli() -> int:
    """``python -m tests.test_crash_resume ARGS``: the CLI with the offline embedder and hooks."""
    import functools

    from app.cli.main import main
    from app.engine import workspace

    blocks = os.environ.get(JUDGING_BLOCKS_ENV)
    embedder = _JudgingBlocksEmbedder(Path(blocks)) if blocks else BagOfWordsEmbedder()
    workspace.make_runner = functools.partial(
        workspace.make_runner, embedder_factory=lambda: embedder
    )
    workspace.default_embedder = lambda: embedder
    if os.environ.get(KILL_IN_WRITE_ENV):
        _kill_inside_case_writes(int(os.environ[KILL_IN_WRITE_ENV]))
    return main(sys.argv[1:])


# ------------------------------------------------------------------ cancel, in this process


def _config(servers: Servers) -> RunConfig:
    def endpoint(name: str, server: FakeOpenAIServer) -> Endpoint:
        return Endpoint(name, server.base_url, "fake-model", concurrency=CONCURRENCY)

    return RunConfig(
        endpoint=endpoint("model", servers.model),
        task_id=TASK,
        relation_ids=RELATIONS,
        seed=SEED,
        dataset="reviews.csv",
        transformation_endpoint=endpoint("rewriter", servers.rewriter),
    )


def _run_here(servers, inputs, db: Path, *, embedder=None, cancel=None, store=None):
    """The run in this process (as the Probe page runs it); returns (summary, store)."""
    store = store or Store(db)
    runner = Runner(store, EmbeddingCache(embedder or BagOfWordsEmbedder(), store))
    task = BUILTIN_TASKS[TASK]
    samples = samples_from_file(inputs, task)
    return runner.run_sync(_config(servers), task, samples, cancel=cancel), store


@pytest.fixture(scope="module")
def here_reference(servers, inputs, tmp_path_factory) -> Reference:
    """The in-process run never stopped, into a database of its own."""
    servers.reset()
    db = tmp_path_factory.mktemp("reference") / "here.db"
    summary, store = _run_here(servers, inputs, db)
    store.close()
    calls = {name: received for name, (received, _) in servers.snapshot().items()}
    assert calls == _stored_calls(db, servers)
    assert summary.status == "done" and not summary.errors
    return Reference(summary.run_id, _cases(db), calls)


def _resume_here(servers, inputs, db, store, reference, first_summary) -> None:
    assert first_summary.status == "cancelled"
    first = servers.snapshot()
    stored_first = _stored_calls(db, servers)
    assert len(_cases(db)) < len(reference.cases)
    servers.reset()
    summary, _ = _run_here(servers, inputs, db, store=store)
    assert summary.status == "done" and summary.run_id == reference.run_id
    store.close()
    # Cancelled, the run drops the calls in flight: their answers may come and go unstored.
    check_resumed_as_never_stopped(
        db,
        reference,
        servers,
        first,
        stored_first,
        servers.snapshot(),
        lost_most=IN_FLIGHT_MOST,
    )


def test_cancel_while_rewrites_are_made_resumes_as_never_stopped(
    servers, inputs, here_reference, tmp_path
):
    db = tmp_path / "planning.db"
    cancel = threading.Event()
    servers.rewriter_calls.on_answer = lambda n: n == 10 and cancel.set()
    summary, store = _run_here(servers, inputs, db, cancel=cancel)
    _resume_here(servers, inputs, db, store, here_reference, summary)


def test_cancel_while_sending_resumes_as_never_stopped(servers, inputs, here_reference, tmp_path):
    db = tmp_path / "sending.db"
    cancel = threading.Event()
    servers.model_calls.on_answer = lambda n: n == 60 and cancel.set()
    summary, store = _run_here(servers, inputs, db, cancel=cancel)
    _resume_here(servers, inputs, db, store, here_reference, summary)


class _SlowJudge(BagOfWordsEmbedder):
    """Cancels the run when first asked to embed model answers, and takes ``judge_s`` for them
    (the batch being judged when a run is cancelled is finished and written; calls stop)."""

    def __init__(self, cancel: threading.Event, judge_s: float) -> None:
        super().__init__()
        self.cancel, self.judge_s = cancel, judge_s

    def embed(self, texts):
        if not self.cancel.is_set() and any(ANSWER_MARK in text for text in texts):
            self.cancel.set()
            time.sleep(self.judge_s)
        return super().embed(texts)


def test_cancel_while_judging_resumes_as_never_stopped(servers, inputs, here_reference, tmp_path):
    db = tmp_path / "judging.db"
    cancel = threading.Event()
    judge = _SlowJudge(cancel, judge_s=0.5)
    summary, store = _run_here(servers, inputs, db, embedder=judge, cancel=cancel)
    _resume_here(servers, inputs, db, store, here_reference, summary)


def test_cancel_while_writing_cases_resumes_as_never_stopped(
    servers, inputs, here_reference, tmp_path
):
    db = tmp_path / "writing.db"
    cancel = threading.Event()
    store = Store(db)
    real_record = store.record_cases
    writes = []

    def record_cases(cases):
        writes.append(1)
        if len(writes) == 2:
            cancel.set()
        return real_record(cases)

    store.record_cases = record_cases
    summary, _ = _run_here(servers, inputs, db, cancel=cancel, store=store)
    del store.record_cases
    _resume_here(servers, inputs, db, store, here_reference, summary)


# ------------------------------------------------------------------ forced contention

HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    print("ready", flush=True)
    for line in sys.stdin:
        hold_s, gap_s = map(float, line.split())
        conn.execute("BEGIN IMMEDIATE")
        print("held", flush=True)
        time.sleep(hold_s)
        conn.execute("ROLLBACK")
        time.sleep(gap_s)  # before the next hold: the writers waiting get their turn
    """
)
# The run's writes, and which of their calls the other process's lock awaits: answers and
# vectors in the middle of the run, a batch of cases, and the run's end.
CONTENDED_WRITES = {"cache_calls": 2, "cache_embeddings": 2, "record_cases": 2, "finish_run": 1}


def test_writes_wait_for_another_process_s_lock_and_lose_nothing(
    servers, inputs, here_reference, tmp_path, monkeypatch
):
    """Another process holds ``BEGIN IMMEDIATE`` for 0.4 s as each kind of write of the run
    starts (answers, vectors, cases, the run's end), while the runner's connection gives up on a
    lock after 50 ms. Each of those writes finds the database locked, retries, and succeeds: the
    cases are those of the uncontended run, the call cache holds every answer, and no storage
    error became an ERROR case."""
    from storage import busy

    found_busy: Counter = Counter()  # the store's verbs whose write found the database locked
    real_is_busy = busy.is_busy_error

    def is_busy_error(exc):
        found = real_is_busy(exc)
        if found:  # called by retry_when_busy, called by the verb
            found_busy[sys._getframe(2).f_code.co_name] += 1
        return found

    monkeypatch.setattr(busy, "is_busy_error", is_busy_error)
    db = tmp_path / "contended.db"
    store = Store(db)
    store._db.execute("PRAGMA busy_timeout = 50")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    held: list[str] = []
    hold_lock = threading.Lock()
    seen: Counter = Counter()

    def held_first(verb: str, write: Callable) -> Callable:
        def contended(*args, **kwargs):
            with hold_lock:
                seen[verb] += 1
                if seen[verb] == CONTENDED_WRITES[verb]:
                    holder.stdin.write("0.4 0.6\n")
                    holder.stdin.flush()
                    assert holder.stdout.readline().strip() == "held"
                    held.append(verb)
            return write(*args, **kwargs)

        return contended

    for verb in CONTENDED_WRITES:
        setattr(store, verb, held_first(verb, getattr(store, verb)))
    try:
        assert holder.stdout.readline().strip() == "ready"
        summary, _ = _run_here(servers, inputs, db, store=store)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        store.close()
    assert sorted(held) == sorted(CONTENDED_WRITES)
    assert set(found_busy) == set(CONTENDED_WRITES), found_busy
    assert summary.status == "done" and summary.verdicts.get("ERROR", 0) == 0
    assert _runs(db) == [(here_reference.run_id, "done")]
    assert _cases(db) == here_reference.cases
    assert _stored_calls(db, servers) == here_reference.calls


if __name__ == "__main__":
    sys.exit(_child_cli())
