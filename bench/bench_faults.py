"""Faults and resume: 30% of calls fail (429 with Retry-After / 500), then a kill -9.

(Timeouts are covered by tests/test_runner.py, where the client timeout can be set low.)

1. A run against a server that fails 30% of calls: every case must end PASS/FAIL/SKIP or an
   explicit ERROR; none may be lost.
2. The same kind of run killed with SIGKILL part-way, then started again: the resumed run must
   send only the prompts that were not answered before the kill.

    .venv/bin/python bench/bench_faults.py [--inputs N] [--json]

``--json`` prints one JSON object of the figures instead of the text.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from storage import Store

N_INPUTS = 40
RELATIONS = "si.identity,char.leet,sentence.uppercase"


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    return process, process.stdout.readline().strip()


def cli(db: Path, inputs: Path, url: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "run",
            "--endpoint",
            url,
            "--model",
            "fake-model",
            "--task",
            "sentiment",
            "--relations",
            RELATIONS,
            "--inputs",
            str(inputs),
            "--db",
            str(db),
            "--json",
            "--quiet",
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=N_INPUTS, help="inputs per run")
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    args = parser.parse_args()
    n_inputs = args.inputs
    say = (lambda *_: None) if args.json else print
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "inputs.jsonl"
        inputs.write_text(
            "\n".join(json.dumps({"text": f"Review {i}: it was good."}) for i in range(n_inputs))
        )
        expected = n_inputs * len(RELATIONS.split(","))

        server, url = start_server("--fault-rate", "0.3")
        db = Path(tmp) / "faults.db"
        started = time.perf_counter()
        out, _ = cli(db, inputs, url).communicate(timeout=600)
        faults_s = time.perf_counter() - started
        server.terminate()
        summary = json.loads(out)
        cases = Store(db).cases_for()
        verdicts = {}
        for case in cases:
            verdicts[case.verdict] = verdicts.get(case.verdict, 0) + 1
        errors_explained = all(c.reason for c in cases if c.verdict == "ERROR")
        say(f"30% faults: {len(cases)}/{expected} cases stored in {faults_s:.1f} s")
        say(f"  verdicts {verdicts}; every ERROR has a reason: {errors_explained}")
        say(f"  none lost: {len(cases) == expected and summary['cases'] == expected}")

        server, url = start_server("--latency", "0.05")
        db = Path(tmp) / "killed.db"
        first = cli(db, inputs, url, "--concurrency", "4")
        time.sleep(4.0)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        store = Store(db)
        answered_before_kill = store.count_calls()
        cases_before = len(store.cases_for())
        out, _ = cli(db, inputs, url).communicate(timeout=600)
        server.terminate()
        resumed = json.loads(out)
        distinct_prompts = n_inputs * 2 + n_inputs * (len(RELATIONS.split(",")) - 1)
        say(
            f"kill -9 after 4 s: {cases_before} cases and {answered_before_kill} answered calls "
            "were already saved"
        )
        say(
            f"  resumed run: {resumed['calls_made']} calls (expected "
            f"{distinct_prompts - answered_before_kill} = not yet answered); "
            f"{resumed['cases']}/{expected} cases; status {resumed['status']}"
        )
        if args.json:
            figures = {
                "inputs": n_inputs,
                "fault_rate": 0.3,
                "expected_cases": expected,
                "stored_cases": len(cases),
                "verdicts": verdicts,
                "every_error_has_a_reason": errors_explained,
                "none_lost": len(cases) == expected and summary["cases"] == expected,
                "faults_run_s": round(faults_s, 1),
                "killed_after_s": 4.0,
                "answered_before_kill": answered_before_kill,
                "resumed_calls": resumed["calls_made"],
                "resumed_calls_expected": distinct_prompts - answered_before_kill,
                "resume_sends_only_unanswered": resumed["calls_made"]
                == distinct_prompts - answered_before_kill,
                "resumed_cases": resumed["cases"],
            }
            print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
