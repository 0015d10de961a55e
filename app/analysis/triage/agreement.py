"""Agreement between labelers: observed agreement and Cohen's kappa on the cases both label."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from storage import Store


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters over the same items: (p_o − p_e) / (1 − p_e).

    p_o is the observed agreement, p_e the agreement expected from each rater's label
    frequencies. None when undefined (no items, or both raters always give one same label).

    Not ``sklearn.metrics.cohen_kappa_score`` (scikit-learn is installed only as
    sentence-transformers' dependency): the tests check this against it, but importing it costs
    about 3 s of CPU on the Triage page's first render, and it answers NaN with a warning where
    an undefined kappa should read "none".
    """
    if len(first) != len(second):
        raise ValueError("both raters must rate the same items")
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    counts_first, counts_second = Counter(first), Counter(second)
    expected = sum(counts_first[label] * counts_second[label] for label in counts_first) / (n * n)
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Agreement:
    """How two labelers agree on the cases both have a current label on."""

    labeler_a: str
    labeler_b: str
    n: int
    observed: float | None
    kappa: float | None
    disagreements: list[str] = field(default_factory=list)  # case ids


def agreement(
    store: Store, labeler_a: str, labeler_b: str, run_ids: Iterable[str] | None = None
) -> Agreement:
    """Cohen's kappa between two labelers over the cases both currently label."""
    rows = store.current_labels(per_labeler=True, run_ids=run_ids)
    by_labeler: dict[str, dict[str, str]] = {}
    for row in rows:
        by_labeler.setdefault(row["labeler"], {})[row["case_id"]] = row["label"]
    a, b = by_labeler.get(labeler_a, {}), by_labeler.get(labeler_b, {})
    common = sorted(set(a) & set(b))
    first = [a[case] for case in common]
    second = [b[case] for case in common]
    observed = (
        sum(x == y for x, y in zip(first, second, strict=True)) / len(common) if common else None
    )
    return Agreement(
        labeler_a=labeler_a,
        labeler_b=labeler_b,
        n=len(common),
        observed=observed,
        kappa=cohen_kappa(first, second),
        disagreements=[case for case in common if a[case] != b[case]],
    )


def agreement_table(store: Store, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Every pair of labelers with at least one case in common: n, observed agreement, kappa."""
    labelers = sorted({row["labeler"] for row in store.current_labels(per_labeler=True)})
    records = []
    for first, second in combinations(labelers, 2):
        result = agreement(store, first, second, run_ids)
        if result.n:
            records.append(
                {
                    "labeler_a": first,
                    "labeler_b": second,
                    "n": result.n,
                    "observed_agreement": result.observed,
                    "kappa": result.kappa,
                }
            )
    columns = ["labeler_a", "labeler_b", "n", "observed_agreement", "kappa"]
    return pd.DataFrame.from_records(records, columns=columns)
