"""MiniLM without sentence-transformers: the embedding process's encoder.

Importing sentence-transformers made up most of a run's model load (about 3.5 s of CPU of the
4.8 s it took to be ready, on a core the run's calls could use); ``MiniLMTorchEmbedder`` runs the
same encoder with torch, ``tokenizers`` and ``safetensors`` alone. Its vectors must be
``MiniLMEmbedder``'s: both are stored under the same name, so a run mixes vectors of the two.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

# Short and long (past the model's 256 tokens, so truncated), empty, padded with spaces,
# non-ASCII, digits and LaTeX: every path of tokenisation and padding.
TEXTS = [
    "The cat sat on the mat.",
    "A feline rested on the rug.",
    "positive",
    "",
    "   padded with spaces   ",
    "Ünïcödé naïve café — “quotes” 日本語のテキスト 😀",
    "th3 s0up w4s g00d",
    "What is 12 * 7? 12 * 7 = 84, so the answer is \\boxed{84}.",
    "word " * 300,
    *(f"review {i}: the soup was {'good' if i % 2 else 'cold'}" for i in range(70)),
]


def test_the_embedding_process_loads_minilm_without_sentence_transformers(tmp_path, monkeypatch):
    """The embedding process (``serve``, as every run starts it) answers with normalised 384-d
    vectors that rank a paraphrase above an unrelated text, and never imports
    sentence-transformers or transformers (the seconds this encoder exists to skip)."""
    from app.engine.embedder import MiniLMProcessEmbedder

    report = tmp_path / "modules.txt"
    serve_then_report = (
        "import sys\n"
        "from app.engine.embedder import serve\n"
        "serve()\n"
        "heavy = sorted(m for m in ('sentence_transformers', 'transformers') if m in sys.modules)\n"
        f"open({str(report)!r}, 'w').write(repr(heavy))\n"
    )
    monkeypatch.setattr(MiniLMProcessEmbedder, "command", (sys.executable, "-c", serve_then_report))
    embedder = MiniLMProcessEmbedder()
    vectors = embedder.embed(["a happy movie", "a joyful film", "tax law"])
    embedder.close()  # EOF: serve returns, and the process writes what it imported
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert report.read_text() == "[]"


@pytest.mark.slow  # loads sentence-transformers for the reference vectors
def test_torch_only_vectors_equal_sentence_transformers_vectors():
    """Same vectors as ``SentenceTransformer.encode`` (normalised) to float rounding, over texts
    that exercise truncation, padding within a batch and several batches."""
    from app.engine.embedder import MiniLMEmbedder, MiniLMTorchEmbedder

    reference = MiniLMEmbedder().embed(list(TEXTS))
    vectors = MiniLMTorchEmbedder().embed(list(TEXTS))
    assert vectors.shape == reference.shape == (len(TEXTS), 384)
    assert np.abs(vectors - reference).max() < 1e-5
    assert abs(float(vectors[0] @ vectors[1]) - float(reference[0] @ reference[1])) < 1e-6
