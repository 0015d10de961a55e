"""The thresholded oracles: one rule object each, read by the oracles, Triage and SQL alike.

A thresholded oracle stores a measured value (a cosine, or |Δ| between two scores) and decides
PASS or FAIL by comparing it with a threshold (θ or ε). Triage recomputes stored verdicts under a
new threshold, and storage counts how many verdicts a threshold would flip in SQL. All three must
agree to the last float, so the comparison lives here once, in its Python and its SQL form.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.types import Verdict

# |Δ| comparisons get a tiny slack so that 0.8 − 0.7 (= 0.10000000000000009) stays within ε = 0.1.
NUMERIC_SLACK = 1e-12


class Violates(StrEnum):
    """Which side of the threshold is a violation."""

    BELOW = "below"  # value < θ fails (similarity should be high)
    AT_OR_ABOVE = "at_or_above"  # value ≥ θ fails (similarity should be low)
    ABOVE_WITH_SLACK = "above_with_slack"  # value > ε + slack fails (|Δ| should be small)


@dataclass(frozen=True)
class ThresholdRule:
    """How one oracle turns a stored value and a threshold into a verdict."""

    oracle: str
    measures: str  # what the stored value is, for reasons and tooltips
    symbol: str  # θ or ε
    violates: Violates
    default: float | None  # None: the default depends on the answer scale (numeric_within)

    def fails(self, value: float, threshold: float) -> bool:
        if self.violates is Violates.BELOW:
            return value < threshold
        if self.violates is Violates.AT_OR_ABOVE:
            return value >= threshold
        return value > threshold + NUMERIC_SLACK

    def verdict(self, value: float, threshold: float) -> Verdict:
        return Verdict.FAIL if self.fails(value, threshold) else Verdict.PASS

    def fail_sql(self, column: str = "c.value") -> str:
        """The same comparison as SQL, with one ``?`` parameter for the threshold."""
        if self.violates is Violates.BELOW:
            return f"{column} < ?"
        if self.violates is Violates.AT_OR_ABOVE:
            return f"{column} >= ?"
        return f"{column} > ? + {NUMERIC_SLACK!r}"

    def reason(self, value: float, threshold: float, *, source: str = "") -> str:
        """The one-line reason of a verdict under this rule."""
        suffix = f" ({source})" if source else ""
        if self.violates is Violates.ABOVE_WITH_SLACK:
            sign = ">" if self.fails(value, threshold) else "≤"
            return f"|Δ| {value:.4g} {sign} ε {threshold:.4g}{suffix}"
        sign = "≥" if value >= threshold else "<"
        return f"cosine {value:.3f} {sign} θ {threshold:.3f}{suffix}"


SEMANTIC_SIMILAR = ThresholdRule(
    "semantic_similar", "cosine of the two outputs", "θ", Violates.BELOW, 0.8
)
SEMANTIC_DIFFERENT = ThresholdRule(
    "semantic_different", "cosine of the two outputs", "θ", Violates.AT_OR_ABOVE, 0.8
)
NUMERIC_WITHIN = ThresholdRule(
    "numeric_within", "|Δ| between the two scores", "ε", Violates.ABOVE_WITH_SLACK, None
)

THRESHOLD_RULES: dict[str, ThresholdRule] = {
    rule.oracle: rule for rule in (SEMANTIC_SIMILAR, SEMANTIC_DIFFERENT, NUMERIC_WITHIN)
}


def threshold_rule(oracle: str) -> ThresholdRule:
    """The rule of a thresholded oracle; ``ValueError`` for oracles without a threshold."""
    try:
        return THRESHOLD_RULES[oracle]
    except KeyError:
        raise ValueError(f"oracle {oracle!r} has no threshold") from None
