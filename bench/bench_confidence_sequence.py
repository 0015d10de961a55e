"""Coverage of the confidence sequence at an adaptive stop, beside a naive Wilson interval.

Each simulated run draws a true violation rate from {0.02, 0.1, 0.3, 0.5, 0.7}, observes 0/1
outcomes in rounds (as an adaptive run does), and stops after the first round at which the
confidence sequence's half-width is ≤ the target (0.05), or when the inputs run out (4,000).
At that stopping time it records whether the sequence covers the true rate, and whether a 95%
Wilson interval of the same counts does. The sequence must cover in ≥ 95% of runs (target);
the Wilson figure shows what optional stopping does to an interval that is valid only at a
fixed n. A third column stops each run on the Wilson interval's own half-width instead (what a
naive adaptive run would do): its coverage and mean stopping n show the price of the sequence.
Numpy draws the outcomes from one seeded generator.

    .venv/bin/python bench/bench_confidence_sequence.py [--runs 2000] [--round 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.analysis.proportions import wilson_interval
from core.confidence_sequence import confidence_sequence

TRUE_RATES = (0.02, 0.1, 0.3, 0.5, 0.7)
TARGET_COVERAGE = 0.95


def simulate_run(rate: float, rng: np.random.Generator, args) -> dict:
    outcomes = rng.random(args.max_inputs) < rate
    counts = np.cumsum(outcomes)
    n = 0
    while True:
        n = min(n + args.round, args.max_inputs)
        violations = int(counts[n - 1])
        interval = confidence_sequence(violations, n)
        if interval.half_width <= args.half_width or n == args.max_inputs:
            break
    wilson_low, wilson_high = wilson_interval(violations, n)
    naive_n, naive_covers = _wilson_stop(rate, counts, args)
    return {
        "rate": rate,
        "n": n,
        "sequence_covers": interval.low <= rate <= interval.high,
        "wilson_covers": wilson_low <= rate <= wilson_high,
        "naive_n": naive_n,
        "naive_covers": naive_covers,
    }


def _wilson_stop(rate: float, counts: np.ndarray, args) -> tuple[int, bool]:
    """The same rounds, stopped on the Wilson interval's own half-width."""
    n = 0
    while True:
        n = min(n + args.round, args.max_inputs)
        low, high = wilson_interval(int(counts[n - 1]), n)
        if (high - low) / 2 <= args.half_width or n == args.max_inputs:
            return n, low <= rate <= high


def summarise(runs: list[dict]) -> dict:
    def share(key, rows):
        return sum(row[key] for row in rows) / len(rows)

    per_rate = {}
    for rate in TRUE_RATES:
        rows = [row for row in runs if row["rate"] == rate]
        if rows:
            per_rate[str(rate)] = {
                "runs": len(rows),
                "mean_n_at_stop": round(sum(row["n"] for row in rows) / len(rows), 1),
                "sequence_coverage": round(share("sequence_covers", rows), 4),
                "wilson_coverage": round(share("wilson_covers", rows), 4),
                "naive_mean_n_at_stop": round(sum(row["naive_n"] for row in rows) / len(rows), 1),
                "naive_wilson_coverage": round(share("naive_covers", rows), 4),
            }
    coverage = share("sequence_covers", runs)
    return {
        "runs": len(runs),
        "sequence_coverage": round(coverage, 4),
        "wilson_coverage_same_stop": round(share("wilson_covers", runs), 4),
        "naive_wilson_stop_coverage": round(share("naive_covers", runs), 4),
        "per_rate": per_rate,
        "target_coverage": TARGET_COVERAGE,
        "target_met": coverage >= TARGET_COVERAGE,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--round", type=int, default=20, help="inputs per round (default 20)")
    parser.add_argument("--half-width", type=float, default=0.05)
    parser.add_argument("--max-inputs", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rates = rng.choice(TRUE_RATES, size=args.runs)
    result = summarise([simulate_run(float(rate), rng, args) for rate in rates])
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['runs']} runs, stop at half-width ≤ {args.half_width} or {args.max_inputs}")
        print(
            f"{'rate':>6} {'runs':>5} {'mean n':>8} {'sequence':>9} {'wilson':>7} "
            f"{'wilson-stop n':>14} {'its coverage':>13}"
        )
        for rate, row in result["per_rate"].items():
            print(
                f"{rate:>6} {row['runs']:>5} {row['mean_n_at_stop']:>8} "
                f"{row['sequence_coverage']:>9.3f} {row['wilson_coverage']:>7.3f} "
                f"{row['naive_mean_n_at_stop']:>14} {row['naive_wilson_coverage']:>13.3f}"
            )
        print(
            f"all: sequence {result['sequence_coverage']:.3f} (target ≥ {TARGET_COVERAGE}), "
            f"Wilson at the same stop {result['wilson_coverage_same_stop']:.3f}, "
            f"stopped on Wilson's own width {result['naive_wilson_stop_coverage']:.3f}"
        )
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
