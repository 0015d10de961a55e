"""The planted bugs of issue 21, each applied to a copy of the tree and run against fast tests.

    python tests/mutation/planted_bugs.py            # every bug, its relevant fast tests
    python tests/mutation/planted_bugs.py --suite    # every bug, the whole fast suite
    python tests/mutation/planted_bugs.py a c        # some bugs

Each bug is a text substitution that must match its source exactly once (the script stops if
the code it plants into has changed). A bug is *caught* when pytest reports a failing test
(exit code 1); any other exit code (a collection error, no tests) counts as not caught.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run import copy_tree

ENGINE_TESTS = (  # quickest first: pytest -x stops at the first failure
    "tests/test_mutation_kills.py",
    "tests/test_call_keys.py",
    "tests/test_runner_pairing.py",
    "tests/test_runner_mock.py",
    "tests/test_store.py",
    "tests/test_batch.py",
)
METRICS_TESTS = (
    "tests/test_mutation_kills.py",
    "tests/test_thresholds.py",
    "tests/test_metrics.py",
    "tests/test_si_metrics.py",
    "tests/test_stats.py",
)


@dataclass(frozen=True)
class PlantedBug:
    key: str
    title: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


BUGS = (
    PlantedBug(
        "a",
        "partner sample off by one in the runner (Partners)",
        "app/engine/plan.py",
        "        self._start = index + 1\n",
        "        self._start = index + 2\n",
        ENGINE_TESTS,
    ),
    PlantedBug(
        "b",
        "source and follow-up outputs swapped when a case is stored",
        "app/engine/judge.py",
        '        planned["source_output"] = outputs["source"].text\n'
        '        planned["followup_output"] = outputs["followup"].text\n',
        '        planned["source_output"] = outputs["followup"].text\n'
        '        planned["followup_output"] = outputs["source"].text\n',
        ENGINE_TESTS,
    ),
    PlantedBug(
        "c",
        "the cache key ignores the model and sampling parameters",
        "core/identity.py",
        '            "model": model,\n            "params": params,\n',
        "",
        ENGINE_TESTS,
    ),
    PlantedBug(
        "d",
        "the busy-database retry removed",
        "storage/busy.py",
        "def retry_when_busy(write: Callable[[], None]) -> None:\n",
        "def retry_when_busy(write: Callable[[], None]) -> None:\n    return write()\n",
        ENGINE_TESTS,
    ),
    PlantedBug(
        "e",
        "companion calls always use repeat 0 (case_calls)",
        "app/engine/calls.py",
        "        wanted[name] = (task.messages(fields), case.repeat_index)\n",
        "        wanted[name] = (task.messages(fields), 0)\n",
        ENGINE_TESTS,
    ),
    PlantedBug(
        "f1",
        "Wilson denominator off by one",
        "app/analysis/proportions.py",
        "    p = successes / n\n",
        "    p = successes / (n + 1)\n",
        METRICS_TESTS,
    ),
    PlantedBug(
        "f2",
        "noise floor not subtracted",
        "app/analysis/rates.py",
        "    return max(0.0, rate - floor)\n",
        "    return max(0.0, rate)\n",
        METRICS_TESTS,
    ),
    PlantedBug(
        "f3",
        "threshold `>=` → `>` (semantic_different)",
        "core/thresholds.py",
        "            return value >= threshold\n",
        "            return value > threshold\n",
        METRICS_TESTS,
    ),
)


def plant(work: Path, bug: PlantedBug) -> None:
    target = work / bug.path
    text = target.read_text()
    found = text.count(bug.old)
    if found != 1:
        raise SystemExit(f"bug {bug.key}: expected the text once in {bug.path}, found {found}")
    target.write_text(text.replace(bug.old, bug.new))


def check(bug: PlantedBug, suite: bool) -> tuple[bool, str, float]:
    with tempfile.TemporaryDirectory(prefix=f"planted-{bug.key}-") as tmp:
        work = Path(tmp)
        copy_tree(work)
        plant(work, bug)
        selection = ["tests"] if suite else [t for t in bug.tests if (work / t).exists()]
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-m",
                "not slow",
                "-x",
                "-q",
                "-p",
                "no:cacheprovider",
                *selection,
            ],
            cwd=work,
            capture_output=True,
            text=True,
        )
        seconds = time.monotonic() - started
    failed = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    summary = failed[0] if failed else proc.stdout.strip().splitlines()[-1:][0]
    return proc.returncode == 1, summary, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bugs", nargs="*", help="keys: a b c d e f1 f2 f3")
    parser.add_argument("--suite", action="store_true", help="run the whole fast suite")
    args = parser.parse_args()
    missed = 0
    for bug in BUGS:
        if args.bugs and bug.key not in args.bugs and bug.key[0] not in args.bugs:
            continue
        caught, summary, seconds = check(bug, args.suite)
        missed += not caught
        verdict = "caught" if caught else "NOT CAUGHT"
        print(f"({bug.key}) {bug.title}: {verdict} in {seconds:.0f} s\n     {summary}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
