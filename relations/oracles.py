"""Output relations: from two parsed outputs to a verdict with a value and a reason.

The oracle is chosen from the relation's expectation and the task's answer type. Every verdict
records the measured value so thresholds can be re-applied later without calling any model.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence

from core.answers import AnswerType, normalise_text, parse_number
from core.thresholds import NUMERIC_WITHIN, SEMANTIC_DIFFERENT, SEMANTIC_SIMILAR
from core.types import OracleResult, ParsedOutput, Verdict
from relations.base import CheckInput, Expectation, Relation

log = logging.getLogger(__name__)
# We disable math-verify's signal-based timeouts on purpose (signals only work in the main
# thread, and oracles run wherever the runner runs); it warns about that on every call.
logging.getLogger("math_verify").setLevel(logging.ERROR)

DEFAULT_SIMILARITY = SEMANTIC_SIMILAR.default  # θ for semantic_similar / semantic_different
DEFAULT_SCORE_EPS = 0.1  # ε for scores on [0, 1]
DEFAULT_RELATIVE_EPS = 1e-6  # ε (relative) for other numbers

Similarity = Callable[[str, str], float]


def math_equal(a: str, b: str) -> bool | None:
    """math-verify equivalence; None when neither side parses as math."""
    try:
        from math_verify import parse, verify

        gold = parse(f"${a}$", parsing_timeout=None)
        pred = parse(f"${b}$", parsing_timeout=None)
        if not gold or not pred:
            return None
        return bool(verify(gold, pred, timeout_seconds=None))
    except Exception:
        log.debug("math-verify failed on %r vs %r", a, b, exc_info=True)
        return None


def numbers_close(a: float, b: float, eps: float, relative: bool) -> tuple[bool, float]:
    """(|a − b| within ε, |a − b|): ε relative to the larger magnitude, or absolute.

    The absolute form is the ``numeric_within`` threshold rule, so Triage's re-judging agrees.
    """
    diff = abs(a - b)
    if relative:
        scale = max(abs(a), abs(b), 1e-12)
        return diff <= eps * scale or diff <= 1e-12, diff
    return not NUMERIC_WITHIN.fails(diff, eps), diff


def evaluate(
    relation: Relation,
    answer_type: AnswerType,
    source: ParsedOutput,
    followup: ParsedOutput,
    similarity: Similarity,
    *,
    companions: dict[str, ParsedOutput] | None = None,
    threshold: float | None = None,
) -> OracleResult:
    """The verdict for one case under the task's ``answer_type``.

    Unparseable outputs are ERROR, never PASS or FAIL.
    """
    threshold = threshold if threshold is not None else relation.threshold
    answer_type = AnswerType(answer_type)
    companions = companions or {}
    for name, parsed in [("source", source), ("follow-up", followup), *companions.items()]:
        if parsed.answer is None:
            return OracleResult(
                Verdict.ERROR, "unparseable", reason=f"{name} output: {parsed.error or 'no answer'}"
            )
    if relation.check is not None:
        return relation.check(
            CheckInput(source, followup, companions, str(answer_type), threshold, similarity)
        )
    expectation = relation.expectation
    if expectation is Expectation.AT_LEAST_AS_EXTREME:
        return _at_least_as_extreme(source, followup, answer_type)
    want_equal = expectation is Expectation.EQUIVALENT
    if expectation not in (Expectation.EQUIVALENT, Expectation.DIFFERENT):
        return OracleResult(
            Verdict.ERROR, "none", reason=f"relation {relation.id} needs its own checker"
        )
    if answer_type is AnswerType.LABEL:
        return _labels(source.answer, followup.answer, want_equal)
    if answer_type in (AnswerType.SCORE, AnswerType.NUMBER):
        # Threshold overrides (from Triage) are absolute ε on [0, 1] scores; a relative ε for
        # other numbers is never taken from them.
        eps = threshold if answer_type is AnswerType.SCORE else None
        return _numbers(source.answer, followup.answer, want_equal, answer_type, eps)
    if answer_type in (AnswerType.MATH, AnswerType.REASONING):
        same = _same_answer(source.answer, followup.answer)
        if same is not None:
            verdict = Verdict.PASS if same == want_equal else Verdict.FAIL
            oracle = "math_equivalent" if want_equal else "math_changes"
            reason = (
                f"answers {'agree' if same else 'differ'}: {source.answer!r} vs {followup.answer!r}"
            )
            return OracleResult(
                verdict, oracle, 1.0 if same == want_equal else 0.0, reason,
                {"source_answer": source.answer, "followup_answer": followup.answer},
            )  # fmt: skip
    return _semantic(source.answer, followup.answer, want_equal, similarity, threshold)


def _labels(a: str, b: str, want_equal: bool) -> OracleResult:
    same = a == b
    holds = same == want_equal
    oracle = "equal_label" if want_equal else "label_changes"
    reason = f"label {a!r} → {b!r}" + (" (unchanged)" if same else " (changed)")
    return OracleResult(
        Verdict.PASS if holds else Verdict.FAIL, oracle, 1.0 if holds else 0.0, reason,
        {"source_label": a, "followup_label": b},
    )  # fmt: skip


def _numbers(
    a: str, b: str, want_equal: bool, answer_type: AnswerType, eps: float | None
) -> OracleResult:
    x, y = parse_number(a), parse_number(b)
    if x is None or y is None:
        return OracleResult(Verdict.ERROR, "numeric_within", reason="a number could not be read")
    relative = answer_type is not AnswerType.SCORE
    if eps is None:
        eps = DEFAULT_RELATIVE_EPS if relative else DEFAULT_SCORE_EPS
    close, diff = numbers_close(x, y, eps, relative)
    holds = close == want_equal
    oracle = "numeric_within" if want_equal else "numeric_changes"
    reason = f"|Δ| = {diff:.4g} ({x:g} → {y:g}); ε = {eps:g}"
    return OracleResult(
        Verdict.PASS if holds else Verdict.FAIL, oracle, diff, reason, {"eps": eps, "x": x, "y": y}
    )


def _same_answer(a: str, b: str) -> bool | None:
    if normalise_text(a) == normalise_text(b):
        return True
    x, y = parse_number(a), parse_number(b)
    plain_numbers = all(
        v is not None and normalise_text(s).replace(" ", "") in (f"{v:g}", s.strip())
        for v, s in ((x, a), (y, b))
    )
    if plain_numbers and x is not None and y is not None:
        return numbers_close(x, y, DEFAULT_RELATIVE_EPS, True)[0]
    return math_equal(a, b)


def _semantic(
    a: str, b: str, want_equal: bool, similarity: Similarity, threshold: float | None
) -> OracleResult:
    theta = threshold if threshold is not None else DEFAULT_SIMILARITY
    cosine = 1.0 if normalise_text(a) == normalise_text(b) else similarity(a, b)
    rule = SEMANTIC_SIMILAR if want_equal else SEMANTIC_DIFFERENT
    verdict = rule.verdict(cosine, theta)
    oracle = rule.oracle
    reason = f"cosine {cosine:.3f} {'≥' if cosine >= theta else '<'} θ {theta:.2f}"
    return OracleResult(verdict, oracle, cosine, reason, {"theta": theta})


def _at_least_as_extreme(
    source: ParsedOutput, followup: ParsedOutput, answer_type: AnswerType
) -> OracleResult:
    if answer_type is AnswerType.LABEL:
        result = _labels(source.answer or "", followup.answer or "", True)
        return OracleResult(result.verdict, "at_least_as_extreme", result.value, result.reason)
    x, y = parse_number(source.answer or ""), parse_number(followup.answer or "")
    if x is None or y is None or math.isnan(x) or math.isnan(y):
        return OracleResult(
            Verdict.ERROR, "at_least_as_extreme", reason="a score could not be read"
        )
    same_side = (x - 0.5) * (y - 0.5) >= 0 or abs(x - 0.5) < 1e-9
    holds = same_side and abs(y - 0.5) >= abs(x - 0.5) - 1e-9
    reason = f"score {x:g} → {y:g}: " + ("as extreme or more" if holds else "less extreme")
    return OracleResult(
        Verdict.PASS if holds else Verdict.FAIL, "at_least_as_extreme", 1.0 if holds else 0.0,
        reason, {"x": x, "y": y},
    )  # fmt: skip


def unparseable(oracle: str, ci: CheckInput, companions: Sequence[str] = ()) -> OracleResult | None:
    """An ERROR result when the source, the follow-up or a named companion has no answer."""
    missing = [
        name for name, out in (("source", ci.source), ("follow-up", ci.followup)) if not out.answer
    ]
    for name in companions:
        output = ci.companions.get(name)
        if output is None or not output.answer:
            missing.append(name)
    if not missing:
        return None
    return OracleResult(Verdict.ERROR, oracle, reason=f"no parsed answer for: {', '.join(missing)}")
