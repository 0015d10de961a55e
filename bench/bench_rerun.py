"""Cache rerun: the identical run again sends zero calls and takes a fraction of the first.

A run of N inputs × a few relations against the fake OpenAI-compatible server (its own process,
100 ms latency per call) through the engine (``make_runner`` with a fast bag-of-words embedder,
so the figure is the cache's, not the embedding model's), then the same run again on the same
database. Printed: calls of each run, their times and the rerun's share of the first's time.

    .venv/bin/python bench/bench_rerun.py [--inputs 20] [--latency 0.1] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.workspace import make_runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder

RELATIONS = ("si.identity", "char.leet", "sentence.uppercase")


def measure(n_inputs: int, latency_s: float) -> dict:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai", "--latency", str(latency_s)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        task = BUILTIN_TASKS["sentiment"]
        samples = [Sample({"text": f"Review {i}: the soup was good."}) for i in range(n_inputs)]
        endpoint = Endpoint(name="fake", base_url=base_url, model="fake-model")
        config = RunConfig(endpoint=endpoint, task_id=task.id, relation_ids=RELATIONS)
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "rerun.db")
            runner = make_runner(store, BagOfWordsEmbedder)
            started = time.perf_counter()
            first = runner.run_sync(config, task, samples)
            first_s = time.perf_counter() - started
            started = time.perf_counter()
            again = runner.run_sync(config, task, samples)
            rerun_s = time.perf_counter() - started
            store.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {
        "inputs": n_inputs,
        "relations": list(RELATIONS),
        "latency_ms": latency_s * 1000,
        "first_calls": first.calls_made,
        "first_s": round(first_s, 3),
        "rerun_calls": again.calls_made,
        "rerun_s": round(rerun_s, 3),
        "rerun_vs_first": round(rerun_s / first_s, 3),
        "cases": first.cases,
        "rerun_cases": again.cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per call")
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    args = parser.parse_args()
    figures = measure(args.inputs, args.latency)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"first run : {figures['first_calls']} calls in {figures['first_s']:.2f} s\n"
        f"rerun     : {figures['rerun_calls']} calls in {figures['rerun_s']:.2f} s "
        f"({figures['rerun_vs_first']:.2f}× the first; target 0 calls)"
    )


if __name__ == "__main__":
    main()
