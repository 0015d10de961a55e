"""Triage engine: false-positive feedback, threshold suggestions, label exchange and agreement.

No streamlit and no network here. Verdicts are recomputed from the *stored* measured values
(``cases.value``) only — an applied threshold never calls an endpoint or an embedding model.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import combinations, pairwise
from typing import TYPE_CHECKING, Any

import pandas as pd

from app.analysis.metrics import violation_rate
from app.analysis.proportions import wilson_interval
from core.thresholds import THRESHOLD_RULES, threshold_rule
from core.types import Label
from storage.label_verbs import FALSE_POSITIVE_LABELS, LABELS, RETRACTED

if TYPE_CHECKING:
    from storage import Store

# Oracles that compare the measured value with a threshold (core/thresholds.py holds the rules).
THRESHOLD_ORACLES: tuple[str, ...] = tuple(THRESHOLD_RULES)
# numeric_within's default depends on the answer scale, so it has none here.
DEFAULT_THRESHOLDS: dict[str, float] = {
    oracle: rule.default for oracle, rule in THRESHOLD_RULES.items() if rule.default is not None
}
# Appended to the reason of every verdict a Triage threshold recomputed.
TRIAGE_SOURCE = "threshold set in Triage"

EXPORT_COLUMNS: tuple[str, ...] = (
    "case_id",
    "labeler",
    "label",
    "note",
    "created_at",
    "retracts_created_at",
    "run_id",
    "model",
    "relation_id",
)
IMPORT_FORMATS: tuple[str, ...] = ("csv", "jsonl")


# ---------------------------------------------------------------- oracle rule


def threshold_verdict(oracle: str, value: float, threshold: float) -> str:
    """'PASS' or 'FAIL' for a stored value under a threshold (the oracles' own comparison)."""
    return threshold_rule(oracle).verdict(value, threshold).value


def threshold_reason(oracle: str, value: float, threshold: float) -> str:
    """The one-line reason of a recomputed verdict."""
    return threshold_rule(oracle).reason(value, threshold, source=TRIAGE_SOURCE)


# ---------------------------------------------------------------- false-positive feedback


def false_positive_rates(
    store: Store,
    run_ids: Iterable[str] | None = None,
    *,
    models: Iterable[str] | None = None,
    relation_ids: Iterable[str] | None = None,
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
    rows = store.false_positive_counts(
        run_ids, models=models, relation_ids=relation_ids, labeler=labeler, by_model=by_model
    )
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
                "violation_rate": rate,
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
    return _rates_frame(false_positive_rates(store, run_ids, by_model=True), with_model=True)


def relation_feedback_table(
    store: Store,
    run_ids: Iterable[str] | None = None,
    models: Iterable[str] | None = None,
    relation_ids: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The same as ``feedback_table`` pooled over models (one row per relation)."""
    rows = false_positive_rates(
        store, run_ids, models=models, relation_ids=relation_ids, by_model=False
    )
    return _rates_frame(rows, with_model=False)


def _rates_frame(rows: list[dict[str, Any]], *, with_model: bool) -> pd.DataFrame:
    columns = [
        "relation",
        *(["model"] if with_model else []),
        "n_pass",
        "n_fail",
        "labeled",
        "confirmed",
        "fp_invalid_followup",
        "fp_oracle",
        "unsure",
        "fp_rate",
        "fp_ci_low",
        "fp_ci_high",
        "violation_rate",
        "confirmed_violation_rate",
    ]
    records = [{**row, "relation": row["relation_id"]} for row in rows]
    frame = pd.DataFrame.from_records(records, columns=columns)
    for column in ("fp_rate", "fp_ci_low", "fp_ci_high", "violation_rate"):
        frame[column] = frame[column].astype(float)
    frame["confirmed_violation_rate"] = frame["confirmed_violation_rate"].astype(float)
    return frame


# ---------------------------------------------------------------- threshold suggestion


@dataclass(frozen=True)
class Suggestion:
    """A threshold for one relation × oracle that best separates its labeled FAILs.

    ``suggested_threshold`` is None when the labels cannot support a suggestion (see ``note``).
    Accuracy = share of labeled cases (confirmed / fp_oracle) whose verdict agrees with the label.
    """

    relation_id: str
    oracle: str
    n: int
    n_confirmed: int
    n_fp_oracle: int
    current_threshold: float | None
    suggested_threshold: float | None
    accuracy_before: float
    accuracy_after: float | None
    would_change: int = 0  # stored PASS/FAIL cases whose verdict the suggestion would flip
    note: str = ""

    @property
    def changes_threshold(self) -> bool:
        return self.suggested_threshold is not None and (
            self.current_threshold is None
            or not math.isclose(self.suggested_threshold, self.current_threshold)
        )


def absolute_eps_tasks(store: Store) -> list[str]:
    """Tasks whose numeric_within ε is absolute (answers are scores on [0, 1]).

    For other numbers the oracle's ε is *relative* to the numbers' size, so the stored |Δ| cannot
    be compared with a threshold directly: those cases are left out of suggestions and re-checks.
    """
    from app.inputs.tasks import BUILTIN_TASKS
    from core.answers import AnswerType

    tasks = {
        task_id for task_id, task in BUILTIN_TASKS.items() if task.answer_type is AnswerType.SCORE
    }
    tasks |= {row["id"] for row in store.custom_task_rows() if row["answer_type"] == "score"}
    return sorted(tasks)


def current_threshold(
    store: Store, relation_id: str, oracle: str, cases: Sequence[dict[str, Any]] | None = None
) -> float | None:
    """The threshold now in force: a stored override, else the one the oracle recorded in the
    details of ``cases`` (default: all the relation's cases) most often, else the default
    for the oracle (None if there is none)."""
    override = store.threshold_overrides().get(relation_id)
    if override is not None:
        return float(override)
    if cases is None:
        recorded = store.recorded_thresholds(relation_id, oracle)
    else:
        recorded = [
            threshold for threshold, _ in Counter(map(_recorded_threshold, cases)).most_common()
        ]
        recorded = [threshold for threshold in recorded if threshold is not None]
    if recorded:
        return recorded[0]
    return DEFAULT_THRESHOLDS.get(oracle)


def _recorded_threshold(case: dict[str, Any]) -> float | None:
    """θ / ε an oracle wrote into a case's details (see relations/oracles.py)."""
    details = case.get("details")
    if not isinstance(details, dict):
        return None
    for key in ("theta", "eps", "threshold"):
        if isinstance(details.get(key), int | float):
            return float(details[key])
    return None


def best_threshold(
    oracle: str,
    values: Sequence[float],
    confirmed: Sequence[bool],
    current: float | None = None,
) -> tuple[float, int]:
    """The threshold classifying the most labeled cases correctly, and that number.

    ``confirmed[i]`` says case i is a real violation (should be FAIL); otherwise it is an
    fp_oracle (should be PASS). Candidates are the midpoints between neighbouring distinct values,
    one point beyond each end, and ``current``. Ties: keep ``current`` if it is among the best,
    else the best candidate closest to it (the smallest change), else the lowest.
    """
    if not values:
        raise ValueError("no labeled values")
    distinct = sorted(set(values))
    gaps = [b - a for a, b in pairwise(distinct)]
    pad = min(gaps) / 2 if gaps else 0.01
    candidates = [(a + b) / 2 for a, b in pairwise(distinct)]
    candidates += [distinct[0] - pad, distinct[-1] + pad]
    if current is not None:
        candidates.append(current)

    def correct(threshold: float) -> int:
        return sum(
            (threshold_verdict(oracle, value, threshold) == "FAIL") == is_confirmed
            for value, is_confirmed in zip(values, confirmed, strict=True)
        )

    scored = [(correct(threshold), threshold) for threshold in candidates]
    best = max(score for score, _ in scored)
    winners = [threshold for score, threshold in scored if score == best]
    if current is not None:
        if current in winners:
            return current, best
        return min(winners, key=lambda t: (abs(t - current), t)), best
    return min(winners), best


def suggest_thresholds(
    store: Store,
    run_ids: Iterable[str] | None = None,
    *,
    labeler: str | None = None,
    min_labels: int = 4,
) -> list[Suggestion]:
    """One suggestion per relation × threshold oracle that has labeled FAILs.

    Uses cases currently labeled ``confirmed`` (should stay FAIL) or ``fp_oracle`` (the checker
    was wrong: should be PASS); fp_invalid_followup and unsure say nothing about the threshold.
    A suggestion needs ``min_labels`` such cases including at least one of each kind.
    """
    rows = store.labeled_threshold_cases(
        THRESHOLD_ORACLES, run_ids, numeric_tasks=absolute_eps_tasks(store), labeler=labeler
    )
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["relation_id"], row["oracle"]), []).append(row)
    suggestions = []
    for (relation_id, oracle), cases in sorted(groups.items()):
        values = [float(case["value"]) for case in cases]
        is_confirmed = [case["label"] == "confirmed" for case in cases]
        n_confirmed = sum(is_confirmed)
        n_fp = len(cases) - n_confirmed
        agree_now = sum(
            (case["verdict"] == "FAIL") == flag
            for case, flag in zip(cases, is_confirmed, strict=True)
        )
        current = current_threshold(store, relation_id, oracle, cases)
        base = {
            "relation_id": relation_id,
            "oracle": oracle,
            "n": len(cases),
            "n_confirmed": n_confirmed,
            "n_fp_oracle": n_fp,
            "current_threshold": current,
            "accuracy_before": agree_now / len(cases),
        }
        if len(cases) < min_labels or n_confirmed == 0 or n_fp == 0:
            note = (
                f"needs at least {min_labels} labels including both confirmed and fp_oracle "
                f"(has {n_confirmed} confirmed, {n_fp} fp_oracle)"
            )
            suggestions.append(
                Suggestion(**base, suggested_threshold=None, accuracy_after=None, note=note)
            )
            continue
        threshold, n_correct = best_threshold(oracle, values, is_confirmed, current)
        would_change = _count_flips(store, relation_id, oracle, threshold)
        suggestions.append(
            Suggestion(
                **base,
                suggested_threshold=threshold,
                accuracy_after=n_correct / len(cases),
                would_change=would_change,
            )
        )
    return suggestions


def _count_flips(store: Store, relation_id: str, oracle: str, threshold: float) -> int:
    return store.count_threshold_flips(
        relation_id, oracle, threshold, numeric_tasks=absolute_eps_tasks(store)
    )


def apply_threshold(
    store: Store, relation_id: str, threshold: float, *, oracle: str | None = None
) -> dict[str, Any]:
    """Recompute the PASS/FAIL verdicts of a relation from stored values under a new threshold.

    Atomic: the verdict updates, their history and the threshold override commit together.
    Each changed case keeps its first automatic verdict in ``original_verdict``. ``oracle`` is
    needed only when the relation's cases use more than one threshold oracle.

    Returns {"relation_id", "oracle", "threshold", "considered", "changed", "to_pass", "to_fail"}.
    """
    threshold = float(threshold)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if oracle is not None and oracle not in THRESHOLD_ORACLES:
        raise ValueError(f"oracle {oracle!r} has no threshold")

    def changes_for(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        oracles = sorted({row["oracle"] for row in rows})
        if len(oracles) > 1:
            raise ValueError(
                f"{relation_id} is judged by several threshold oracles ({', '.join(oracles)}): "
                "say which one the threshold is for"
            )
        changes = []
        for row in rows:
            value = float(row["value"])
            new_verdict = threshold_verdict(row["oracle"], value, threshold)
            if new_verdict == row["verdict"]:
                continue
            changes.append(
                {
                    "id": row["id"],
                    "old_verdict": row["verdict"],
                    "new_verdict": new_verdict,
                    "old_reason": row["reason"],
                    "new_reason": threshold_reason(row["oracle"], value, threshold),
                }
            )
        return changes

    # One write transaction: the cases read are the cases changed.
    rows, changes = store.recompute_verdicts(
        relation_id,
        [oracle] if oracle else THRESHOLD_ORACLES,
        threshold,
        changes_for,
        numeric_tasks=absolute_eps_tasks(store),
    )
    oracles = sorted({row["oracle"] for row in rows})
    return {
        "relation_id": relation_id,
        "oracle": oracles[0] if oracles else oracle,
        "threshold": threshold,
        "considered": len(rows),
        "changed": len(changes),
        "to_pass": sum(change["new_verdict"] == "PASS" for change in changes),
        "to_fail": sum(change["new_verdict"] == "FAIL" for change in changes),
    }


# ---------------------------------------------------------------- agreement


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters over the same items: (p_o − p_e) / (1 − p_e).

    p_o is the observed agreement, p_e the agreement expected from each rater's label
    frequencies. None when undefined (no items, or both raters always give one same label).
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


# ---------------------------------------------------------------- export / import


class LabelImportError(ValueError):
    """An import that was refused as a whole; ``errors`` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        shown = "; ".join(errors[:10])
        more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
        super().__init__(f"label import refused, nothing written: {shown}{more}")


def export_labels(store: Store, fmt: str = "csv", run_ids: Iterable[str] | None = None) -> str:
    """The full label history (undo entries included) as CSV or JSONL text.

    Columns: case_id, labeler, label, note, created_at, retracts_created_at (for 'retracted'
    entries: the time of the label they cancel), run_id, model, relation_id (context only).
    """
    rows = [
        {column: row.get(column) for column in EXPORT_COLUMNS} for row in store.all_labels(run_ids)
    ]
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: "" if value is None else value for key, value in row.items()})
        return buffer.getvalue()
    raise ValueError(f"unknown export format {fmt!r}; expected csv or jsonl")


class TimeOutOfRangeError(ValueError):
    """An ISO time that cannot be expressed in UTC (past year 9999 or before year 1)."""


def _normalise_time(text: str) -> str:
    """ISO time → UTC with microseconds (the form labels are stored in); ValueError if not ISO
    or out of range (year 9999 at -01:00 is past the last representable moment in UTC)."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).isoformat(timespec="microseconds")
    except OverflowError:
        raise TimeOutOfRangeError(f"{text.strip()!r} is out of range in UTC") from None


def _parse_rows(text: str, fmt: str) -> tuple[list[dict[str, Any]], list[str]]:
    errors: list[str] = []
    rows: list[dict[str, Any]] = []
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                errors.append(f"line {number}: not valid JSON ({error.msg})")
                continue
            except RecursionError:
                errors.append(f"line {number}: the JSON is nested too deeply")
                continue
            except ValueError as error:  # e.g. an integer with more digits than Python reads
                errors.append(f"line {number}: a value cannot be read ({error})")
                continue
            if not isinstance(row, dict):
                errors.append(f"line {number}: expected a JSON object")
                continue
            rows.append({"_where": f"line {number}", **row})
    elif fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in ("case_id", "label") if c not in (reader.fieldnames or [])]
        if missing:
            return [], [f"CSV header lacks column(s): {', '.join(missing)}"]
        try:
            for number, row in enumerate(reader, start=2):
                rows.append({"_where": f"row {number}", **row})
        except csv.Error as error:  # e.g. a field over the CSV module's size limit
            return [], [f"row {reader.line_num}: the CSV cannot be read ({error})"]
    else:
        raise ValueError(f"unknown import format {fmt!r}; expected csv or jsonl")
    return rows, errors


def _clean(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _labels_on_cases_never_failed(
    store: Store, rows: list[dict[str, Any]], known: set[str]
) -> list[str]:
    """Labels judge FAIL verdicts: a label on a case that is not FAIL, and never was before a
    threshold change, would count in the false-positive rates without being one."""
    errors = []
    verdicts: dict[str, tuple[str | None, str | None]] = {}
    for row in rows:
        case_id = row["case_id"]
        if row["label"] == RETRACTED or case_id not in known:
            continue
        if case_id not in verdicts:
            case = store.case(case_id)
            verdicts[case_id] = (case.verdict, case.original_verdict) if case else (None, None)
        verdict, original = verdicts[case_id]
        if "FAIL" not in (verdict, original):
            errors.append(
                f"{row['where']}: case {case_id} is {verdict}, not FAIL; only FAIL cases are labeled"
            )
    return errors


def import_labels(store: Store, text: str, fmt: str = "csv") -> dict[str, int]:
    """Add labels exported by ``export_labels`` (e.g. from a teammate's database).

    Everything is validated first — format, label names, times, that every case exists, that every
    retraction's label exists — and on any problem LabelImportError is raised with all of them and
    nothing is written. Rows identical to stored ones (same case, label, note, labeler and time)
    are skipped, so importing a file twice adds nothing the second time.

    Returns {"added", "duplicates", "rows"}.
    """
    parsed, errors = _parse_rows(text, fmt)
    cleaned: list[dict[str, Any]] = []
    for row in parsed:
        where = row["_where"]
        case_id = _clean(row.get("case_id"))
        label = _clean(row.get("label"))
        if not case_id:
            errors.append(f"{where}: missing case_id")
        if label not in (*LABELS, RETRACTED):
            errors.append(f"{where}: unknown label {label!r}")
        try:
            created_at = _normalise_time(_clean(row.get("created_at")))
        except TimeOutOfRangeError as error:
            errors.append(f"{where}: created_at {error}")
            created_at = ""
        except ValueError:
            errors.append(f"{where}: created_at {row.get('created_at')!r} is not an ISO time")
            created_at = ""
        retracts = None
        if label == RETRACTED:
            try:
                retracts = _normalise_time(_clean(row.get("retracts_created_at")))
            except ValueError:
                errors.append(f"{where}: a 'retracted' row needs retracts_created_at (ISO time)")
        cleaned.append(
            {
                "where": where,
                "case_id": case_id,
                "label": label,
                "note": _clean(row.get("note")),
                "labeler": _clean(row.get("labeler")),
                "created_at": created_at,
                "retracts_created_at": retracts,
            }
        )
    case_ids = sorted({row["case_id"] for row in cleaned if row["case_id"]})
    known = store.existing_case_ids(case_ids)
    unknown = [case_id for case_id in case_ids if case_id not in known]
    if unknown:
        listed = ", ".join(unknown[:10]) + (" …" if len(unknown) > 10 else "")
        errors.append(f"{len(unknown)} unknown case id(s) (not in this database): {listed}")
    errors += _labels_on_cases_never_failed(store, cleaned, known)
    if errors:
        raise LabelImportError(errors)

    def identity(row: dict[str, Any]) -> tuple:
        return (row["case_id"], row["label"], row["note"], row["labeler"], row["created_at"])

    existing = {identity(row) for row in store.all_labels()}
    fresh: list[dict[str, Any]] = []
    for row in sorted(cleaned, key=lambda r: (r["created_at"], r["label"] == RETRACTED)):
        key = identity(row)
        if key in existing:
            continue
        existing.add(key)
        fresh.append(row)
    try:
        added = store.insert_label_rows(fresh)
    except ValueError as error:
        raise LabelImportError([str(error)]) from None
    return {"added": added, "duplicates": len(cleaned) - added, "rows": len(cleaned)}
