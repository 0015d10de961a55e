"""Batch export at scale: 100,000 request lines in under 60 s and 1 GB (issue 13's target).

The real command, as a user runs it, in its own process: ``python -m app batch export`` into a
fresh database of 50,000 distinct inputs × ``char.delete`` (a source and a follow-up call each:
100,000 distinct calls, two part files of 50,000 lines). ``--wide``: 5,000 inputs × 10
rule-based relations × 2 repeats instead (100,000 cases, 110,000 calls: every source shared by
ten cases). Printed: seconds, the process's peak RSS (``resource.getrusage`` of the finished
child), lines per second, and each figure as a ratio of its target (below 1 meets it; exit 1
when one is missed). ``--quick``: a fiftieth of the inputs, seconds.

    .venv/bin/python bench/bench_batch_export.py [--quick] [--wide] [--json]
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TARGET_S = 60.0
TARGET_MB = 1024.0


@dataclass(frozen=True)
class Shape:
    """What is exported: inputs × relations × repeats."""

    inputs: int
    relations: tuple[str, ...]
    repeats: int


LONG = Shape(50_000, ("char.delete",), 1)
WIDE = Shape(
    5_000,
    (
        "char.add_spaces", "char.delete", "char.insert", "char.leet", "char.random_replace",
        "char.shuffle_inner", "char.swap_neighbours", "sentence.uppercase",
        "sentiment.exclamation", "si.identity",
    ),
    2,
)  # fmt: skip
QUICK_FRACTION = 50


def _inputs(path: Path, n: int) -> None:
    words = ("good", "cold", "slow", "kind", "late", "fresh", "loud", "calm")
    with path.open("w") as handle:
        for i in range(n):
            handle.write(
                f"Review {i}: the service was {words[i % 8]} and the food {words[i % 5]}.\n"
            )


def measure(quick: bool, wide: bool = False) -> dict:
    """Run one export and return its figures (``run_all`` calls this too)."""
    shape = WIDE if wide else LONG
    n_inputs = shape.inputs // QUICK_FRACTION if quick else shape.inputs
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        inputs = tmp / "inputs.txt"
        _inputs(inputs, n_inputs)
        command = [
            sys.executable, "-m", "app", "batch", "export",
            "--endpoint", "http://127.0.0.1:9/v1", "--model", "bench-model",
            "--task", "sentiment", "--relations", ",".join(shape.relations),
            "--repeats", str(shape.repeats),
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
        "shape": "wide" if wide else "long",
        "inputs": n_inputs,
        "relations": len(shape.relations),
        "repeats": shape.repeats,
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
    parser.add_argument("--quick", action="store_true", help="a fiftieth of the inputs")
    parser.add_argument("--wide", action="store_true", help="5,000 inputs × 10 relations × 2")
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    args = parser.parse_args()
    figures = measure(args.quick, args.wide)
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
