"""An anytime-valid confidence sequence for a rate (the mean of 0/1 observations).

A run that stops a cell once its interval is narrow enough looks at the interval after every
round: a fixed-n interval (Wilson) read that way covers less than its nominal level, because
the stop waits for a lucky moment. A confidence sequence covers the true rate at every n at
once, so it stays valid at whatever moment the stopping rule picks.

The sequence used here is the beta-binomial mixture of Robbins (1970, "Statistical methods
related to the law of the iterated logarithm", Ann. Math. Statist. 41(5)), in the form of
Howard, Ramdas, McAuliffe & Sekhon (2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", Ann. Statist. 49(2), the beta-binomial mixture boundary for Bernoulli observations).
For a candidate rate m, after s violations in n observations, the mixture of likelihood ratios
against a Beta(a, b) prior on the rate is

    M_n(m) = B(a + s, b + n - s) / B(a, b) / (m^s (1 - m)^(n - s)).

When m is the true rate, M_n(m) is a nonnegative martingale with M_0 = 1, so by Ville's
inequality P(M_n(m) ≥ 1/alpha for some n) ≤ alpha. The sequence at n is every m with
M_n(m) < 1/alpha: an interval (log M_n is convex in m, least at s/n), found by bisection.
It depends only on (s, n), narrows like sqrt(rate·(1 - rate)·log n / n), and so is narrow
early for rates near 0 or 1. Only the standard library is used: the engine schedules with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The uniform prior: it needs the fewest observations for ±0.05 at rates between 0.3 and 0.7
# (the cells that cost most), and near 0 it is within ten observations of Jeffreys' prior.
DEFAULT_PRIOR = (1.0, 1.0)
DEFAULT_ALPHA = 0.05
_BISECTION_STEPS = 45  # halves the bracket to below 1e-13: far past any width we report


@dataclass(frozen=True)
class SequenceInterval:
    """The confidence-sequence interval for one cell after n observations with s violations."""

    violations: int
    n: int
    low: float
    high: float
    alpha: float = DEFAULT_ALPHA

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def rate(self) -> float | None:
        return self.violations / self.n if self.n else None


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def log_mixture_martingale(
    violations: int, n: int, rate: float, prior: tuple[float, float] = DEFAULT_PRIOR
) -> float:
    """log M_n(rate): the evidence (s violations in n) against the true rate being `rate`."""
    a, b = prior
    passes = n - violations
    log_likelihood = 0.0
    if violations:
        log_likelihood += violations * math.log(rate) if rate > 0 else -math.inf
    if passes:
        log_likelihood += passes * math.log1p(-rate) if rate < 1 else -math.inf
    if log_likelihood == -math.inf:
        return math.inf
    return _log_beta(a + violations, b + passes) - _log_beta(a, b) - log_likelihood


def _crossing(violations, n, inside, outside, threshold, prior) -> float:
    """The rate between `inside` (in the sequence) and `outside` where log M_n meets the
    threshold: log M_n is convex, so it crosses once between the two."""
    for _ in range(_BISECTION_STEPS):
        middle = (inside + outside) / 2
        if log_mixture_martingale(violations, n, middle, prior) < threshold:
            inside = middle
        else:
            outside = middle
    return inside


def confidence_sequence(
    violations: int,
    n: int,
    alpha: float = DEFAULT_ALPHA,
    prior: tuple[float, float] = DEFAULT_PRIOR,
) -> SequenceInterval:
    """The (1 - alpha) anytime-valid interval for the rate after `violations` in `n`."""
    if not 0 <= violations <= n:
        raise ValueError(f"violations must be between 0 and n, not {violations} of {n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
    if n == 0:
        return SequenceInterval(0, 0, 0.0, 1.0, alpha)
    threshold = math.log(1 / alpha)
    estimate = violations / n  # log M_n ≤ 0 there: the mixture never beats the best fit
    low = 0.0
    if violations > 0 and log_mixture_martingale(violations, n, 0.0, prior) >= threshold:
        low = _crossing(violations, n, estimate, 0.0, threshold, prior)
    high = 1.0
    if violations < n and log_mixture_martingale(violations, n, 1.0, prior) >= threshold:
        high = _crossing(violations, n, estimate, 1.0, threshold, prior)
    return SequenceInterval(violations, n, low, high, alpha)


def inputs_needed(rate: float, half_width: float, step: int = 1, most: int = 1_000_000) -> int:
    """How many observations a cell whose observed rate stays at `rate` takes to reach
    `half_width`, looking every `step` observations (at most `most`): what a preview quotes for
    a precision target before any verdict is known."""
    n = step
    while n < most and confidence_sequence(round(rate * n), n).half_width > half_width:
        n += step
    return min(n, most)
