"""Throughput: the runner at default concurrency vs a sequential one-call-at-a-time loop.

The server is the test fake with ~100 ms latency per call. The baseline is LLMorph's design:
for every (input, relation) it calls the model on the source and then on the follow-up, one call
at a time. A second baseline dedups the source calls but stays sequential, so the table shows
how much comes from concurrency alone. Also checks that re-running makes zero calls.

    .venv/bin/python bench/bench_runner_throughput.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from relations.apply import generate_followups
from relations.registry import get_relation
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import FakeServerProcess

LATENCY_S = 0.1
N_INPUTS = 20
RELATIONS = ("si.identity", "char.leet", "sentence.uppercase", "char.delete")


def sequential_loop(base_url: str, prompts: list[str]) -> float:
    """One blocking HTTP call after another, as a sequential research script does."""
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for prompt in prompts:
            response = client.post(
                f"{base_url}/chat/completions",
                json={"model": "fake-model", "messages": [{"role": "user", "content": prompt}]},
            )
            response.raise_for_status()
    return time.perf_counter() - started


def main() -> None:
    task = BUILTIN_TASKS["sentiment"]
    samples = [
        Sample({"text": f"Review {i}: the soup was good and warm."}) for i in range(N_INPUTS)
    ]
    naive_prompts: list[str] = []  # LLMorph: source + follow-up per (input, relation)
    distinct: dict[str, None] = {}
    for sample in samples:
        source = task.render(sample.fields)
        distinct[source] = None
        for relation_id in RELATIONS:
            (followup,) = generate_followups(get_relation(relation_id), sample, task, ["text"])
            prompt = task.render(followup.fields)
            naive_prompts += [source, prompt]
            distinct[prompt + ("#" if prompt == source else "")] = None
    with FakeServerProcess("--latency", str(LATENCY_S)) as server:
        naive_s = sequential_loop(server.base_url, naive_prompts)
        dedup_s = sequential_loop(server.base_url, list(distinct))
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "bench.db")
            endpoint = Endpoint(name="fake", base_url=server.base_url, model="fake-model")
            runner = Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))
            config = RunConfig(endpoint=endpoint, task_id="sentiment", relation_ids=RELATIONS)
            started = time.perf_counter()
            first = runner.run_sync(config, task, samples)
            runner_s = time.perf_counter() - started
            started = time.perf_counter()
            again = runner.run_sync(config, task, samples)
            rerun_s = time.perf_counter() - started
            rerun_calls = again.calls_made
    print(
        f"{N_INPUTS} inputs × {len(RELATIONS)} relations, server latency {LATENCY_S * 1000:.0f} ms"
    )
    print(f"concurrency (default)                    : {endpoint.concurrency}")
    print(f"sequential loop, LLMorph-style ({len(naive_prompts)} calls): {naive_s:6.2f} s   1.0×")
    print(
        f"sequential loop, deduped ({len(distinct)} calls)      : {dedup_s:6.2f} s   {naive_s / dedup_s:.1f}×"
    )
    print(
        f"Morphscope runner ({first.calls_made} calls)           : {runner_s:6.2f} s   {naive_s / runner_s:.1f}×  (target ≥ 12×)"
    )
    print(
        f"  of which concurrency alone             : {dedup_s / runner_s:.1f}× vs the deduped loop"
    )
    print(
        f"re-run of the identical run              : {rerun_s:6.2f} s, {rerun_calls} endpoint calls (target 0)"
    )
    print(f"cases: {first.cases}, verdicts {first.verdicts}; re-run cases {again.cases}")


if __name__ == "__main__":
    main()
