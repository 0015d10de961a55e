"""The anytime-valid confidence sequence (core/confidence_sequence.py): the beta-binomial mixture
of Robbins (1970) as given by Howard et al. (2021), checked against hand arithmetic, numerical
integration of the mixture, and an exact computation of its time-uniform error over all paths."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from app.analysis.proportions import wilson_interval
from core.confidence_sequence import confidence_sequence, inputs_needed, log_mixture_martingale


def test_no_violations_in_100_has_the_closed_form_upper_bound():
    # With the uniform prior and s = 0: M_n(m) = B(1, n+1) / (1-m)^n = 1 / ((n+1)(1-m)^n).
    # M_n(m) = 20 at (1-m)^100 = 1 / (20 * 101) = 1/2020, so m = 1 - 2020^(-1/100)
    # = 1 - exp(-7.6109 / 100) = 1 - 0.926716 = 0.073284.
    interval = confidence_sequence(0, 100, alpha=0.05, prior=(1.0, 1.0))
    assert interval.low == 0.0
    assert interval.high == pytest.approx(0.073284, abs=1e-6)


def test_all_violations_mirror_no_violations():
    # The uniform prior is symmetric: 100 of 100 gives the mirror of 0 of 100.
    interval = confidence_sequence(100, 100, prior=(1.0, 1.0))
    assert interval.high == 1.0
    assert interval.low == pytest.approx(1 - 0.073284, abs=1e-6)


@pytest.mark.parametrize(
    ("violations", "n", "rate", "prior"),
    [(3, 40, 0.2, (1.0, 1.0)), (17, 50, 0.5, (0.5, 0.5)), (120, 400, 0.25, (2.0, 3.0))],
)
def test_closed_form_equals_the_integral_of_the_likelihood_ratios(violations, n, rate, prior):
    # M_n(m) = ∫ (p/m)^s ((1-p)/(1-m))^(n-s) dBeta(a, b)(p), integrated numerically.
    a, b = prior
    passes = n - violations

    def ratio(p: float) -> float:
        log_ratio = violations * math.log(p / rate) + passes * math.log((1 - p) / (1 - rate))
        return math.exp(log_ratio) * stats.beta.pdf(p, a, b)

    numeric, _ = integrate.quad(ratio, 0, 1, points=[violations / n], limit=200)
    assert log_mixture_martingale(violations, n, rate, prior) == pytest.approx(
        math.log(numeric), abs=1e-6
    )


def test_endpoints_are_where_the_evidence_reaches_one_over_alpha():
    interval = confidence_sequence(30, 200, alpha=0.05)
    for endpoint in (interval.low, interval.high):
        assert log_mixture_martingale(30, 200, endpoint) == pytest.approx(math.log(20), abs=1e-6)
    assert interval.low < 30 / 200 < interval.high
    # Wider than the fixed-n Wilson interval, which it must be to hold at every n at once.
    wilson_low, wilson_high = wilson_interval(30, 200)
    assert interval.low < wilson_low and interval.high > wilson_high


def _probability_of_ever_excluding(rate: float, horizon: int, excluded) -> float:
    """P(the interval excludes `rate` at some n ≤ horizon) when observations are Bernoulli(rate),
    exactly: a forward pass over the count of violations, removing paths once they exclude."""
    alive = np.array([1.0])  # probability of s violations at n, among paths never excluded
    crossed = 0.0
    for n in range(1, horizon + 1):
        step = np.zeros(n + 1)
        step[:-1] += alive * (1 - rate)
        step[1:] += alive * rate
        out = np.array([excluded(s, n) for s in range(n + 1)])
        crossed += step[out].sum()
        step[out] = 0.0
        alive = step
    return crossed


def _sequence_excludes(rate):
    return lambda s, n: log_mixture_martingale(s, n, rate) >= math.log(20)


def _wilson_excludes(rate):
    def excluded(s, n):
        low, high = wilson_interval(s, n)
        return not low <= rate <= high

    return excluded


@pytest.mark.parametrize("rate", [0.05, 0.3, 0.5])
def test_time_uniform_error_is_at_most_alpha_over_every_path(rate):
    """Ville's inequality, checked exactly: over 300 looks, the sequence excludes the true rate on
    at most 5% of paths, where looking at a 95% Wilson interval after every observation
    excludes it far more often (the optional-stopping failure the sequence prevents)."""
    sequence_error = _probability_of_ever_excluding(rate, 300, _sequence_excludes(rate))
    wilson_error = _probability_of_ever_excluding(rate, 300, _wilson_excludes(rate))
    assert sequence_error <= 0.05
    assert wilson_error > 0.2


def test_half_width_shrinks_with_n_and_is_smaller_near_zero():
    assert confidence_sequence(50, 100).half_width > confidence_sequence(500, 1000).half_width
    assert confidence_sequence(5, 100).half_width < confidence_sequence(50, 100).half_width
    assert confidence_sequence(0, 0).half_width == 0.5


def test_refuses_impossible_counts():
    with pytest.raises(ValueError):
        confidence_sequence(5, 4)
    with pytest.raises(ValueError):
        confidence_sequence(1, 4, alpha=1.0)


def test_inputs_needed_for_a_precision_at_rate_zero():
    # All passes (hand arithmetic above): n = 20 gives ±0.130, n = 40 gives ±0.077.
    assert inputs_needed(0.0, 0.1, step=20) == 40
    assert inputs_needed(0.0, 0.1, step=20, most=30) == 30
