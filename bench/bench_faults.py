"""Faults and resume: 30% of calls fail (429 with Retry-After / 500), then a kill -9.

(Timeouts are covered by tests/test_runner.py, where the client timeout can be set low.)

1. A run against a server that fails 30% of calls: every case must end PASS/FAIL/SKIP or an
   explicit ERROR; none may be lost.
2. The same kind of run killed with SIGKILL part-way, then started again: the resumed run must
   send only the prompts that were not answered before the kill.

    .venv/bin/python bench/bench_faults.py
"""

from __future__ import annotations

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
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "inputs.jsonl"
        inputs.write_text(
            "\n".join(json.dumps({"text": f"Review {i}: it was good."}) for i in range(N_INPUTS))
        )
        expected = N_INPUTS * len(RELATIONS.split(","))

        server, url = start_server("--fault-rate", "0.3")
        db = Path(tmp) / "faults.db"
        started = time.perf_counter()
        out, _ = cli(db, inputs, url).communicate(timeout=600)
        server.terminate()
        summary = json.loads(out)
        cases = Store(db).cases_for()
        verdicts = {}
        for case in cases:
            verdicts[case.verdict] = verdicts.get(case.verdict, 0) + 1
        errors_explained = all(c.reason for c in cases if c.verdict == "ERROR")
        print(
            f"30% faults: {len(cases)}/{expected} cases stored in {time.perf_counter() - started:.1f} s"
        )
        print(f"  verdicts {verdicts}; every ERROR has a reason: {errors_explained}")
        print(f"  none lost: {len(cases) == expected and summary['cases'] == expected}")

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
        distinct_prompts = N_INPUTS * 2 + N_INPUTS * (len(RELATIONS.split(",")) - 1)
        print(
            f"kill -9 after 4 s: {cases_before} cases and {answered_before_kill} answered calls "
            "were already saved"
        )
        print(
            f"  resumed run: {resumed['calls_made']} calls (expected "
            f"{distinct_prompts - answered_before_kill} = not yet answered); "
            f"{resumed['cases']}/{expected} cases; status {resumed['status']}"
        )


if __name__ == "__main__":
    main()
