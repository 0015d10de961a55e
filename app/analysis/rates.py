"""Verdict counts turned into rates: the violation rate with its Wilson interval, and the sums
that let per-task counts be pooled exactly.

A rate is ``None`` when its denominator is 0: nothing was measured, which is not a rate of 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from app.analysis.catalogue.definitions import COUNTED_METRICS, VIOLATION_RATE
from app.analysis.proportions import wilson_interval
from storage.analysis_verbs import VERDICT_COUNT_KEYS

# The additive columns of a ``Store.verdict_counts`` aggregate row, which pooled rows add up, and
# ``n_changed``, which it counts when given the answer pairs that are one answer.
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


# The rates every ``Rates`` has, in column order: the violation rate and its Wilson interval.
_VERDICT_RATES = (VIOLATION_RATE, "ci_low", "ci_high")
# The rates over judged cases' outputs and answers, which only full rows (:meth:`Rates.of`)
# have; ``n_answered`` follows them in the columns.
_ANSWER_RATES = ("mean_similarity", "inconsistency_rate")


@dataclass(frozen=True)
class Rates:
    """The counts and rates of one verdict-count aggregate row.

    The verdict counts are fields; every rate is in ``metrics``, keyed by its catalogue key
    (the violation rate and its interval, and for a full row the similarity, the inconsistency
    rate and each metric the catalogue computes from the counts), so a new counted metric is a
    catalogue entry and a SQL sum, nothing here. ``n_invalid_followup`` is None when the
    aggregate does not count it, ``n_answered`` None for a verdict-only row.
    """

    n: int
    n_pass: int
    n_fail: int
    n_skip: int
    n_error: int
    metrics: Mapping[str, float | None]
    n_invalid_followup: int | None = None
    n_answered: int | None = None

    @classmethod
    def of_verdicts(cls, counts: Mapping[str, Any]) -> Rates:
        """The verdict counts and the violation rate with its Wilson interval of a row."""
        n_pass, n_fail = counts["n_pass"], counts["n_fail"]
        low, high = wilson_interval(n_fail, n_pass + n_fail)
        return cls(
            n=counts["n"],
            n_pass=n_pass,
            n_fail=n_fail,
            n_skip=counts["n_skip"],
            n_error=counts["n_error"],
            n_invalid_followup=counts.get("n_invalid_followup"),
            metrics=dict(
                zip(_VERDICT_RATES, (violation_rate(n_pass, n_fail), low, high), strict=True)
            ),
        )

    @classmethod
    def of(cls, counts: Mapping[str, Any]) -> Rates:
        """:meth:`of_verdicts`, plus mean similarity, the inconsistency rate over the cases with
        both answers, and every metric the catalogue computes from the counts
        (``COUNTED_METRICS``): a ``verdict_counts`` row with ``n_changed``."""
        verdicts = cls.of_verdicts(counts)
        return replace(
            verdicts,
            n_answered=counts["n_answered"],
            metrics={
                **verdicts.metrics,
                "mean_similarity": ratio(counts["sum_similarity"], counts["n_similarity"]),
                "inconsistency_rate": ratio(counts["n_changed"], counts["n_answered"]),
                **{metric.key: metric.from_counts.of(counts) for metric in COUNTED_METRICS},
            },
        )

    @property
    def violation_rate(self) -> float | None:
        return self.metrics[VIOLATION_RATE]

    def columns(self) -> dict[str, Any]:
        """The public columns, in the tables' order: n, pass, fail, skip, error,
        [invalid_followup], violation_rate, ci_low, ci_high, [mean_similarity,
        inconsistency_rate, n_answered, the counted metrics]."""
        columns: dict[str, Any] = {
            "n": self.n,
            "pass": self.n_pass,
            "fail": self.n_fail,
            "skip": self.n_skip,
            "error": self.n_error,
        }
        if self.n_invalid_followup is not None:
            columns["invalid_followup"] = self.n_invalid_followup
        later = dict(self.metrics)
        columns.update((key, later.pop(key)) for key in _VERDICT_RATES)
        if self.n_answered is not None:
            columns.update((key, later.pop(key)) for key in _ANSWER_RATES)
            columns["n_answered"] = self.n_answered
        return {**columns, **later}


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
