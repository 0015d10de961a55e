"""A metric computed from the verdict counts: its ratio, and the sums that pooling adds up."""

from __future__ import annotations

from app.analysis.catalogue.definitions import CountRatio
from app.analysis.consistency import with_changed
from app.analysis.rates import COUNT_KEYS
from storage import Store
from tests.test_analysis_queries import seed_dataset


def test_a_count_ratio_sums_its_denominator_and_is_none_over_nothing() -> None:
    judged_share = CountRatio("n_answered", ("n_pass", "n_fail"))
    assert judged_share.of({"n_answered": 3, "n_pass": 2, "n_fail": 4}) == 0.5
    assert judged_share.of({"n_answered": 0, "n_pass": 0, "n_fail": 0}) is None


def test_every_column_of_a_verdict_counts_row_is_pooled(tmp_path) -> None:
    """Pooling per-task rows adds up exactly the row's count columns and ``n_changed`` (which
    answer equivalence adds to the row), so a new sum in ``VERDICT_SUMS`` is pooled with no
    other change."""
    store = Store(tmp_path / "m.db")
    seed_dataset(store)
    (row, *_) = with_changed(store, store.verdict_counts(by=("model",)), None, ("model",))
    assert set(row) - {"model"} == set(COUNT_KEYS)


def test_a_counted_metric_of_the_catalogue_is_a_column_of_every_rates_row(monkeypatch) -> None:
    """A catalogue entry with ``from_counts`` needs no code: ``rates_row`` computes it from the
    row's own counts (here 3 answered of 2 + 4 judged → 0.5; none judged → None)."""
    from dataclasses import replace

    from app.analysis import rates
    from app.analysis.catalogue.definitions import metric

    answered_share = replace(
        metric("violation_rate"),
        key="answered_share",
        from_counts=CountRatio("n_answered", ("n_pass", "n_fail")),
    )
    monkeypatch.setattr(rates, "COUNTED_METRICS", (answered_share,))
    counts = {
        "n": 9, "n_pass": 2, "n_fail": 4, "n_skip": 1, "n_error": 1, "n_invalid_followup": 1,
        "n_similarity": 0, "sum_similarity": 0.0, "n_answered": 3, "n_changed": 0,
    }  # fmt: skip
    assert rates.rates_row(counts)["answered_share"] == 0.5
    nothing = {**counts, "n_pass": 0, "n_fail": 0}
    assert rates.rates_row(nothing)["answered_share"] is None
