"""Confidence intervals for proportions: the Wilson score interval that the violation, noise-floor
and false-positive rates are shown with."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval of successes / n; (None, None) when n == 0."""
    if n <= 0:
        return None, None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_difference_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, z: float = Z95
) -> tuple[float | None, float | None]:
    """Interval of the difference p_a − p_b of two independent proportions: Newcombe's hybrid
    score interval (Newcombe 1998, method 10), built from each proportion's Wilson interval:

    lower = d − √((p_a − l_a)² + (u_b − p_b)²),  upper = d + √((u_a − p_a)² + (p_b − l_b)²),

    with d = p_a − p_b and (l, u) the Wilson bounds at the same z. (None, None) when either n is 0.
    """
    low_a, high_a = wilson_interval(successes_a, n_a, z)
    low_b, high_b = wilson_interval(successes_b, n_b, z)
    if low_a is None or low_b is None or high_a is None or high_b is None:
        return None, None
    p_a, p_b = successes_a / n_a, successes_b / n_b
    difference = p_a - p_b
    lower = difference - math.sqrt((p_a - low_a) ** 2 + (high_b - p_b) ** 2)
    upper = difference + math.sqrt((high_a - p_a) ** 2 + (p_b - low_b) ** 2)
    return max(-1.0, lower), min(1.0, upper)
