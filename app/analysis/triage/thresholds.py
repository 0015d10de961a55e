"""Thresholds from labels: the threshold that best separates confirmed violations from the
checker's false positives, and the stored verdicts recomputed under a new threshold (from the
stored measured values only; no model is called).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from core.thresholds import THRESHOLD_RULES, threshold_rule

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


def threshold_verdict(oracle: str, value: float, threshold: float) -> str:
    """'PASS' or 'FAIL' for a stored value under a threshold (the oracles' own comparison)."""
    return threshold_rule(oracle).verdict(value, threshold).value


def threshold_reason(oracle: str, value: float, threshold: float) -> str:
    """The one-line reason of a recomputed verdict."""
    return threshold_rule(oracle).reason(value, threshold, source=TRIAGE_SOURCE)


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
    from core.answers import AnswerType
    from core.tasks import BUILTIN_TASKS

    tasks = {
        task_id for task_id, task in BUILTIN_TASKS.items() if task.answer_type is AnswerType.SCORE
    }
    tasks |= {row["id"] for row in store.custom_task_rows() if row["answer_type"] == "score"}
    return sorted(tasks)


def current_threshold(
    store: Store, relation_id: str, oracle: str, cases: Sequence[dict[str, Any]]
) -> float | None:
    """The threshold now in force: a stored override, else the one the oracle recorded in the
    details of ``cases`` most often, else the default for the oracle (None if there is none)."""
    override = store.threshold_overrides().get(relation_id)
    if override is not None:
        return float(override)
    recorded = [
        threshold
        for threshold, _ in Counter(map(_recorded_threshold, cases)).most_common()
        if threshold is not None
    ]
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
