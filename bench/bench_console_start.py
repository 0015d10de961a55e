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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.5


def wall_time(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


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
        wall_time(script_argv, Path(tmp))  # creates the database and warms the disk cache
        module_s, script_s = [], []
        for _ in range(args.repeats):
            module_s.append(wall_time(module_argv, ROOT))
            # From elsewhere than the checkout, as a user's shell would run it.
            script_s.append(wall_time(script_argv, Path(tmp)))
    module, script = statistics.median(module_s), statistics.median(script_s)
    print(f"python -m app relations --json : median {module:.2f} s over {args.repeats}")
    print(f"morphscope relations --json    : median {script:.2f} s over {args.repeats}")
    print(f"ratio script / module          : {script / module:.2f}")
    print(f"under {TARGET_S} s                   : {'yes' if script < TARGET_S else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
