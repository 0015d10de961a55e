"""Shared by the gate's tests: MiniLM's real cosines."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def minilm_similarity():
    from app.engine.minilm_onnx import MiniLMOnnxEmbedder, ensure_onnx

    ensure_onnx()
    embedder = MiniLMOnnxEmbedder(threads=1)
    vectors: dict[str, np.ndarray] = {}

    def similarity(a: str, b: str) -> float:
        missing = [t for t in dict.fromkeys((a, b)) if t not in vectors]
        if missing:
            vectors.update(zip(missing, embedder.embed(missing), strict=True))
        return float(np.dot(vectors[a], vectors[b]))

    return similarity
