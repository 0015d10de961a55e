"""Batch export at scale: 100,000 request lines in under 60 s and 1 GB (issue 13's target).

The real command, as a user runs it, in its own process: ``python -m app batch export`` of
5,000 distinct inputs (the most one inputs file may hold) × 10 rule-based relations × 2 repeats
into a fresh database: 100,000 cases, 110,000 distinct calls (each input's source twice, and
100,000 follow-ups), written as three part files of at most 50,000 lines. Printed: seconds,
the process's peak RSS (``resource.getrusage`` of the finished child), lines per second, and
each figure as a ratio of its target (below 1 meets it; exit 1 when one is missed).
``--quick``: 200 inputs, seconds.

    .venv/bin/python bench/bench_batch_export.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TARGET_S = 60.0
TARGET_MB = 1024.0
FULL_INPUTS = 5_000
QUICK_INPUTS = 200
REPEATS = 2
RELATIONS = (
    "char.add_spaces", "char.delete", "char.insert", "char.leet", "char.random_replace",
    "char.shuffle_inner", "char.swap_neighbours", "sentence.uppercase", "sentiment.exclamation",
    "si.identity",
)  # fmt: skip


def _inputs(path: Path, n: int) -> None:
    words = ("good", "cold", "slow", "kind", "late", "fresh", "loud", "calm")
    with path.open("w") as handle:
        for i in range(n):
            handle.write(
                f"Review {i}: the service was {words[i % 8]} and the food {words[i % 5]}.\n"
            )


def measure(quick: bool) -> dict:
    """Run one export and return its figures (``run_all`` calls this too)."""
    n_inputs = QUICK_INPUTS if quick else FULL_INPUTS
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        inputs = tmp / "inputs.txt"
        _inputs(inputs, n_inputs)
        command = [
            sys.executable, "-m", "app", "batch", "export",
            "--endpoint", "http://127.0.0.1:9/v1", "--model", "bench-model",
            "--task", "sentiment", "--relations", ",".join(RELATIONS), "--repeats", str(REPEATS),
            "--inputs", str(inputs), "--db", str(tmp / "bench.db"),
            "--out", str(tmp / "requests.jsonl"), "--json",
        ]  # fmt: skip
        env = dict(os.environ, MORPHSCOPE_AUTOSTART="0")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if done.returncode != 0:
            raise RuntimeError(f"batch export failed: {done.stderr.strip()[-500:]}")
        export = json.loads(done.stdout)
        written = sum(Path(f).stat().st_size for f in export["files"])
    peak_mb = peak_kb / 1024  # ru_maxrss is in KiB on Linux
    return {
        "inputs": n_inputs,
        "cases": export["cases"],
        "requests": export["requests"],
        "files": len(export["files"]),
        "written_mb": round(written / 1e6, 1),
        "seconds": round(elapsed, 2),
        "lines_per_s": round(export["requests"] / elapsed),
        "peak_rss_mb": round(peak_mb, 1),
        # An earlier, larger child of this process would hide this one's peak; none runs here.
        "peak_rss_is_this_export": peak_kb > before,
        "seconds_vs_target": round(elapsed / TARGET_S, 3),
        "memory_vs_target": round(peak_mb / TARGET_MB, 3),
        "target_seconds": TARGET_S,
        "target_mb": TARGET_MB,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "quick": quick,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_INPUTS} inputs only")
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    args = parser.parse_args()
    figures = measure(args.quick)
    missed = figures["seconds_vs_target"] > 1 or figures["memory_vs_target"] > 1
    if args.json:
        print(json.dumps(figures, indent=2))
        sys.exit(1 if missed else 0)  # like the other benches: figures printed, target missed
    print(
        f"{figures['requests']} requests ({figures['inputs']} inputs) in {figures['files']} "
        f"file(s), {figures['written_mb']} MB: {figures['seconds']} s "
        f"({figures['lines_per_s']} lines/s), peak RSS {figures['peak_rss_mb']} MB"
    )
    print(
        f"vs targets: time {figures['seconds_vs_target']} of {TARGET_S:g} s, "
        f"memory {figures['memory_vs_target']} of {TARGET_MB:g} MB (below 1 meets them); "
        f"load average {figures['load_average']}"
    )
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
