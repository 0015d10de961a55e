"""Verdict counts turned into rates: the violation rate with its Wilson interval, and the sums
that let per-task counts be pooled exactly.

A rate is ``None`` when its denominator is 0: nothing was measured, which is not a rate of 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from app.analysis.catalogue.definitions import COUNTED_METRICS, VIOLATION_RATE
from app.analysis.proportions import wilson_interval
from storage.analysis_verbs import VERDICT_COUNT_KEYS

# The additive columns of a ``Store.verdict_counts`` aggregate row, which pooled rows add up, and
# ``n_changed``, which ``app.analysis.consistency.with_changed`` adds to it.
COUNT_KEYS: tuple[str, ...] = (*VERDICT_COUNT_KEYS, "n_changed")


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, ``None`` when the denominator is 0."""
    return numerator / denominator if denominator else None


def violation_rate(n_pass: int, n_fail: int) -> float | None:
    """FAIL / (PASS + FAIL), ``None`` when nothing passed or failed."""
    return ratio(n_fail, n_pass + n_fail)


def net_of_floor(rate: float | None, floor: float | None) -> float | None:
    """Violation rate net of the noise floor: max(0, rate − floor); None if either is unknown."""
    if rate is None or floor is None:
        return None
    return max(0.0, rate - floor)


def verdict_columns(counts: Mapping[str, Any]) -> dict[str, Any]:
    """The public count columns and the violation rate with its Wilson interval of one aggregate
    row: n, pass, fail, skip, error, invalid_followup (only when the aggregate counts it),
    violation_rate, ci_low, ci_high."""
    n_pass, n_fail = counts["n_pass"], counts["n_fail"]
    low, high = wilson_interval(n_fail, n_pass + n_fail)
    columns = {
        "n": counts["n"],
        "pass": n_pass,
        "fail": n_fail,
        "skip": counts["n_skip"],
        "error": counts["n_error"],
    }
    if "n_invalid_followup" in counts:
        columns["invalid_followup"] = counts["n_invalid_followup"]
    return {
        **columns,
        VIOLATION_RATE: violation_rate(n_pass, n_fail),
        "ci_low": low,
        "ci_high": high,
    }


def rates_row(counts: Mapping[str, Any]) -> dict[str, Any]:
    """The public count/rate columns of one ``verdict_counts`` aggregate row: the verdict columns,
    mean similarity, the inconsistency rate over the cases with both answers, then every
    metric the catalogue computes from the counts (``COUNTED_METRICS``)."""
    return {
        **verdict_columns(counts),
        "mean_similarity": ratio(counts["sum_similarity"], counts["n_similarity"]),
        "inconsistency_rate": ratio(counts["n_changed"], counts["n_answered"]),
        "n_answered": counts["n_answered"],
        **{metric.key: metric.from_counts.of(counts) for metric in COUNTED_METRICS},
    }


def sum_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``COUNT_KEYS`` of verdict-count rows added up (a missing count is 0)."""
    total = dict.fromkeys(COUNT_KEYS, 0)
    for row in rows:
        for key in COUNT_KEYS:
            total[key] += row[key] or 0
    return total


def sum_by(rows: Iterable[dict[str, Any]], by: tuple[str, ...]) -> list[dict[str, Any]]:
    """Verdict-count rows summed over the columns not in ``by`` (e.g. tasks), sorted by ``by``."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[c] for c in by)].append(row)
    return [
        {**dict(zip(by, key, strict=True)), **sum_counts(members)}
        for key, members in sorted(groups.items())
    ]
