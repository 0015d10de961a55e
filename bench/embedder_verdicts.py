"""Would an int8 embedder change a verdict, a gate decision or a stability count? (issue 24)

Every number the engine derives from embeddings, recomputed from stored texts with the fp32
graph the embedding process runs and with the int8 graph of ``minilm_int8_rows`` (the one int8
graph within cosine 0.99 that is batch-independent):

- **golden databases** (``tests/golden/*.db``; their fixture embeds with a stand-in, so their
  texts are judged here with both real graphs): per case the output similarity (source vs
  follow-up output: ``semantic_similar``/``semantic_different`` at θ = 0.8), Score against the
  reference and Δ (stability counts |Δ| < 0.05), and the input cosine (severity);
- **validity gate**: the rewrites read by hand in ``bench/data/rewriter_review.jsonl`` against
  their relation's similarity floor.

A threshold-borderline value that lands on the other side with int8 is listed with both values.

    .venv/bin/python bench/embedder_verdicts.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SEMANTIC_THRESHOLD = 0.8  # SPEC §4: semantic_similar / semantic_different default θ
STABLE_DELTA = 0.05  # SPEC §5: stability counts |Δ| < 0.05


def _golden_pairs() -> list[dict]:
    """One row per golden case with the texts the engine compares by embedding."""
    rows = []
    for db in sorted((ROOT / "tests" / "golden").glob("*.db")):
        # immutable: no -wal/-shm files beside the committed fixtures.
        with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as con:
            for case in con.execute(
                "SELECT c.id, c.relation_id, c.source_input, c.followup_input, c.source_output,"
                " c.followup_output, s.reference FROM cases c JOIN samples s"
                " ON s.id = c.sample_id WHERE c.followup_output IS NOT NULL"
            ):
                rows.append(
                    dict(
                        zip(
                            ("case", "relation", "src_in", "fu_in", "src_out", "fu_out", "ref"),
                            case,
                            strict=True,
                        ),
                        db=db.name,
                    )
                )
    return rows


def _cosines(embedder, pairs: list[tuple[str, str]]) -> np.ndarray:
    texts = sorted({t for pair in pairs for t in pair})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    return np.array([float(vectors[a] @ vectors[b]) for a, b in pairs])


def _crossings(name, ref_values, int8_values, threshold, labels) -> list[dict]:
    return [
        {"quantity": name, "item": label, "fp32": round(float(a), 4), "int8": round(float(b), 4)}
        for a, b, label in zip(ref_values, int8_values, labels, strict=True)
        if (a >= threshold) != (b >= threshold)
    ]


def measure() -> dict:
    import tempfile

    from minilm_int8_rows import rows_int8

    from app.engine.minilm_onnx import MiniLMOnnxEmbedder, ensure_onnx
    from relations.registry import get_relation

    fp32 = MiniLMOnnxEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        int8 = rows_int8(ensure_onnx(), Path(tmp) / "rows.onnx")
        int8.embed(["load the sessions while the file is there"])
        return _compare(fp32, int8, get_relation)


def _compare(fp32, int8, get_relation) -> dict:
    cases = _golden_pairs()
    labels = [f"{c['db']}:{c['case']} {c['relation']}" for c in cases]
    report: dict = {"golden_cases": len(cases), "moved": []}
    output_pairs = [(c["src_out"] or "", c["fu_out"] or "") for c in cases]
    input_pairs = [(c["src_in"], c["fu_in"]) for c in cases]
    for name, pairs, threshold in (
        ("output similarity", output_pairs, SEMANTIC_THRESHOLD),
        ("input cosine", input_pairs, None),
    ):
        a, b = _cosines(fp32, pairs), _cosines(int8, pairs)
        report[f"{name} max |change|"] = round(float(np.abs(a - b).max()), 5)
        if threshold is not None:
            report["moved"] += _crossings(name, a, b, threshold, labels)
    scored = [c for c in cases if c["ref"]]
    score_pairs = [(c[side], c["ref"]) for c in scored for side in ("src_out", "fu_out") if c[side]]
    a, b = _cosines(fp32, score_pairs), _cosines(int8, score_pairs)
    report["Score max |change|"] = round(float(np.abs(a - b).max()), 5)
    deltas = {"fp32": a[1::2] - a[0::2], "int8": b[1::2] - b[0::2]}
    report["Δ max |change|"] = round(float(np.abs(deltas["fp32"] - deltas["int8"]).max()), 5)
    stable = {k: np.abs(v) < STABLE_DELTA for k, v in deltas.items()}
    report["stable observations fp32 / int8"] = [
        int(stable["fp32"].sum()),
        int(stable["int8"].sum()),
    ]
    report["moved"] += [
        {
            "quantity": "stability (|Δ| < 0.05)",
            "item": f"{c['db']}:{c['case']} {c['relation']}",
            "fp32": round(float(x), 4),
            "int8": round(float(y), 4),
        }
        for c, x, y, s, t in zip(
            scored, deltas["fp32"], deltas["int8"], stable["fp32"], stable["int8"], strict=True
        )
        if s != t
    ]
    reviewed = [
        json.loads(line)
        for line in (ROOT / "bench" / "data" / "rewriter_review.jsonl").read_text().splitlines()
    ]
    floors = [get_relation(r["relation"]).similarity_floor or 0.0 for r in reviewed]
    pairs = [(r["source"], r["followup"]) for r in reviewed]
    a, b = _cosines(fp32, pairs), _cosines(int8, pairs)
    report["gate rewrites"] = len(reviewed)
    report["gate similarity max |change|"] = round(float(np.abs(a - b).max()), 5)
    report["moved"] += [
        {"quantity": "validity gate", "item": r["key"], "fp32": round(x, 4), "int8": round(y, 4)}
        for r, x, y, floor in zip(reviewed, a, b, floors, strict=True)
        if (x >= floor) != (y >= floor)
    ]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure()
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    for key, value in report.items():
        if key != "moved":
            print(f"{key}: {value}")
    print(f"moved across a threshold: {len(report['moved'])}")
    for moved in report["moved"]:
        print(
            f"  {moved['quantity']}: {moved['item']}  fp32 {moved['fp32']} → int8 {moved['int8']}"
        )


if __name__ == "__main__":
    main()
