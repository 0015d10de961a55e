"""How well a text reads to the embedded model: its mean per-token negative log-likelihood.

The validity gate holds the embedded rewriter's rewrites to a closer rule
(``relations.english.close_rewrite``), and what that rule leaves most is broken English ("I love
simple this kettle to use", "the view from top were amazing"). SmolLM2 writes such text, but it
also reads it as unlikely. On the rewrites of the rewriter bench we read, the broken ones scored
+0.55 to +2.77 nats a token above their sources, and SmolLM2's valid rewrites +0.24 at most
(``bench/bench_rewriter_models.py``). A strong writer's faithful rewording can score +1.2, so this
is for the embedded rewriter only, like the rest of the closer rule.

The model is loaded in this process, once, from the packaged GGUF (no server, no download), with
the logits of every position kept. One ``llama_cpp.Llama`` is not thread-safe, and the gate runs on
several threads, so every evaluation holds a lock; scores are memoised by text.
"""

from __future__ import annotations

import atexit
import math
import threading
from functools import cache
from typing import Any

from relations.english.close_rewrite import SmallRewriter

# Tokens scored at most: a rewrite longer than this is judged on its start (the gate's texts are
# inputs, rarely past a few hundred tokens).
MAX_TOKENS = 512


class FluencyScorer:
    """``mean_nll(text)``: the mean negative log-likelihood a token of ``text`` has under the
    embedded model, each token given the ones before it (lower reads better)."""

    def __init__(self, model_path: str | None = None) -> None:
        self._model_path = model_path
        self._model: Any = None
        self._lock = threading.Lock()
        self._scores: dict[str, float] = {}

    def _load(self) -> Any:
        if self._model is None:
            from llama_cpp import Llama

            from app.engine.model_server import gguf_path

            path = self._model_path or str(gguf_path())
            self._model = Llama(
                model_path=path,
                logits_all=True,
                n_ctx=MAX_TOKENS,
                n_threads=1,
                n_batch=MAX_TOKENS,
                verbose=False,
            )
            # Freed before the interpreter tears its modules down: llama_cpp's own finaliser
            # then finds its C bindings gone and prints a traceback on exit.
            atexit.register(self.close)
        return self._model

    def close(self) -> None:
        """Free the model (the next text loads it again)."""
        with self._lock:
            if self._model is not None:
                self._model.close()
                self._model = None

    def mean_nll(self, text: str) -> float:
        with self._lock:
            if text not in self._scores:
                self._scores[text] = self._score(text)
            return self._scores[text]

    def _score(self, text: str) -> float:
        import numpy as np

        model = self._load()
        tokens = model.tokenize(text.encode(), add_bos=True)[:MAX_TOKENS]
        if len(tokens) < 2:
            return 0.0
        model.reset()
        model.eval(tokens)
        logits = np.asarray(model.scores[: len(tokens) - 1], dtype=np.float64)
        top = logits.max(axis=1, keepdims=True)
        log_norm = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
        chosen = logits[np.arange(len(tokens) - 1), tokens[1:]]
        value = float(np.mean(log_norm - chosen))
        return value if math.isfinite(value) else 0.0


@cache
def embedded_fluency() -> FluencyScorer:
    """The process's one scorer (the model loads on its first text)."""
    return FluencyScorer()


def embedded_rewriter() -> SmallRewriter:
    """What the gate knows of the embedded rewriter: a small model, which reads its own text."""
    return SmallRewriter(fluency=embedded_fluency().mean_nll)
