"""A metric computed from the verdict counts: its ratio, and the sums that pooling adds up."""

from __future__ import annotations

from app.analysis.catalogue.definitions import COUNTED_METRICS, CountRatio
from app.analysis.rates import COUNT_KEYS
from core.case_filter import CaseFilter
from storage import Store
from storage.answer_verbs import SameAnswers
from tests.test_analysis_queries import seed_dataset


def test_a_count_ratio_sums_its_denominator_and_is_none_over_nothing() -> None:
    judged_share = CountRatio("n_answered", ("n_pass", "n_fail"))
    assert judged_share.of({"n_answered": 3, "n_pass": 2, "n_fail": 4}) == 0.5
    assert judged_share.of({"n_answered": 0, "n_pass": 0, "n_fail": 0}) is None


def test_every_column_of_a_verdict_counts_row_is_pooled(tmp_path) -> None:
    """Pooling per-task rows adds up exactly the row's count columns and ``n_changed`` (counted
    given the answer pairs that are one answer), so a new sum in ``VERDICT_SUMS`` is pooled with
    no other change."""
    store = Store(tmp_path / "m.db")
    seed_dataset(store)
    (row, *_) = store.verdict_counts(CaseFilter(), by=("model",), same_answers=SameAnswers())
    assert set(row) - {"model"} == set(COUNT_KEYS)


def test_a_counted_metric_of_the_catalogue_is_a_column_of_every_rates_row(monkeypatch) -> None:
    """A catalogue entry with ``from_counts`` needs no code: ``Rates.of`` computes it from the
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
    assert rates.Rates.of(counts).metrics["answered_share"] == 0.5
    nothing = {**counts, "n_pass": 0, "n_fail": 0}
    assert rates.Rates.of(nothing).metrics["answered_share"] is None


def test_rates_columns_keep_the_tables_order() -> None:
    """A full row's columns: the verdict counts, the violation rate 4 / (2 + 4) and its interval,
    the answer rates (no similarity measured → None; 1 changed of 3 answered), then the counted
    metrics; a verdict-only row without invalid follow-ups stops after the interval."""
    from app.analysis.rates import Rates

    counts = {
        "n": 9, "n_pass": 2, "n_fail": 4, "n_skip": 1, "n_error": 1, "n_invalid_followup": 1,
        "n_similarity": 0, "sum_similarity": 0.0, "n_answered": 3, "n_changed": 1,
    }  # fmt: skip
    full = Rates.of(counts)
    assert (full.n, full.n_pass, full.n_fail, full.n_skip, full.n_error) == (9, 2, 4, 1, 1)
    assert full.violation_rate == 4 / 6
    columns = full.columns()
    assert list(columns)[:12] == [
        "n", "pass", "fail", "skip", "error", "invalid_followup", "violation_rate", "ci_low",
        "ci_high", "mean_similarity", "inconsistency_rate", "n_answered",
    ]  # fmt: skip
    assert list(columns)[12:] == [metric.key for metric in COUNTED_METRICS]
    assert (columns["mean_similarity"], columns["inconsistency_rate"]) == (None, 1 / 3)
    verdicts = {key: counts[key] for key in ("n", "n_pass", "n_fail", "n_skip", "n_error")}
    assert list(Rates.of_verdicts(verdicts).columns()) == [
        "n", "pass", "fail", "skip", "error", "violation_rate", "ci_low", "ci_high",
    ]  # fmt: skip
