"""The runner keeps its event loop free for calls.

Evaluation, embedding and store writes run on one writer thread, the embedding model loads in the
background when (and only when) a run needs it, and whatever finished is still saved when a run
is torn down. No test here times anything: blocking is detected by what can or cannot happen
while a batch is being evaluated.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from app.clients.mock import MockClient
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from app.engine.send import FLUSH_EVERY
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from relations.base import Expectation, Relation, RelationKind
from storage.run_verbs import RunDefinition
from tests.conftest import BagOfWordsEmbedder

SENTIMENT = BUILTIN_TASKS["sentiment"]
ENDPOINT = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
ADD_GOOD = Relation(
    id="test.add_good", name="add good", family="test", category="test", description="d",
    example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT,
    transform=lambda text, ctx: text + " Honestly good.",
)  # fmt: skip
CONFIG = RunConfig(ENDPOINT, "sentiment", ("test.add_good",))


def _samples(n: int) -> list[Sample]:
    return [Sample({"text": f"Review {i} was fine."}) for i in range(n)]


def _runner(store, embeddings, mock: MockClient) -> Runner:
    return Runner(store, embeddings, custom_relations=[ADD_GOOD], client_factory=mock.factory)


class GatedEmbedder(BagOfWordsEmbedder):
    """Its first batch waits until every call of the run has been answered (or gives up)."""

    def __init__(self, all_answered: threading.Event) -> None:
        super().__init__()
        self.all_answered = all_answered
        self.waited_in_vain = False
        self.threads: set[str] = set()

    def embed(self, texts):
        self.threads.add(threading.current_thread().name)
        if len(self.calls) == 0 and not self.all_answered.wait(timeout=5):
            self.waited_in_vain = True
        return super().embed(texts)


def test_calls_keep_flowing_while_a_batch_is_evaluated(store):
    """Issue 11, item 1: evaluating (here: embedding) the first batch used to run on the event
    loop, so no call could be answered until it was done. Now the batch is evaluated on the
    writer thread while the remaining calls are sent: the embedder can wait for the last answer
    without stalling the run."""
    n = 3 * FLUSH_EVERY
    all_answered = threading.Event()

    def model(messages):
        if len(mock.calls) == 2 * n:
            all_answered.set()
        return "positive"

    mock = MockClient(model, latency_s=0.01)
    embedder = GatedEmbedder(all_answered)
    summary = _runner(store, EmbeddingCache(embedder, store), mock).run_sync(
        CONFIG, SENTIMENT, _samples(n)
    )
    assert not embedder.waited_in_vain
    assert summary.status == "done" and summary.cases == n and summary.calls_made == 2 * n
    assert threading.main_thread().name not in embedder.threads


def test_store_writes_happen_on_one_writer_thread_in_batches(store, embeddings, monkeypatch):
    """Answers are cached and cases recorded by the writer thread, many per transaction, never
    with one commit per call on the event loop."""
    writes: list[tuple[str, str, int]] = []
    for verb in ("cache_calls", "record_cases"):
        original = getattr(store, verb)

        def spy(items, verb=verb, original=original):
            items = list(items)
            writes.append((verb, threading.current_thread().name, len(items)))
            return original(items)

        monkeypatch.setattr(store, verb, spy)
    n = 2 * FLUSH_EVERY
    summary = _runner(store, embeddings, MockClient(lambda m: "positive")).run_sync(
        CONFIG, SENTIMENT, _samples(n)
    )
    assert summary.cases == n and store.count_calls() == 2 * n
    assert {thread for _, thread, _ in writes} == {"morphscope-writer_0"}
    cached = [size for verb, _, size in writes if verb == "cache_calls"]
    assert sum(cached) == 2 * n and len(cached) < 2 * n


class LazyEmbedder(BagOfWordsEmbedder):
    """Counts how often a run asked it to load its model."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0
        self.loaded = threading.Event()

    def load(self) -> None:
        self.loads += 1
        self.loaded.set()


def test_the_model_loads_in_the_background_only_when_the_run_needs_it(store):
    """A run that will answer cases starts loading the embedding model at once (off the loop);
    a rerun whose cases are all settled embeds nothing new and does not load it."""
    embedder = LazyEmbedder()
    runner = _runner(store, EmbeddingCache(embedder, store), MockClient(lambda m: "positive"))
    first = runner.run_sync(CONFIG, SENTIMENT, _samples(4))
    assert first.calls_made == 8 and embedder.loaded.wait(timeout=5) and embedder.loads == 1
    again = runner.run_sync(CONFIG, SENTIMENT, _samples(4))
    assert again.calls_made == 0 and again.cases == 4
    assert embedder.loads == 1


def test_a_run_torn_down_from_outside_keeps_what_finished(store, embeddings):
    """A Streamlit rerun or Ctrl-C cancels the run's task: the cases that had finished are still
    evaluated and saved (by the writer thread), their answers cached, and the run resumes."""
    answered: list[str] = []

    def model(messages):
        answered.append(messages[-1]["content"])
        return "positive"

    mock = MockClient(model, latency_s=0.05, concurrency=2)
    runner = _runner(store, embeddings, mock)
    samples = _samples(12)

    async def cancel_midway():
        task = asyncio.ensure_future(runner.execute(CONFIG, SENTIMENT, samples))
        while len(answered) < 6:
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    run_id = CONFIG.run_id(samples)
    saved = len(store.recorded_case_verdicts(run_id))
    assert saved > 0 and store.run(run_id).status == "interrupted"
    cached = store.count_calls()
    assert cached >= 2 * saved
    again = MockClient(model)  # a semaphore is bound to its event loop: a new client
    resumed = _runner(store, embeddings, again).run_sync(CONFIG, SENTIMENT, samples)
    assert resumed.status == "done" and resumed.cases == 12
    assert resumed.calls_made == 24 - cached


# A stand-in for the embedding process speaking the same pipe protocol: pickled lists of texts
# in, one pickled reply (vectors, or a failure message) out. "die" makes it exit mid-request.
FAKE_EMBEDDING_PROCESS = """
import pickle, sys
import numpy as np
while True:
    try:
        texts = pickle.load(sys.stdin.buffer)
    except EOFError:
        break
    if "die" in texts:
        sys.exit(3)
    reply = "ValueError: no model" if "fail" in texts else np.ones((len(texts), 4), np.float32)
    pickle.dump(reply, sys.stdout.buffer)
    sys.stdout.buffer.flush()
"""


def test_the_embedding_process_answers_over_its_pipe_and_reports_failures_as_errors(
    monkeypatch,
):
    """Issue 11, item 1: MiniLM runs in a helper process so that loading and encoding never hold
    the app's GIL. Its vectors come back over the pipe; a failure in it, or its death, is an
    ``EmbedderProcessError`` with the reason (the runner turns that into the run's error, as a
    model that failed to load in-process did), and the next batch starts a fresh process."""
    import sys

    import pytest

    from app.engine.embedder import EmbedderProcessError, MiniLMProcessEmbedder

    monkeypatch.setattr(
        MiniLMProcessEmbedder, "command", (sys.executable, "-c", FAKE_EMBEDDING_PROCESS)
    )
    embedder = MiniLMProcessEmbedder()
    embedder.load()
    assert embedder.embed(["a", "b"]).shape == (2, 4)
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(EmbedderProcessError, match="no model"):
        embedder.embed(["fail"])
    with pytest.raises(EmbedderProcessError, match="died"):
        embedder.embed(["die"])
    assert embedder.embed(["c"]).shape == (1, 4)
    embedder.close()


def test_answers_are_cached_every_second_while_a_batch_waits_for_the_model(store):
    """The first batch waits for the embedding model (seconds, on a loaded machine). Meanwhile
    the answers that arrive are still written to the call cache at least every second, so a run
    killed then does not send them again: here the embedder holds its first batch until every
    answer of the run is in the store."""
    n = 2 * FLUSH_EVERY

    class WaitsForTheCache(BagOfWordsEmbedder):
        waited_in_vain = False

        def embed(self, texts):
            if not self.calls:
                deadline = time.monotonic() + 5
                while store.count_calls() < 2 * n and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.waited_in_vain = store.count_calls() < 2 * n
            return super().embed(texts)

    embedder = WaitsForTheCache()
    # Answers trickle in (2 at a time), so most arrive while the first batch is held.
    mock = MockClient(lambda m: "positive", latency_s=0.05, concurrency=2)
    summary = _runner(store, EmbeddingCache(embedder, store), mock).run_sync(
        CONFIG, SENTIMENT, _samples(n)
    )
    assert not embedder.waited_in_vain
    assert summary.status == "done" and summary.cases == n


def test_stopping_the_embedding_process_does_not_wait_for_a_load_in_progress(monkeypatch):
    """Issue 11, whole-command overhead: `run` starts the embedding process first and ends it
    when done. A model still loading (seconds of imports) is killed, not waited for — before,
    only ``close`` existed, which waits for the process to finish loading and read EOF. The
    next ``embed`` starts a fresh process."""
    import sys

    from app.engine.embedder import MiniLMProcessEmbedder

    loading_forever = "import time\ntime.sleep(120)\n"
    monkeypatch.setattr(MiniLMProcessEmbedder, "command", (sys.executable, "-c", loading_forever))
    embedder = MiniLMProcessEmbedder()
    embedder.load()
    process = embedder._process
    embedder.stop()
    assert process.poll() is not None  # killed and reaped, not left loading
    embedder.stop()  # nothing running: a no-op
    monkeypatch.setattr(
        MiniLMProcessEmbedder, "command", (sys.executable, "-c", FAKE_EMBEDDING_PROCESS)
    )
    assert embedder.embed(["a"]).shape == (1, 4)
    embedder.stop()


def test_a_samples_partners_are_the_following_samples_wrapping_around():
    """Issue 11, planning overhead: each sample's partners (the samples after it, then those
    before it; interleaving relations read the first few) are a view, not a copied list — 500
    samples copied 500 lists of 499. It must read exactly as the list did: for samples
    [a, b, c, d] the partners of c (index 2) are [d, a, b]."""
    import pytest

    from app.engine.plan import Partners

    samples = [Sample({"text": t}) for t in "abcd"]
    for index in range(4):
        copied = samples[index + 1 :] + samples[:index]
        view = Partners(samples, index)
        assert list(view) == copied and len(view) == 3
        assert view[0] == copied[0] and view[-1] == copied[-1] and view[:2] == copied[:2]
    assert [s.fields["text"] for s in Partners(samples, 2)] == ["d", "a", "b"]
    assert list(Partners(samples[:1], 0)) == [] and not Partners(samples[:1], 0)
    with pytest.raises(IndexError):
        Partners(samples, 0)[3]


def test_saving_a_run_writes_its_samples_in_a_few_statements(store):
    """Issue 11, the run's start: the engine saves the run with its samples before the first
    call. One upsert per sample (with sqlite-utils' per-call table checks) took 74 ms for 500
    samples; one batched upsert takes 11 ms. Pinned by the statements SQLite sees, not a time:
    the run with 500 samples is saved in under 200 statements (it took over 5,000: each upsert
    re-read the schema), and every sample is there."""
    samples = [Sample({"text": f"review {i}"}) for i in range(500)]
    statements: list[str] = []
    store._db.conn.set_trace_callback(statements.append)
    try:
        store.save_run(
            RunDefinition(
                "run-1",
                endpoint=Endpoint(name="e", base_url="http://x/v1", model="m"),
                task_id="sentiment",
                config={},
                samples=samples,
            ),
        )
    finally:
        store._db.conn.set_trace_callback(None)
    assert len(statements) < 200, len(statements)
    assert store.run("run-1").id == "run-1"
    assert len(store._query("SELECT id FROM samples")) == 500
