"""A fourth int8 graph of MiniLM the bench measures: each token's row quantized by itself, after
SmoothQuant, with 7-bit weights. Within cosine 0.99 of fp32 and batch-independent, the only
int8 graph here that is both, but not adopted (issue 24; figures in ``bench_embedder.py`` and
``embedder_verdicts.py``):

- it is no faster: 0.93× fp32's texts/s on short texts and 1.07× on long ones (load 1-2, two
  threads), though its integer products take half the time of fp32's (profiled): the passes
  that quantize each row (absolute value, row maximum, quantize, rescale) eat the rest on AVX2
  without VNNI;
- a per-vector cosine of 0.99 still moves the cosine *between* two texts by up to 0.02, which
  is 40% of the 0.05 that stability counts |Δ| against: on the golden databases' texts 6 of
  174 stable observations stop being stable. Verdicts did not move, but a 15% gain does not pay
  for a headline metric that depends on the embedder's rounding.

The graph is made from the fp32 export (``app.engine.minilm_onnx``); only onnx, onnxruntime and
numpy are needed. Every dense MatMul of the encoder (query/key/value, attention output and both
feed-forward products: 36 of them) is rewritten as:

1. **Smoothing** (SmoothQuant, Xiao et al. 2023, α = 0.55): BERT's layer norms output a few
   channels hundreds of times larger than the rest, so a row's int8 scale would leave the other
   channels a handful of levels. Dividing each input channel of the layers that read a layer
   norm (query/key/value, first feed-forward) by s_j = max|X_j|^α / max|W_j|^(1-α) and
   multiplying the weight's row j by s_j leaves the product unchanged and evens the ranges.
   max|X_j| is measured once on the built-in demo datasets' texts (``calibration_texts``).
2. **Each token's row quantized by itself**: scale = max |x| / 127, as unsigned 8-bit with zero
   point 128. A row's scale depends on that row only, so a text gets the same vector alone or in
   any batch (ONNX Runtime's dynamic quantization uses one scale per tensor and call: its vectors
   depend on the batch, and fell to cosine 0.97).
3. **Per-column weight scales, 7-bit weights**: AVX2 without VNNI multiplies u8 × s8 and adds
   pairs into int16 (``vpmaddubsw``), which saturates with 8-bit weights (255 · 127 · 2 > 32,767);
   with weights in [-63, 63] it cannot, and measured more exact than 8-bit weights here.
4. ``com.microsoft.MatMulIntegerToFloat`` multiplies and applies the weight scales, one ``Mul``
   the row scales; the bias ``Add`` that followed the MatMul is kept.

Attention's own products (QKᵀ, softmax · V), the layer norms and GELU stay fp32, and so do texts
of at most three word pieces (``RowsInt8Embedder``): mean pooling averages the rounding over a
text's tokens, and over one to three it cannot (cosine fell to 0.988 there).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ALPHA = 0.55  # SmoothQuant's migration strength: 0.5 and 0.6 measured worse on our texts
WEIGHT_LEVELS = 63  # 7-bit weights (see the module docstring, point 3)
ACTIVATION_LEVELS = 127
ZERO_POINT = 128
OPSET = 21  # QuantizeLinear with one scale per block (here: per row)


def calibration_texts() -> list[str]:
    """Every text of the built-in demo datasets (inputs, references, steps, labels): what our
    users' texts look like, from one-word labels to worked solutions."""
    from app.inputs.datasets import DATASETS, read_rows

    texts: dict[str, None] = {}

    def add(value) -> None:
        if isinstance(value, str) and value.strip():
            texts[value] = None
        elif isinstance(value, list | tuple):
            for item in value:
                add(item)
        elif isinstance(value, dict):
            for item in value.values():
                add(item)

    for path in sorted({info.path for info in DATASETS.values()}):
        for row in read_rows(path):
            add(row)
    return list(texts)


def _weight_matmuls(model) -> list:
    """The MatMul nodes whose second input is a 2-D weight (the dense layers)."""
    shapes = {init.name: len(init.dims) for init in model.graph.initializer}
    return [
        node
        for node in model.graph.node
        if node.op_type == "MatMul" and shapes.get(node.input[1]) == 2
    ]


def channel_ranges(fp32_graph: Path, texts: list[str]) -> dict[str, np.ndarray]:
    """max |x_j| per input channel of every dense layer's input, over the real tokens of
    ``texts`` (padding excluded), from the fp32 graph."""
    import onnx
    import onnxruntime
    from minilm_int8_variants import token_batches

    model = onnx.load(str(fp32_graph))
    inputs = sorted({node.input[0] for node in _weight_matmuls(model)})
    for name in inputs:
        model.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    ranges: dict[str, np.ndarray] = {}
    for batch in token_batches(texts):
        outputs = session.run(inputs, batch)
        real = batch["attention_mask"].astype(bool)
        for name, values in zip(inputs, outputs, strict=True):
            observed = np.abs(values[real]).max(axis=0)
            ranges[name] = np.maximum(ranges.get(name, 0.0), observed)
    return ranges


def quantize(fp32_graph: Path, target: Path, texts: list[str] | None = None) -> None:
    """Write the int8 graph of ``fp32_graph`` to ``target`` (not atomically: the caller writes a
    temporary file and renames it). ``texts``: the calibration texts (the demo datasets')."""
    import onnx
    from onnx import helper, numpy_helper, version_converter

    ranges = channel_ranges(fp32_graph, texts if texts is not None else calibration_texts())
    model = version_converter.convert_version(onnx.load(str(fp32_graph)), OPSET)
    graph = model.graph
    weights = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    layers_by_input: dict[str, list] = {}
    for node in _weight_matmuls(model):
        layers_by_input.setdefault(node.input[0], []).append(node)
    # Only LayerNorm outputs carry BERT's huge channels (smoothing the attention context and the
    # GELU output measured no more exact, and costs a pass over the widest tensor).
    smoothed = {
        output
        for node in graph.node
        if node.op_type == "LayerNormalization"
        for output in node.output
        if output in layers_by_input
    }

    constants = {
        "int8_last_axis": np.array([-1], dtype=np.int64),
        "int8_tiny": np.array(1e-8, dtype=np.float32),
        "int8_per_level": np.array(1 / ACTIVATION_LEVELS, dtype=np.float32),
        "int8_one": np.array(1, dtype=np.float32),
        "int8_zero_point": np.array(ZERO_POINT, dtype=np.uint8),
        "int8_weight_zero_point": np.array(0, dtype=np.int8),
    }
    added = [numpy_helper.from_array(value, name) for name, value in constants.items()]
    nodes: list = []
    layers = 0
    quantized_inputs: dict[str, tuple[str, str]] = {}  # input → (its int8 rows, their scales)
    for node in graph.node:
        consumers = layers_by_input.get(node.input[0]) if node.input else None
        if not consumers or node not in consumers:
            nodes.append(node)
            continue
        source = node.input[0]
        width = weights[node.input[1]].shape[0]
        smoothing = np.ones(width, dtype=np.float32)
        if source in smoothed:
            # One factor per input channel, shared by every layer reading this input (query,
            # key and value read the same one): from the largest weight row among them.
            weight_max = np.max(
                [np.abs(weights[n.input[1]]).max(axis=1) for n in consumers], axis=0
            )
            smoothing = (
                np.maximum(ranges[source], 1e-5) ** ALPHA
                / np.maximum(weight_max, 1e-5) ** (1 - ALPHA)
            ).astype(np.float32)
        if source not in quantized_inputs:
            prefix = f"int8_in{len(quantized_inputs)}"
            rows_input = source
            if source in smoothed:
                rows_input = f"{prefix}_x"
                added.append(numpy_helper.from_array(1 / smoothing, f"{prefix}_unsmooth"))
                nodes.append(helper.make_node("Mul", [source, f"{prefix}_unsmooth"], [rows_input]))
            nodes += [
                helper.make_node("Abs", [rows_input], [f"{prefix}_abs"]),
                helper.make_node(
                    "ReduceMax", [f"{prefix}_abs", "int8_last_axis"], [f"{prefix}_max"], keepdims=1
                ),
                helper.make_node("Max", [f"{prefix}_max", "int8_tiny"], [f"{prefix}_range"]),
                helper.make_node("Mul", [f"{prefix}_range", "int8_per_level"], [f"{prefix}_scale"]),
                # QuantizeLinear wants its zero point shaped as its scale: one per row.
                helper.make_node("Shape", [f"{prefix}_scale"], [f"{prefix}_rows"]),
                helper.make_node(
                    "ConstantOfShape",
                    [f"{prefix}_rows"],
                    [f"{prefix}_zero_points"],
                    value=numpy_helper.from_array(np.array([ZERO_POINT], dtype=np.uint8)),
                ),
                helper.make_node(
                    "QuantizeLinear",
                    [rows_input, f"{prefix}_scale", f"{prefix}_zero_points"],
                    [f"{prefix}_q"],
                    axis=-1,
                    block_size=width,
                ),
            ]
            quantized_inputs[source] = (f"{prefix}_q", f"{prefix}_scale")
        rows, row_scales = quantized_inputs[source]
        weight = weights[node.input[1]].astype(np.float32) * smoothing[:, None]
        column_scales = np.maximum(np.abs(weight).max(axis=0), 1e-12) / WEIGHT_LEVELS
        int8_weight = np.clip(np.round(weight / column_scales), -WEIGHT_LEVELS, WEIGHT_LEVELS)
        layers += 1
        prefix = f"int8_layer{layers}"
        added += [
            numpy_helper.from_array(int8_weight.astype(np.int8), f"{prefix}_w"),
            numpy_helper.from_array(column_scales.astype(np.float32), f"{prefix}_w_scale"),
        ]
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat",
                [
                    rows,
                    f"{prefix}_w",
                    "int8_one",
                    f"{prefix}_w_scale",
                    "int8_zero_point",
                    "int8_weight_zero_point",
                ],
                [f"{prefix}_y"],
                domain="com.microsoft",
            ),
            helper.make_node("Mul", [f"{prefix}_y", row_scales], [node.output[0]]),
        ]
    graph.initializer.extend(added)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    model.doc_string = json.dumps(
        {"scheme": "smoothquant rows int8", "alpha": ALPHA, "weight_levels": WEIGHT_LEVELS}
    )
    onnx.save(model, str(target))


# Texts of at most this many tokens ([CLS], up to three word pieces, [SEP]) go to the fp32 graph.
FP32_MAX_TOKENS = 5


class RowsInt8Embedder:
    """The int8 graph for texts longer than FP32_MAX_TOKENS, the fp32 graph for the rest."""

    def __init__(self, fp32_graph: Path, int8_graph: Path, threads: int) -> None:
        from app.engine.minilm_onnx import MiniLMOnnxEmbedder

        self.fp32 = MiniLMOnnxEmbedder(threads=threads, path=fp32_graph)
        self.int8 = MiniLMOnnxEmbedder(threads=threads, path=int8_graph)
        self.tokenizer = MiniLMOnnxEmbedder._open_tokenizer()

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        lengths = [len(e.ids) for e in self.tokenizer.encode_batch([t.strip() for t in texts])]
        for embedder, keep in ((self.fp32, True), (self.int8, False)):
            rows = [i for i, n in enumerate(lengths) if (n <= FP32_MAX_TOKENS) == keep]
            if rows:
                vectors[rows] = embedder.embed([texts[i] for i in rows])
        return vectors


def rows_int8(fp32_graph: Path, target: Path, threads: int = 2) -> RowsInt8Embedder:
    """Make the int8 graph of ``fp32_graph`` at ``target``; the embedder that routes to both."""
    quantize(fp32_graph, target)
    return RowsInt8Embedder(fp32_graph, target, threads)
