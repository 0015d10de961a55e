"""False-positive feedback: how many labeled FAILs the labels call false positives, and the
violation rate that remains once they are taken out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd

from app.analysis.catalogue.definitions import VIOLATION_RATE
from app.analysis.catalogue.tables import FALSE_POSITIVE_RATES
from app.analysis.proportions import wilson_interval
from app.analysis.rates import violation_rate
from core.case_filter import CaseFilter
from core.types import Label
from storage.label_verbs import FALSE_POSITIVE_LABELS, LABELS

if TYPE_CHECKING:
    from storage import Store


def false_positive_rates(
    store: Store,
    flt: CaseFilter,
    *,
    labeler: str | None = None,
    by_model: bool = True,
) -> list[dict[str, Any]]:
    """Per model × relation (or per relation): how many labeled FAILs are false positives.

    fp_rate = (fp_invalid_followup + fp_oracle) / labeled FAILs, ``unsure`` excluded from both,
    with a Wilson 95% interval; violation_rate = FAIL / (PASS + FAIL); and
    confirmed_violation_rate = violation_rate × (1 − fp_rate) (None while nothing is labeled).
    Rows: the counts of ``Store.false_positive_counts`` plus labeled, false_positives, fp_rate,
    fp_ci_low, fp_ci_high, violation_rate, confirmed_violation_rate.
    """
    rows = store.false_positive_counts(flt, labeler=labeler, by_model=by_model)
    out = []
    for row in rows:
        false_positives = sum(row[label] for label in FALSE_POSITIVE_LABELS)
        labeled = false_positives + row[Label.CONFIRMED.value]
        fp_rate = false_positives / labeled if labeled else None
        low, high = wilson_interval(false_positives, labeled)
        rate = violation_rate(row["n_pass"], row["n_fail"])
        confirmed = rate * (1 - fp_rate) if rate is not None and fp_rate is not None else None
        out.append(
            {
                **row,
                "labeled": labeled,
                "false_positives": false_positives,
                "fp_rate": fp_rate,
                "fp_ci_low": low,
                "fp_ci_high": high,
                VIOLATION_RATE: rate,
                "confirmed_violation_rate": confirmed,
            }
        )
    return out


def feedback_table(store: Store, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Per relation × model: labeled FAILs, false-positive rate (Wilson 95%) and the
    confirmed violation rate = violation rate × (1 − fp rate). For the Analysis page.

    Columns: relation, model, n_pass, n_fail, labeled, confirmed, fp_invalid_followup,
    fp_oracle, unsure, fp_rate, fp_ci_low, fp_ci_high, violation_rate, confirmed_violation_rate.
    Rates are NaN where nothing is labeled.
    """
    flt = CaseFilter.make(run_ids=run_ids)
    return _rates_frame(false_positive_rates(store, flt, by_model=True), with_model=True)


def relation_feedback_table(
    store: Store,
    run_ids: Iterable[str] | None = None,
    models: Iterable[str] | None = None,
    relation_ids: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The same as ``feedback_table`` pooled over models (one row per relation)."""
    flt = CaseFilter.make(run_ids=run_ids, models=models, relations=relation_ids)
    rows = false_positive_rates(store, flt, by_model=False)
    return _rates_frame(rows, with_model=False)


def _rates_frame(rows: list[dict[str, Any]], *, with_model: bool) -> pd.DataFrame:
    columns = [
        "relation",
        *(["model"] if with_model else []),
        "n_pass",
        "n_fail",
        "labeled",
        *LABELS,
        *FALSE_POSITIVE_RATES,
    ]
    records = [{**row, "relation": row["relation_id"]} for row in rows]
    frame = pd.DataFrame.from_records(records, columns=columns)
    for column in FALSE_POSITIVE_RATES:
        frame[column] = frame[column].astype(float)
    return frame
