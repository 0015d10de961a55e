"""Regression against a baseline run: per relation, did the violation rate get worse?

For each relation both runs judged (the noise-floor relation aside), the difference of the two
violation rates d = rate(run) − rate(baseline) with Newcombe's hybrid score 95% interval
(``app.analysis.proportions.newcombe_difference_interval``). Its p-value is the one the interval
is built from: the two-sided level at which the interval's lower bound just reaches the tolerated
increase δ (``--max-increase``), so that p < 0.05 exactly when the 95% interval lies above δ (1
when d ≤ δ). The p-values of a run's relations are adjusted together (Benjamini–Hochberg,
``app.analysis.stats.benjamini_hochberg``); a relation *regressed* when its adjusted p < 0.05:
significantly worse by more than δ, after accounting for testing every relation at once.

The rates compared are the relations' own violation rates (for a "should change" relation, the
share that did not change); the noise floor is not subtracted, since each run has its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.analysis.proportions import Z95, newcombe_difference_interval

ALPHA = 0.05
# Beyond this z the interval's p-value is below 1e-500: reported as 0.
_LARGEST_Z = 40.0


@dataclass(frozen=True)
class RateChange:
    """One relation's violation rate in a run against the same relation in its baseline."""

    run_id: str
    baseline_run_id: str
    relation_id: str
    fails: int
    judged: int
    baseline_fails: int
    baseline_judged: int
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    regressed: bool

    @property
    def rate(self) -> float:
        return self.fails / self.judged

    @property
    def baseline_rate(self) -> float:
        return self.baseline_fails / self.baseline_judged

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rate": self.rate, "baseline_rate": self.baseline_rate}


def worse_by_more_than_p(
    fails: int, judged: int, baseline_fails: int, baseline_judged: int, max_increase: float
) -> float:
    """Two-sided p-value dual to the Newcombe interval for "the rate rose by more than
    ``max_increase``": 2·(1 − Φ(z*)), z* the z at which the interval's lower bound equals
    ``max_increase``; 1 when the observed rise is not above it."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def lower_minus_increase(z: float) -> float:
        low, _ = newcombe_difference_interval(fails, judged, baseline_fails, baseline_judged, z)
        return low - max_increase

    if lower_minus_increase(0.0) <= 0:
        return 1.0
    if lower_minus_increase(_LARGEST_Z) > 0:
        return 0.0
    z_star = brentq(lower_minus_increase, 0.0, _LARGEST_Z, xtol=1e-12)
    return float(min(1.0, 2 * norm.sf(z_star)))


def compare_counts(
    run_id: str,
    baseline_run_id: str,
    counts: dict[str, tuple[int, int]],
    baseline_counts: dict[str, tuple[int, int]],
    max_increase: float = 0.0,
) -> list[RateChange]:
    """Per relation both runs judged (``{relation: (fails, judged)}``, judged > 0 in each): the
    change of its violation rate, adjusted across the relations, sorted by adjusted p then id."""
    from app.analysis.stats import benjamini_hochberg

    shared = sorted(
        r for r in counts.keys() & baseline_counts.keys() if counts[r][1] and baseline_counts[r][1]
    )
    p_values = [worse_by_more_than_p(*counts[r], *baseline_counts[r], max_increase) for r in shared]
    adjusted = benjamini_hochberg(p_values)
    changes = []
    for relation_id, p, p_adj in zip(shared, p_values, adjusted, strict=True):
        fails, judged = counts[relation_id]
        base_fails, base_judged = baseline_counts[relation_id]
        low, high = newcombe_difference_interval(fails, judged, base_fails, base_judged, Z95)
        changes.append(
            RateChange(
                run_id=run_id,
                baseline_run_id=baseline_run_id,
                relation_id=relation_id,
                fails=fails,
                judged=judged,
                baseline_fails=base_fails,
                baseline_judged=base_judged,
                difference=fails / judged - base_fails / base_judged,
                ci_low=low,
                ci_high=high,
                p_value=p,
                p_adjusted=p_adj,
                regressed=p_adj is not None and p_adj < ALPHA,
            )
        )
    return sorted(changes, key=lambda c: (c.p_adjusted, c.relation_id))
