"""`run --precision 0.05` against the full run, on a deterministic fake model.

4,000 inputs × 2 relations of the sentiment task, through the real engine (plan, send, judge,
write) with an in-process fake model: its answer to a source is the review's label; an
upper-cased follow-up (sentence.uppercase) flips the label for about 65% of inputs, an
exclamation follow-up (sentiment.exclamation) for about 5% (by a hash of the prompt, so every
run gets the same answers). The full run and the adaptive run each start from an empty store.

Printed: each run's calls, the adaptive run's calls as a share of the full run's (target
≤ 45%), and per relation the inputs used, the rate beside the full run's (target: within 0.05)
and the confidence-sequence half-width at the stop (target ≤ 0.05).

    .venv/bin/python bench/bench_adaptive_precision.py [--inputs 4000] [--precision 0.05] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.adaptive_run import AdaptiveRunner, AdaptiveSettings
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Completion, Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder

RELATIONS = ("sentence.uppercase", "sentiment.exclamation")
FLIP_RATES = {"sentence.uppercase": 0.65, "sentiment.exclamation": 0.05}
TARGET_SHARE = 0.45
TARGET_RATE_GAP = 0.05


class FakeModel:
    """Deterministic answers: the review's label, flipped for some follow-ups."""

    async def complete(self, messages, params) -> Completion:
        text = messages[-1]["content"]
        label = "positive" if "good" in text.lower() else "negative"
        if "THE SOUP WAS" in text:
            flip_rate = FLIP_RATES["sentence.uppercase"]
        elif "!" in text:
            flip_rate = FLIP_RATES["sentiment.exclamation"]
        else:
            flip_rate = 0.0
        draw = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32
        if draw < flip_rate:
            label = "negative" if label == "positive" else "positive"
        return Completion(text=label)

    async def close(self) -> None:
        return None


def _samples(n: int) -> list[Sample]:
    return [
        Sample({"text": f"Review {i}: the soup was {'good' if i % 3 else 'bland'}."})
        for i in range(n)
    ]


def _rates(store: Store, run_id: str) -> dict[str, tuple[int, int]]:
    """(violations, judged inputs) per relation from the stored cases."""
    counts: dict[str, Counter] = {relation: Counter() for relation in RELATIONS}
    for case in store.cases_for([run_id]):
        counts[case.relation_id][str(case.verdict.value if case.verdict else None)] += 1
    return {r: (c["FAIL"], c["FAIL"] + c["PASS"]) for r, c in counts.items()}


def measure(n_inputs: int, precision: float) -> dict:
    task = BUILTIN_TASKS["sentiment"]
    samples = _samples(n_inputs)
    endpoint = Endpoint(name="fake", base_url="http://fake.invalid/v1", model="fake-model")
    config = RunConfig(endpoint=endpoint, task_id=task.id, relation_ids=RELATIONS, seed=27)
    with tempfile.TemporaryDirectory() as tmp:
        full_store = Store(Path(tmp) / "full.db")
        runner = Runner(
            full_store,
            EmbeddingCache(BagOfWordsEmbedder(), full_store),
            client_factory=lambda endpoint, retry=None: FakeModel(),
        )
        started = time.perf_counter()
        full = runner.run_sync(config, task, samples)
        full_s = time.perf_counter() - started
        full_rates = _rates(full_store, full.run_id)
        adaptive_store = Store(Path(tmp) / "adaptive.db")
        adaptive_runner = AdaptiveRunner(
            adaptive_store,
            EmbeddingCache(BagOfWordsEmbedder(), adaptive_store),
            client_factory=lambda endpoint, retry=None: FakeModel(),
        )
        started = time.perf_counter()
        adaptive = adaptive_runner.run_adaptive_sync(
            config, task, samples, AdaptiveSettings(precision=precision)
        )
        adaptive_s = time.perf_counter() - started
    share = adaptive.run.calls_made / full.calls_made
    cells = []
    for cell in adaptive.sampling.cells:
        full_violations, full_n = full_rates[cell.relation]
        rate = cell.violations / cell.inputs
        full_rate = full_violations / full_n
        cells.append(
            {
                "relation": cell.relation,
                "inputs": cell.inputs,
                "rate": round(rate, 4),
                "full_run_rate": round(full_rate, 4),
                "full_run_inputs": full_n,
                "half_width": round(cell.half_width, 4),
                "within_target": abs(rate - full_rate) <= TARGET_RATE_GAP
                and cell.half_width <= precision,
            }
        )
    return {
        "inputs": n_inputs,
        "precision": precision,
        "full_calls": full.calls_made,
        "adaptive_calls": adaptive.run.calls_made,
        "adaptive_share_of_full": round(share, 4),
        "stop_reason": adaptive.sampling.stop_reason,
        "status": adaptive.run.status,
        "full_s": round(full_s, 2),
        "adaptive_s": round(adaptive_s, 2),
        "cells": cells,
        "targets_met": share <= TARGET_SHARE and all(c["within_target"] for c in cells),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=4000)
    parser.add_argument("--precision", type=float, default=0.05)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.inputs, args.precision)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"full run: {figures['full_calls']} calls ({figures['full_s']} s); "
            f"--precision {args.precision}: {figures['adaptive_calls']} calls "
            f"({figures['adaptive_s']} s) = {figures['adaptive_share_of_full']:.1%} of the full run "
            f"(target ≤ {TARGET_SHARE:.0%}); {figures['stop_reason']}"
        )
        for cell in figures["cells"]:
            print(
                f"  {cell['relation']}: {cell['inputs']} of {cell['full_run_inputs']} inputs, "
                f"rate {cell['rate']:.3f} vs full {cell['full_run_rate']:.3f}, "
                f"±{cell['half_width']:.3f}"
            )
    return 0 if figures["targets_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
