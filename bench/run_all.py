"""Every benchmark in one command: one JSON object of figures, each a ratio measured in this run.

Each benchmark runs as its own process (``bench/<script>.py --json``) and prints its own figures;
this script collects them, adds the peak memory of each benchmark's process tree and the CLI's
start time, and checks the targets:

- engine and whole ``run`` command vs a bare ``openai.AsyncOpenAI`` + semaphore loop on the same
  1,000 calls at the same concurrency, and vs a sequential loop (``bench_engine.py``);
- adaptive concurrency vs a server that answers 429 above N calls at once (``bench_adaptive.py``);
- the identical run again: zero calls (``bench_rerun.py``);
- every Analysis page query on 500k cases (``bench_analysis_scale.py``);
- 30 % faults and a kill -9 then resume (``bench_faults.py``; full mode only);
- the Analysis page's first chart on 500k cases in Chromium, cold and warm
  (``bench_analysis_browser.py``; full mode only);
- ``batch export`` of 100,000 request lines: seconds and peak memory (``bench_batch_export.py``);
- a free-text run (1,000 reasoning problems, every answer distinct and embedded) vs the bare
  client, and the texts it embeds per case (``bench_free_text.py``; full mode only);
- the MiniLM backends' texts/s and cosine to the reference (``bench_embedder.py``; full only);
- shrinking char.leet violations on a model that flips on '3': the most calls per case and the
  share that kept exactly that edit, and of batch rounds that kept the online edits
  (``bench_shrink.py``);
- peak memory; the start time of ``relations --json`` and ``transform``.

A benchmark script that is not there reports ``"status": "missing"`` and its targets ``null``.
Figures are ratios against baselines measured in the same run, so a loaded machine moves both;
the load average is printed with them. Exit status 1 when a measured target is missed.

    .venv/bin/python bench/run_all.py --json           # full: about 10-20 min on 2 cores
    .venv/bin/python bench/run_all.py --json --quick   # tiny sizes, seconds: checks the plumbing
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"

# The targets. "min": the figure must be at least this; "max": at most this.
TARGETS: dict[str, tuple[str, float]] = {
    "engine_vs_bare": ("min", 0.95),
    "command_vs_bare": ("min", 0.85),
    "engine_vs_sequential": ("min", 20.0),
    "adaptive_vs_capacity": ("min", 0.90),
    "adaptive_retried_share": ("max", 0.05),
    "cache_rerun_calls": ("max", 0),
    "analysis_slowest_query_s": ("max", 1.0),
    "peak_memory_mb": ("max", 1024),
    "cli_relations_json_s": ("max", 1.5),
    "cli_transform_s": ("max", 1.5),
    "analysis_first_chart_s": ("max", 2.0),
    "batch_export_s": ("max", 60.0),
    "batch_export_peak_mb": ("max", 1024),
    "free_text_command_vs_bare": ("min", 0.55),
    "embedder_short_vs_handwritten": ("min", 2.5),
    "shrink_calls_max": ("max", 40),
    "shrink_kept_one_edit_share": ("min", 1.0),
    "shrink_batch_same_edits_share": ("min", 1.0),
}


# `transform` of a relation that needs no model, as a user tries one out (then the database).
TRANSFORM_ARGS = ("--text", "a happy movie", "--json", "--db")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark script and its arguments in full and in quick mode (None: full mode only)."""

    name: str
    script: str
    full_args: tuple[str, ...]
    quick_args: tuple[str, ...] | None
    timeout_s: float


BENCHMARKS = (
    Benchmark("engine", "bench_engine.py", ("--json",), None, 1800),
    Benchmark(
        "adaptive",
        "bench_adaptive.py",
        ("--json",),
        ("--json", "--calls", "40", "--capacity", "4", "--latency", "0.02"),
        900,
    ),
    Benchmark(
        "cache_rerun",
        "bench_rerun.py",
        ("--json",),
        ("--json", "--inputs", "4", "--latency", "0.01"),
        600,
    ),
    Benchmark(
        "analysis",
        "bench_analysis_scale.py",
        ("--json",),
        ("--json", "--cases", "800"),
        3600,
    ),
    Benchmark("faults", "bench_faults.py", ("--json",), None, 900),
    Benchmark("analysis_browser", "bench_analysis_browser.py", ("--json",), None, 900),
    Benchmark("batch_export", "bench_batch_export.py", ("--json",), ("--json", "--quick"), 600),
    Benchmark("free_text", "bench_free_text.py", ("--json",), None, 1800),
    Benchmark("embedder", "bench_embedder.py", ("--json",), None, 1800),
    Benchmark("shrink", "bench_shrink.py", ("--json",), ("--json", "--quick"), 600),
)


@dataclass(frozen=True)
class Finished:
    """A finished child process: its output, wall and CPU seconds, and its tree's peak memory."""

    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    peak_memory_mb: float


def run_measured(argv: list[str], timeout_s: float) -> Finished:
    """Run ``argv`` to the end; the peak memory is the largest process of its tree (wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        # Its own session, so a timeout can stop the servers it started as well.
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT, start_new_session=True)
        reaped = threading.Event()

        def stop() -> None:
            if not reaped.is_set():
                os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout_s, stop)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            reaped.set()
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall_s = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return Finished(
            returncode=process.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            wall_s=wall_s,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_memory_mb=usage.ru_maxrss / 1024,
        )


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last JSON object printed on stdout (a bench may print lines before it)."""
    decoder = json.JSONDecoder()
    found = None
    for start, char in enumerate(text):
        if char == "{" and (start == 0 or text[start - 1] == "\n"):
            try:
                value, _ = decoder.raw_decode(text, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                found = value
    return found


def run_benchmark(bench: Benchmark, quick: bool) -> dict[str, Any]:
    script = BENCH / bench.script
    if not script.is_file():
        return {"status": "missing", "reason": f"bench/{bench.script} is not in this checkout"}
    args = bench.quick_args if quick else bench.full_args
    if args is None:
        return {"status": "skipped", "reason": "not run in quick mode (full sizes only)"}
    done = run_measured([sys.executable, str(script), *args], bench.timeout_s)
    entry: dict[str, Any] = {
        "command": " ".join(["bench/" + bench.script, *args]),
        "seconds": round(done.wall_s, 1),
        "peak_memory_mb": round(done.peak_memory_mb),
    }
    figures = last_json_object(done.stdout)
    if figures is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return entry | {
            "status": "failed",
            "reason": f"exit {done.returncode}, no JSON: " + " | ".join(tail),
        }
    # A bench exits 1 when its own target is missed but still prints its figures.
    return entry | {"status": "ok", "exit_code": done.returncode, "figures": figures}


def cli_start(repeats: int) -> dict[str, Any]:
    """Median wall and CPU seconds of fresh CLI processes, against a bare interpreter's start."""
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "start.db")
        commands = {
            "bare_python": [sys.executable, "-c", "pass"],
            "relations_json": [sys.executable, "-m", "app", "relations", "--json", "--db", db],
            "transform": [
                sys.executable,
                "-m",
                "app",
                "transform",
                "char.leet",
                *TRANSFORM_ARGS,
                db,
            ],
        }
        run_measured(commands["relations_json"], 120)  # creates the database once
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeats):
            for name, argv in commands.items():
                done = run_measured(argv, 120)
                if done.returncode != 0:
                    return {"status": "failed", "reason": f"{name}: {done.stderr.strip()[-300:]}"}
                wall[name].append(done.wall_s)
                cpu[name].append(done.cpu_s)
    median_s = {name: statistics.median(values) for name, values in wall.items()}
    bare = median_s["bare_python"]
    return {
        "status": "ok",
        "repeats": repeats,
        "seconds": {name: round(value, 3) for name, value in median_s.items()},
        "cpu_seconds": {name: round(statistics.median(v), 3) for name, v in cpu.items()},
        "relations_json_vs_bare_python": round(median_s["relations_json"] / bare, 1),
        "transform_vs_bare_python": round(median_s["transform"] / bare, 1),
    }


def _figure(benchmarks: dict[str, dict[str, Any]], name: str, *path: str) -> Any:
    entry = benchmarks.get(name, {})
    value: Any = entry.get("figures") if entry.get("status") == "ok" else None
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _engine_figure(benchmarks: dict[str, dict[str, Any]], key: str) -> Any:
    """A ratio of ``bench_engine.py``, which reports it per checkout measured (here: this one)."""
    by_code = _figure(benchmarks, "engine", "code")
    if not isinstance(by_code, dict) or not by_code:
        return _figure(benchmarks, "engine", key)
    return next(iter(by_code.values())).get(key)


def _free_text_figure(benchmarks: dict[str, dict[str, Any]], key: str) -> Any:
    """A ratio of ``bench_free_text.py``, reported for the checkout it timed (this one)."""
    by_code = _figure(benchmarks, "free_text", "code")
    if not isinstance(by_code, dict) or not by_code:
        return None
    return next(iter(by_code.values())).get(key)


def headline_figures(benchmarks: dict[str, dict[str, Any]], start: dict[str, Any]) -> dict:
    """The figures the targets are about, from the benchmarks' own JSON (None: not measured)."""
    app_peaks = [
        # The analysis bench builds its database in a child: its querying process's own peak
        # is the app's; for the others, the largest process of the benchmark's tree (the
        # engine and faults benches run `python -m app run` with the real embedding model).
        _figure(benchmarks, "analysis", "peak_memory_mb"),
        # The browser bench's tree holds Chromium: the dashboard's own peak is the app's.
        _figure(benchmarks, "analysis_browser", "app_peak_memory_mb"),
        *(
            entry.get("peak_memory_mb")
            for name, entry in benchmarks.items()
            if name in ("engine", "cache_rerun", "faults", "free_text")
            and entry.get("status") == "ok"
        ),
    ]
    measured_peaks = [peak for peak in app_peaks if peak is not None]
    seconds = start.get("seconds", {})
    return {
        "engine_vs_bare": _engine_figure(benchmarks, "engine_vs_bare"),
        "command_vs_bare": _engine_figure(benchmarks, "command_vs_bare"),
        "engine_vs_sequential": _engine_figure(benchmarks, "engine_vs_sequential"),
        # Where the whole command's seconds go: before the engine (start, imports, inputs,
        # pre-flight), the engine (planning, calls, evaluation), the exit; and their overhead.
        "command_timeline_s": _engine_figure(benchmarks, "command_timeline_s"),
        "command_overhead_s": _engine_figure(benchmarks, "command_overhead_s"),
        "adaptive_vs_capacity": _figure(benchmarks, "adaptive", "achieved_vs_capacity"),
        "adaptive_retried_share": _figure(benchmarks, "adaptive", "retried_share"),
        "cache_rerun_calls": _figure(benchmarks, "cache_rerun", "rerun_calls"),
        "cache_rerun_vs_first": _figure(benchmarks, "cache_rerun", "rerun_vs_first"),
        "analysis_cases": _figure(benchmarks, "analysis", "cases"),
        "analysis_slowest_query_s": _figure(benchmarks, "analysis", "slowest_page_query_s"),
        "analysis_slowest_vs_limit": _figure(benchmarks, "analysis", "slowest_vs_limit"),
        "peak_memory_mb": max(measured_peaks) if measured_peaks else None,
        # The worse of a cold (fresh server and browser) and a warm (new session) first visit,
        # each the median of fresh servers; and each over a bare Streamlit page drawing the
        # same chart (the floor on this machine).
        "analysis_first_chart_s": _figure(benchmarks, "analysis_browser", "first_chart_s"),
        "analysis_cold_vs_bare_page": _figure(benchmarks, "analysis_browser", "cold_vs_baseline"),
        "analysis_warm_vs_bare_page": _figure(benchmarks, "analysis_browser", "warm_vs_baseline"),
        "batch_export_lines": _figure(benchmarks, "batch_export", "requests"),
        "batch_export_s": _figure(benchmarks, "batch_export", "seconds"),
        "batch_export_peak_mb": _figure(benchmarks, "batch_export", "peak_rss_mb"),
        "free_text_command_vs_bare": _free_text_figure(benchmarks, "command_vs_bare"),
        "free_text_texts_per_case": _figure(benchmarks, "free_text", "texts_per_case"),
        "embedder_short_vs_handwritten": _figure(
            benchmarks, "embedder", "backends", "onnx-fp32", "short_vs_handwritten"
        ),
        # Shrinking a violation: the most model calls a case of up to 10 edits used, and the
        # share of cases that kept exactly the one edit the fake model flips on.
        "shrink_calls_max": _figure(benchmarks, "shrink", "calls_max_up_to_10_edits"),
        "shrink_kept_one_edit_share": _figure(benchmarks, "shrink", "kept_one_3_share"),
        # Batch rounds keep the online search's edits (the share of cases that did).
        "shrink_batch_same_edits_share": _figure(benchmarks, "shrink", "batch_same_edits_share"),
        "cli_relations_json_s": seconds.get("relations_json"),
        "cli_transform_s": seconds.get("transform"),
        "cli_relations_json_vs_bare_python": start.get("relations_json_vs_bare_python"),
    }


def targets_met(figures: dict[str, Any]) -> dict[str, bool | None]:
    """Each target: met, missed, or None when its benchmark did not run."""
    met: dict[str, bool | None] = {}
    for name, (kind, bound) in TARGETS.items():
        value = figures.get(name)
        if value is None:
            met[name] = None
        else:
            met[name] = value >= bound if kind == "min" else value <= bound
    return met


def run_all(quick: bool) -> dict[str, Any]:
    load_before = os.getloadavg()
    started = time.perf_counter()
    benchmarks = {bench.name: run_benchmark(bench, quick) for bench in BENCHMARKS}
    start = cli_start(repeats=3)
    figures = headline_figures(benchmarks, start)
    met = targets_met(figures)
    return {
        "mode": "quick" if quick else "full",
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_before": [round(x, 2) for x in load_before],
            "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "seconds": round(time.perf_counter() - started, 1),
        "figures": figures,
        "targets": {name: {kind: bound} for name, (kind, bound) in TARGETS.items()},
        "targets_met": met,
        "all_measured_targets_met": all(value is not False for value in met.values()),
        "not_measured": sorted(name for name, value in met.items() if value is None),
        "benchmarks": benchmarks,
        "cli_start": start,
    }


def print_text(result: dict[str, Any]) -> None:
    print(f"mode {result['mode']}, {result['seconds']} s, machine {result['machine']}")
    for name, entry in result["benchmarks"].items():
        print(f"  {name:12} {entry['status']:8} {entry.get('reason', '')}")
    print("figure                              value      target     met")
    for name, value in result["figures"].items():
        target = result["targets"].get(name, {})
        bound = " ".join(f"{kind} {b}" for kind, b in target.items())
        met = result["targets_met"].get(name, "")
        print(f"  {name:34} {value!s:10} {bound:10} {met}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the plumbing")
    args = parser.parse_args()
    result = run_all(args.quick)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print_text(result)
    return 0 if result["all_measured_targets_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
