"""Start-up of the `morphscope` console script against `python -m app`: `relations --json`.

Both forms run the same ``app.cli.main.console``; the console script adds the editable install's
import finder. Runs are interleaved (A, B, A, B, …) so load on the machine hits both alike;
printed: the median wall time of each and their ratio, and whether the script answers under the
1.5 s target. The console script is ``.venv/bin/morphscope`` (``make install``) unless
``--script`` names another.

    .venv/bin/python bench/bench_console_start.py [--repeats 7] [--script PATH]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.5


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``argv``. On a loaded machine
    the wall time waits for a core; the CPU time is the command's own work."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs of each form (default 7)")
    parser.add_argument(
        "--script", default=str(ROOT / ".venv" / "bin" / "morphscope"), help="the console script"
    )
    args = parser.parse_args()
    if not Path(args.script).exists():
        print(f"no console script at {args.script}: run `make install` first")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        command = ["relations", "--json", "--db", db]
        module_argv = [sys.executable, "-m", "app", *command]
        script_argv = [args.script, *command]
        timed(script_argv, Path(tmp))  # creates the database and warms the disk cache
        module_runs, script_runs = [], []
        for _ in range(args.repeats):
            module_runs.append(timed(module_argv, ROOT))
            # From elsewhere than the checkout, as a user's shell would run it.
            script_runs.append(timed(script_argv, Path(tmp)))
    for name, runs in (("python -m app", module_runs), ("morphscope   ", script_runs)):
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name} relations --json : median {wall:.2f} s wall, {cpu:.2f} s CPU")
    module = statistics.median(w for w, _ in module_runs)
    script = statistics.median(w for w, _ in script_runs)
    print(f"ratio script / module (wall)     : {script / module:.2f} over {args.repeats} runs each")
    print(f"script under {TARGET_S} s (wall)       : {'yes' if script < TARGET_S else 'NO'}")
    print(f"load average now                 : {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
