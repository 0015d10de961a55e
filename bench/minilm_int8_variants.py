"""Two int8 graphs of MiniLM that the bench tries besides dynamic quantization.

Dynamic int8 (one activation scale per tensor, computed per call) fails the cosine floor, and its
vectors depend on the other texts of the batch. Both graphs here give each text the same vector
alone and in any batch:

- ``static_int8``: ONNX Runtime's static QDQ quantization. Activation scales are fixed once by
  calibration over our own varied texts (a seed apart from the cosine set), weights per channel,
  and the FFN output projections and the last layer stay fp32 (their inputs have the widest
  ranges);
- ``blockwise_int8``: every weight MatMul as ``com.microsoft.MatMulNBits`` with 8-bit weights
  per block of 128 input channels and ``accuracy_level=4``: the runtime quantizes each row of the
  activations by itself, so scales never cross texts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

BLOCK = 128
CALIBRATION_TEXTS = 400
CALIBRATION_BATCH = 16
CALIBRATION_SEED = 7  # not the cosine set's seed: the graph is judged on texts it did not see


def token_batches(texts: list[str]) -> list[dict[str, np.ndarray]]:
    """The model's two inputs for ``texts``, in batches padded as the app pads them."""
    from app.engine.minilm_onnx import MiniLMOnnxEmbedder

    encodings = MiniLMOnnxEmbedder._open_tokenizer().encode_batch(texts)
    batches = []
    for start in range(0, len(encodings), CALIBRATION_BATCH):
        chunk = encodings[start : start + CALIBRATION_BATCH]
        length = max(len(e.ids) for e in chunk)
        ids = np.zeros((len(chunk), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(chunk):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        batches.append({"input_ids": ids, "attention_mask": mask})
    return batches


def _kept_in_fp32(model) -> list[str]:
    """MatMuls left unquantized: those of two activations (attention scores and mixing), the
    FFN output projections, and every MatMul of the last layer."""
    weights = {init.name for init in model.graph.initializer}
    last_layer = f"layer.{_layers(model) - 1}/"
    kept = []
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        ffn_output = "/output/dense/" in node.name and "/attention/" not in node.name
        if node.input[1] not in weights or ffn_output or last_layer in node.name:
            kept.append(node.name)
    return kept


def _layers(model) -> int:
    return 1 + max(
        int(node.name.split("layer.")[1].split("/")[0])
        for node in model.graph.node
        if "layer." in node.name
    )


def static_int8(source: Path, target: Path, calibration_texts: list[str]) -> Path:
    """``source`` quantized with scales calibrated (min–max) on ``calibration_texts``."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._batches = iter(token_batches(calibration_texts))

        def get_next(self):
            return next(self._batches, None)

    quantize_static(
        str(source), str(target), Reader(),
        quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul"], per_channel=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
        nodes_to_exclude=_kept_in_fp32(onnx.load(str(source))),
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"MatMulConstBOnly": True, "WeightSymmetric": True},
    )  # fmt: skip
    return target


def _blockwise_node(node, weight: np.ndarray, helper, numpy_helper):
    """The MatMulNBits node replacing ``node`` (x @ weight), and its two new initializers:
    weights transposed to (N, K), symmetric int8 per block of BLOCK along K, stored offset by
    128 as the operator expects when no zero point is given."""
    k, n = weight.shape
    blocks = -(-k // BLOCK)
    padded = np.zeros((n, blocks * BLOCK), dtype=np.float32)
    padded[:, :k] = weight.T
    grouped = padded.reshape(n, blocks, BLOCK)
    scales = np.abs(grouped).max(axis=2) / 127
    scales[scales == 0] = 1.0
    quantized = np.clip(np.rint(grouped / scales[..., None]), -128, 127) + 128
    q_name, s_name = f"{node.input[1]}_int8", f"{node.input[1]}_scales"
    inits = [
        numpy_helper.from_array(quantized.astype(np.uint8), q_name),
        numpy_helper.from_array(scales.astype(np.float32).reshape(-1), s_name),
    ]
    replacement = helper.make_node(
        "MatMulNBits", [node.input[0], q_name, s_name], list(node.output),
        name=f"{node.name}_int8", domain="com.microsoft",
        K=k, N=n, bits=8, block_size=BLOCK, accuracy_level=4,
    )  # fmt: skip
    return replacement, inits


def blockwise_int8(source: Path, target: Path) -> Path:
    """``source`` with every weight MatMul as an 8-bit blockwise ``MatMulNBits``."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    weights = {init.name: init for init in model.graph.initializer}
    nodes, added = [], []
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            weight = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
            node, inits = _blockwise_node(node, weight, helper, numpy_helper)
            added += inits
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {name for node in nodes for name in node.input}
    kept = [init for init in model.graph.initializer if init.name in used] + added
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))
    return target
