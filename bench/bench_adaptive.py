"""Adaptive concurrency against a server with a hard capacity (429 beyond N calls at once).

The server (its own process) answers at most N chat calls at once, each after a fixed latency,
and refuses any call beyond that with a 429 (Retry-After: 0). Passes of the same number of
distinct calls, through the real OpenAI-compatible client, taken in turns:

- baseline: the client configured at exactly N: the best any client can do (the capacity);
- adaptive: the client configured at the default concurrency (24, well above N), which must
  find N by itself.

Printed: achieved calls/s of the adaptive pass as a share of the baseline's (target ≥ 0.90), and
as a share of the theoretical N / latency; the share of calls the server refused and the client
retried (target ≤ 5 %); the final window. Run it a few times on a busy machine: the ratio is
what counts, not the absolute figures.

    .venv/bin/python bench/bench_adaptive.py [--capacity 8] [--latency 0.1] [--calls 800]
        [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.clients import make_client
from core.types import Endpoint

TARGET_SHARE_OF_CAPACITY = 0.90
TARGET_RETRY_SHARE = 0.05


def start_server(capacity: int, latency_s: float) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "tests.fake_openai", "--latency", str(latency_s)]
    process = subprocess.Popen(
        [*command, "--max-concurrent", str(capacity)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    return process, process.stdout.readline().strip()


def server_counts(base_url: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{base_url}/stats", timeout=10) as response:
        return json.loads(response.read())


async def one_pass(base_url: str, concurrency: int, calls: int, tag: str) -> dict:
    endpoint = Endpoint(
        name="bench", base_url=base_url, model="fake-model", concurrency=concurrency, retries=10
    )
    client = make_client(endpoint)
    started = time.perf_counter()
    results = await asyncio.gather(
        *(
            client.complete([{"role": "user", "content": f"{tag} call {i}: good"}], {})
            for i in range(calls)
        )
    )
    elapsed = time.perf_counter() - started
    load = client.live_load()
    await client.close()
    answered = sum(result.error is None for result in results)
    return {
        "calls": calls,
        "answered": answered,
        "elapsed_s": round(elapsed, 2),
        "calls_per_s": round(answered / elapsed, 1),
        "final_window": load.concurrency,
    }


def measure(capacity: int, latency_s: float, calls: int, configured: int, rounds: int) -> dict:
    """Baseline and adaptive passes taken in turns (``rounds`` of each), so a change in the
    machine's load during the run weighs on both alike."""
    server, base_url = start_server(capacity, latency_s)
    baselines, adaptives, refused, sent = [], [], 0, 0
    try:
        for index in range(rounds):
            baselines.append(asyncio.run(one_pass(base_url, capacity, calls, f"b{index}")))
            before = server_counts(base_url)
            adaptives.append(asyncio.run(one_pass(base_url, configured, calls, f"a{index}")))
            after = server_counts(base_url)
            refused += after["over_capacity"] - before["over_capacity"]
            sent += after["chat_calls"] - before["chat_calls"]
    finally:
        server.terminate()
        server.wait()
    baseline_rate = sum(p["answered"] for p in baselines) / sum(p["elapsed_s"] for p in baselines)
    adaptive_rate = sum(p["answered"] for p in adaptives) / sum(p["elapsed_s"] for p in adaptives)
    return {
        "server_capacity": capacity,
        "latency_s": latency_s,
        "configured_concurrency": configured,
        "calls_per_pass": calls,
        "rounds": rounds,
        "baseline_calls_per_s": round(baseline_rate, 1),
        "adaptive_calls_per_s": round(adaptive_rate, 1),
        "achieved_vs_capacity": round(adaptive_rate / baseline_rate, 3),
        "achieved_vs_theoretical": round(adaptive_rate / (capacity / latency_s), 3),
        "retried_share": round(refused / (calls * rounds), 4),
        "refused_calls": refused,
        "sent_calls": sent,
        "unanswered": sum(p["calls"] - p["answered"] for p in adaptives),
        "final_windows": [p["final_window"] for p in adaptives],
        "passes": {"baseline": baselines, "adaptive": adaptives},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=8, help="the server's N")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per call")
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--concurrency", type=int, default=Endpoint.concurrency)
    parser.add_argument("--rounds", type=int, default=2, help="passes of each, taken in turns")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = measure(args.capacity, args.latency, args.calls, args.concurrency, args.rounds)
    result["meets_targets"] = (
        result["achieved_vs_capacity"] >= TARGET_SHARE_OF_CAPACITY
        and result["retried_share"] <= TARGET_RETRY_SHARE
        and result["unanswered"] == 0
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"server: {args.capacity} calls at once, {args.latency:g} s each "
            f"(theoretical {args.capacity / args.latency:.0f} calls/s)\n"
            f"baseline at {args.capacity}: {result['baseline_calls_per_s']} calls/s\n"
            f"adaptive from {args.concurrency}: {result['adaptive_calls_per_s']} calls/s, "
            f"final windows {result['final_windows']}\n"
            f"achieved/capacity: {result['achieved_vs_capacity']:.3f} "
            f"(target ≥ {TARGET_SHARE_OF_CAPACITY}); vs theoretical "
            f"{result['achieved_vs_theoretical']:.3f}\n"
            f"retried share: {result['retried_share']:.2%} ({result['refused_calls']} of "
            f"{args.calls * args.rounds} calls refused; target ≤ {TARGET_RETRY_SHARE:.0%})\n"
            f"meets targets: {result['meets_targets']}"
        )
    return 0 if result["meets_targets"] else 1


if __name__ == "__main__":
    sys.exit(main())
