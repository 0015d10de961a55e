"""Store verbs for the caches: model answers by call key, and embedding vectors by text hash.

A call's key (``core.identity.call_key``) hashes everything that decides its answer, so a run
repeated with the same endpoint, parameters and prompts is answered from the cache instead of the
model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.types import CallRequest, Completion, json_text
from storage.busy import retry_when_busy
from storage.sql_helpers import chunks, now

if TYPE_CHECKING:
    from sqlite_utils import Database


@dataclass(frozen=True)
class CachedAnswer(CallRequest):
    """One answered call, as the call cache stores it (keyed by ``core.identity.call_key``)."""

    completion: Completion


class CacheVerbs:
    """Mixin of :class:`storage.store.Store`: the call cache and the embeddings cache."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    # ------------------------------------------------------------ call cache

    def cached_calls(self, keys: list[str]) -> dict[str, Completion]:
        """The cached answers among ``keys`` (a key with none is left out), in few queries."""
        found: dict[str, Completion] = {}
        for chunk in chunks(keys, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, response, latency_ms, usage FROM calls WHERE key IN ({marks})", chunk
            ).fetchall()
            for key, response, latency_ms, usage in rows:
                found[key] = Completion(
                    text=response,
                    cached=True,
                    latency_ms=latency_ms or 0.0,
                    usage=json.loads(usage),
                )
        return found

    def cache_calls(self, answers: Iterable[CachedAnswer]) -> None:
        """Cache many answers in one transaction (the runner's writer thread batches them);
        failed calls are left out, so the next run sends them again."""
        stamp = now()
        rows = [_call_row(answer, stamp) for answer in answers if answer.completion.ok]
        if not rows:
            return

        def write() -> None:
            with self._write():
                self._db["calls"].insert_all(rows, replace=True)

        retry_when_busy(write)

    def count_calls(self) -> int:
        return self._db.execute("SELECT count(*) FROM calls").fetchone()[0]

    # ------------------------------------------------------------ embeddings cache

    def cached_embeddings(self, hashes: list[str], model: str) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for chunk in chunks(hashes, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks})",
                [model, *chunk],
            ).fetchall()
            for text_hash, blob in rows:
                found[text_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cache_embeddings(self, vectors: dict[str, np.ndarray], model: str) -> None:
        if not vectors:
            return
        rows = [(h, model, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()]

        def write() -> None:
            with self._write():
                self._db.conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (text_hash, model, vector) VALUES (?, ?, ?)",
                    rows,
                )

        retry_when_busy(write)


def _call_row(answer: CachedAnswer, stamp: str) -> dict[str, Any]:
    return {
        "key": answer.key,
        "base_url": answer.base_url,
        "model": answer.model,
        "params": json_text(answer.params),
        "messages": json_text(answer.messages),
        "repeat_index": answer.repeat_index,
        "response": answer.completion.text,
        "latency_ms": answer.completion.latency_ms,
        "usage": json_text(answer.completion.usage),
        "created_at": stamp,
    }
