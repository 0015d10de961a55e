"""The release gate: stored runs judged against thresholds on the violation rate — what
``morphscope gate`` and the Analysis page's Gate view both call.

(Not the *validity gate* of ``relations.validity``, which rejects a follow-up before it is sent.)

**The rate a relation is gated on.** An invariance relation (expectation "equivalent") is gated on
its *net* violation rate, the violation rate less the run's noise floor (``si.identity``), and on
the Wilson 95% interval of its violation rate less the same floor (the floor taken as fixed, as on
the heatmap), clipped at 0. Where the run measured no floor, and for every other relation, the
relation's own violation rate and Wilson interval are used: for a "should change" relation that
is the share of follow-ups whose answer did *not* change. The noise-floor relation itself is the
reference, never gated.

**The rule** (``GateSettings.mode``): ``significant`` fails a relation when its interval's lower
bound is above the max — only evidence fails a build; ``strict`` fails it unless the interval's
upper bound is below the max, and says how many more judged cases would let the observed rate
pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.analysis.proportions import wilson_interval
from app.analysis.release_thresholds import SIGNIFICANT, GateSettings

PASSED, FAILED, NOT_GATED, NO_DATA, REFERENCE = "pass", "fail", "not gated", "no data", "reference"
# The largest number of judged cases a strict verdict asks for before calling it unreachable.
_MOST_CASES = 10_000_000


@dataclass(frozen=True)
class GatedRate:
    """The rate a relation is gated on, with its 95% interval, and what it was made from."""

    rate: float | None
    ci_low: float | None
    ci_high: float | None
    violation_rate: float | None
    noise_floor: float | None  # the floor subtracted; None when the own rate is gated
    judged: int  # PASS + FAIL
    fails: int


@dataclass(frozen=True)
class RelationVerdict:
    """One relation of one run against its threshold."""

    run_id: str
    model: str
    task_id: str
    relation_id: str
    role: str  # "invariance" | "should change" | "other" | "noise floor"
    n: int
    n_pass: int
    n_fail: int
    n_skip: int
    n_error: int
    gated: GatedRate
    threshold: float | None
    outcome: str  # PASSED | FAILED | NOT_GATED | NO_DATA | REFERENCE
    more_cases_needed: int | None  # strict mode: judged cases to add; None: none or unreachable
    reason: str

    @property
    def failed(self) -> bool:
        return self.outcome == FAILED

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge_interval(
    rate: float | None, low: float | None, high: float | None, threshold: float, mode: str
) -> str:
    """PASSED or FAILED by the mode's rule; NO_DATA when nothing was judged."""
    if rate is None or low is None or high is None:
        return NO_DATA
    if mode == SIGNIFICANT:
        return FAILED if low > threshold else PASSED
    return PASSED if high < threshold else FAILED


def more_cases_needed(gated: GatedRate, threshold: float) -> int | None:
    """Strict mode: how many more judged cases, at the rate observed, would bring the interval's
    upper bound below ``threshold``; None when no number would (the rate itself is not below it).
    """
    if gated.rate is None or gated.violation_rate is None or gated.rate >= threshold:
        return None
    floor = gated.noise_floor or 0.0
    observed = gated.violation_rate

    def passes(n: int) -> bool:
        high = wilson_interval(observed * n, n)[1]  # fractional counts: the same rate at any n
        return high is not None and max(0.0, high - floor) < threshold

    high_n = max(gated.judged, 1)
    while not passes(high_n):
        high_n *= 2
        if high_n > _MOST_CASES:
            return None
    low_n = max(gated.judged, 1)
    while low_n < high_n:  # the upper bound falls as n grows: bisect for the first n that passes
        middle = (low_n + high_n) // 2
        if passes(middle):
            high_n = middle
        else:
            low_n = middle + 1
    return max(0, high_n - gated.judged)


def gated_rate(row: dict[str, Any], invariance: bool) -> GatedRate:
    """The rate of one ``model_relation_rows`` row that the gate reads (see the module doc)."""
    judged, fails = row["pass"] + row["fail"], row["fail"]
    rate, low, high = row["violation_rate"], row["ci_low"], row["ci_high"]
    floor = row.get("noise_floor") if invariance else None
    if floor is None or rate is None or low is None or high is None:
        return GatedRate(rate, low, high, rate, None, judged, fails)
    return GatedRate(
        max(0.0, rate - floor), max(0.0, low - floor), max(0.0, high - floor), rate, floor,
        judged, fails,
    )  # fmt: skip


def _reason(
    gated: GatedRate, threshold: float | None, outcome: str, mode: str, more: int | None
) -> str:
    if outcome == REFERENCE:
        return "the noise floor: the reference other rates are netted of, not gated"
    if outcome == NO_DATA:
        return "no PASS or FAIL case to judge"
    rate_name = "net rate" if gated.noise_floor is not None else "rate"
    interval = f"{gated.rate:.1%} [{gated.ci_low:.1%}, {gated.ci_high:.1%}]"
    if threshold is None:
        return f"{rate_name} {interval}; no threshold names this relation"
    if outcome == FAILED and mode == SIGNIFICANT:
        return (
            f"{rate_name} {interval}: even the interval's low end is above the max {threshold:.1%}"
        )
    if outcome == FAILED:
        extra = (
            f"; about {more} more judged cases at this rate would pass"
            if more is not None
            else "; no number of cases passes at this rate"
        )
        return f"{rate_name} {interval}: the interval reaches the max {threshold:.1%}{extra}"
    return f"{rate_name} {interval} against the max {threshold:.1%}"


def relation_verdict(
    run, row: dict[str, Any], role: str, settings: GateSettings
) -> RelationVerdict:
    """One ``model_relation_rows`` row of ``run`` judged by ``settings``."""
    gated = gated_rate(row, invariance=role == "invariance")
    threshold = (
        None if role == "noise floor" else settings.threshold_for(run.task_id, row["relation_id"])
    )
    more = None
    if role == "noise floor":
        outcome = REFERENCE
    elif gated.rate is None:
        outcome = NO_DATA
    elif threshold is None:
        outcome = NOT_GATED
    else:
        outcome = judge_interval(gated.rate, gated.ci_low, gated.ci_high, threshold, settings.mode)
        if outcome == FAILED and settings.mode != SIGNIFICANT:
            more = more_cases_needed(gated, threshold)
    return RelationVerdict(
        run_id=run.id,
        model=run.model,
        task_id=run.task_id,
        relation_id=row["relation_id"],
        role=role,
        n=row["n"],
        n_pass=row["pass"],
        n_fail=row["fail"],
        n_skip=row["skip"],
        n_error=row["error"],
        gated=gated,
        threshold=threshold,
        outcome=outcome,
        more_cases_needed=more,
        reason=_reason(gated, threshold, outcome, settings.mode, more),
    )


def relation_role(relation_id: str, roles, should_change: frozenset[str]) -> str:
    """The relation's role for the gate, from ``app.analysis.relation_roles.RelationRoles``."""
    if relation_id in roles.noise_floor:
        return "noise floor"
    if relation_id in roles.invariance:
        return "invariance"
    return "should change" if relation_id in should_change else "other"


def run_verdicts(store, run, settings: GateSettings) -> list[RelationVerdict]:
    """Every relation of one stored run judged by ``settings``, in relation order."""
    from app.analysis.aggregates import fetch_aggregates
    from app.analysis.metrics import model_relation_rows
    from core.case_filter import CaseFilter

    found = fetch_aggregates(store, CaseFilter.make(run_ids=[run.id]))
    should_change = should_change_relations(store)
    return [
        relation_verdict(
            run, row, relation_role(row["relation_id"], found.roles, should_change), settings
        )
        for row in model_relation_rows(found)
    ]


def should_change_relations(store) -> frozenset[str]:
    """Ids of the relations whose follow-up answer should differ from the source's."""
    from relations.base import Expectation
    from relations.custom import custom_relations
    from relations.registry import list_relations

    return frozenset(
        r.id
        for r in list_relations(extra=custom_relations(store))
        if r.expectation is Expectation.DIFFERENT
    )
