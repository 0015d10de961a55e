"""A metric computed from the verdict counts: its ratio, and the sums that pooling adds up."""

from __future__ import annotations

from app.analysis.catalogue.definitions import CountRatio
from app.analysis.rates import COUNT_KEYS
from storage import Store
from tests.test_analysis_queries import seed_dataset


def test_a_count_ratio_sums_its_denominator_and_is_none_over_nothing() -> None:
    judged_share = CountRatio("n_answered", ("n_pass", "n_fail"))
    assert judged_share.of({"n_answered": 3, "n_pass": 2, "n_fail": 4}) == 0.5
    assert judged_share.of({"n_answered": 0, "n_pass": 0, "n_fail": 0}) is None


def test_every_column_of_a_verdict_counts_row_is_pooled(tmp_path) -> None:
    """Pooling per-task rows adds up exactly the row's count columns, so a new sum in
    ``VERDICT_SUMS`` is pooled with no other change."""
    store = Store(tmp_path / "m.db")
    seed_dataset(store)
    (row, *_) = store.verdict_counts(by=("model",))
    assert set(row) - {"model"} == set(COUNT_KEYS)
