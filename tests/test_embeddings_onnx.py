"""MiniLM on ONNX Runtime: the embedding process's encoder (issue 24).

The graph is exported once from the packaged weights into the cache folder; a missing or damaged
file is made again. ``MiniLMOnnxEmbedder``'s vectors must be ``MiniLMEmbedder``'s
(sentence-transformers, fp32): both are stored under the same name, so a run mixes vectors of
the two.
"""

from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest

from app.engine import minilm_onnx

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
    "Final answer: 16",
    "word " * 300,
    *(f"review {i}: the soup was {'good' if i % 2 else 'cold'}" for i in range(70)),
]


def test_the_embedding_process_runs_without_torch_or_transformers(tmp_path, monkeypatch):
    """The embedding process (``serve``, as every run starts it) answers with normalised 384-d
    vectors that rank a paraphrase above an unrelated text, and never imports torch,
    transformers or sentence-transformers (the graph is already in the cache: the export made
    here first is the only step that needs them)."""
    from app.engine.embedder import MiniLMProcessEmbedder

    minilm_onnx.ensure_onnx()
    report = tmp_path / "modules.txt"
    serve_then_report = (
        "import sys\n"
        "from app.engine.embedder import serve\n"
        "serve()\n"
        "heavy = sorted(m for m in ('sentence_transformers', 'transformers', 'torch') "
        "if m in sys.modules)\n"
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


def test_texts_that_differ_only_in_whitespace_get_the_same_vector():
    """The premise of ``bert_token_key``: newlines, tabs and runs of spaces give MiniLM the
    same tokens, hence the same vector (not merely a close one)."""
    texts = [
        "Step 1: add.\nStep 2:  sum.\tFinal answer: 5",
        "Step 1: add. Step 2: sum. Final answer: 5",
    ]
    assert minilm_onnx.bert_token_key(texts[0]) == minilm_onnx.bert_token_key(texts[1])
    vectors = minilm_onnx.MiniLMOnnxEmbedder().embed(texts)
    assert np.array_equal(vectors[0], vectors[1])


@pytest.mark.slow  # loads sentence-transformers for the reference vectors
def test_onnx_vectors_agree_with_sentence_transformers():
    """Cosine ≥ 0.99 (the issue's floor) on every fixed text, and in fact equal to float
    rounding, over texts that exercise truncation, padding within a batch and several batches;
    the cat/feline cosine is the reference's to 1e-5."""
    from app.engine.embedder import MiniLMEmbedder

    reference = MiniLMEmbedder().embed(list(TEXTS))
    vectors = minilm_onnx.MiniLMOnnxEmbedder().embed(list(TEXTS))
    assert vectors.shape == reference.shape == (len(TEXTS), 384)
    assert np.sum(vectors * reference, axis=1).min() >= 0.99
    assert np.abs(vectors - reference).max() < 1e-5
    assert abs(float(vectors[0] @ vectors[1]) - float(reference[0] @ reference[1])) < 1e-5


def _cached_copy(cache_dir):
    """The real cache's graph and checksum copied into ``cache_dir`` (no export needed)."""
    source = minilm_onnx.ensure_onnx()
    target = minilm_onnx.onnx_file(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)
    shutil.copy(source.with_suffix(".onnx.sha256"), target.with_suffix(".onnx.sha256"))
    return target


@pytest.mark.parametrize(
    "damage",
    ["flip a byte", "truncate", "delete the checksum", "delete the file"],
)
def test_a_missing_or_damaged_cache_is_made_again(tmp_path, monkeypatch, damage):
    """An intact copy is used as it is (no export); each kind of damage makes ``ensure_onnx``
    export once, and the file it leaves is intact."""
    target = _cached_copy(tmp_path)
    exports: list = []

    def counting_export(path):
        exports.append(path)
        shutil.copy(minilm_onnx.ensure_onnx(), path)  # stands in for the slow trace
        path.with_suffix(".onnx.sha256").write_text(
            minilm_onnx.ensure_onnx().with_suffix(".onnx.sha256").read_text()
        )

    monkeypatch.setattr(minilm_onnx, "export", counting_export)
    assert minilm_onnx.ensure_onnx(tmp_path) == target and exports == []
    if damage == "flip a byte":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:1000])
    elif damage == "delete the checksum":
        target.with_suffix(".onnx.sha256").unlink()
    else:
        target.unlink()
    assert not minilm_onnx.is_intact(target)
    assert minilm_onnx.ensure_onnx(tmp_path) == target
    assert exports == [target]
    assert minilm_onnx.is_intact(target)


@pytest.mark.slow  # exports the model with torch + transformers (seconds)
def test_a_damaged_cache_file_is_rebuilt_and_its_vectors_agree(tmp_path):
    """A graph whose bytes were damaged is exported again from the packaged weights by the
    embedder itself, and the rebuilt file gives the intact file's vectors."""
    target = _cached_copy(tmp_path)
    texts = ["The cat sat on the mat.", "Final answer: 16", "word " * 40]
    before = minilm_onnx.MiniLMOnnxEmbedder(tmp_path).embed(texts)
    data = bytearray(target.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    target.write_bytes(bytes(data))
    after = minilm_onnx.MiniLMOnnxEmbedder(tmp_path).embed(texts)
    assert minilm_onnx.is_intact(target)
    assert np.abs(after - before).max() < 1e-5


def test_without_onnx_runtime_the_process_falls_back_to_sentence_transformers(monkeypatch):
    """Where ONNX Runtime cannot load (not installed, the graph cannot be made), the embedding
    process computes with sentence-transformers (the same vectors under the same name) instead of
    failing every batch; only when neither loads does it answer with the failure."""
    from app.engine import embedder as module

    def no_runtime(self):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(module.MiniLMOnnxEmbedder, "load", no_runtime)
    monkeypatch.setattr(module.MiniLMEmbedder, "load", lambda self: None)
    chosen, failure = module._loaded_embedder()
    assert isinstance(chosen, module.MiniLMEmbedder) and failure is None

    def broken(self):
        raise OSError("weights unreadable")

    monkeypatch.setattr(module.MiniLMEmbedder, "load", broken)
    chosen, failure = module._loaded_embedder()
    assert failure == "OSError: weights unreadable"


def test_long_texts_go_in_smaller_batches():
    """Batches hold at most BATCH_SIZE texts and BATCH_TOKENS padded tokens (the longest text
    of a batch times its rows): 3 texts of 1,000 tokens with a 2,048 budget → 2 + 1; 70 texts of
    10 tokens → 64 + 6."""
    lengths = [1000, 1000, 1000]
    assert minilm_onnx._batches([0, 1, 2], lengths) == [[0, 1], [2]]
    short = list(range(70))
    assert [len(b) for b in minilm_onnx._batches(short, [10] * 70)] == [64, 6]
