"""Output relations: from two parsed outputs to a verdict with a value and a reason.

The oracle is chosen from the relation's expectation and the task's answer type. Every verdict
records the measured value so thresholds can be re-applied later without calling any model.
Before any oracle, the relation's source-output precondition (the end of this module) decides
whether the relation applies at all: when it does not, the case is SKIP with a reason that starts
with ``precondition: `` (oracle ``precondition``), so metrics can leave it out.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence

from core.answers import AnswerType, normalise_text, parse_number
from core.thresholds import NUMERIC_WITHIN, SEMANTIC_DIFFERENT, SEMANTIC_SIMILAR
from core.types import OracleResult, ParsedOutput, Verdict
from relations.base import CheckInput, Expectation, Relation, SourcePrecondition

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

    In this order: an unparseable source is ERROR; a source outside the relation's precondition
    is SKIP (``precondition: …``; the follow-up cannot matter then); an unparseable follow-up or
    companion is ERROR; then the oracle. Never PASS or FAIL for a case the relation does not
    apply to.
    """
    threshold = threshold if threshold is not None else relation.threshold
    answer_type = AnswerType(answer_type)
    companions = companions or {}
    if source.answer is None:
        return OracleResult(
            Verdict.ERROR, "unparseable", reason=f"source output: {source.error or 'no answer'}"
        )
    skipped = precondition_skip(relation, answer_type, source, companions)
    if skipped is not None:
        return skipped
    for name, parsed in [("follow-up", followup), *companions.items()]:
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


def answers_equivalent(answer_type: AnswerType | str, a: str, b: str) -> bool:
    """Whether two parsed answers are the same answer, by the oracles' rules for the type.

    Labels: equal ignoring case and surrounding space (the "equal_label" oracle). Scores: within
    the default absolute ε, numbers: within the default relative ε ("numeric_within"). Math and
    reasoning answers: equal text, equal plain numbers, else math-verify ("5.4 km" and "5.4" are
    one answer). Free text: equal after ``normalise_text`` (no embedding model here, so the
    semantic oracle's cosine is not used). The one rule behind every inconsistency rate.
    """
    if a == b:
        return True
    kind = AnswerType(answer_type)
    if kind is AnswerType.LABEL:
        return a.strip().lower() == b.strip().lower()
    if kind in (AnswerType.SCORE, AnswerType.NUMBER):
        x, y = parse_number(a), parse_number(b)
        if x is None or y is None:
            return normalise_text(a) == normalise_text(b)
        relative = kind is AnswerType.NUMBER
        eps = DEFAULT_RELATIVE_EPS if relative else DEFAULT_SCORE_EPS
        return numbers_close(x, y, eps, relative)[0]
    if kind in (AnswerType.MATH, AnswerType.REASONING):
        return bool(_same_answer(a, b))
    return normalise_text(a) == normalise_text(b)


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
    # A source of exactly 0.5 never gets here: it is outside the SCORE_OFF_MIDPOINT precondition.
    same_side = (x - 0.5) * (y - 0.5) >= 0
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


# ---------------------------------------------------------------- source-output preconditions
#
# LLMorph (Cho, Ruberto & Terragni, the tool paper §II.D and §III.B) attaches "verifications" to
# its relations, restrictions on the outputs that must hold for the relation to be valid, and
# reports a group that breaks one as a verification failure, not as a violation. Its catalogue
# (src/config/list_relations.json) checks the *source* output ("func_vso") of:
#   10, 25, 34, 152 (antonym, replace / remove keywords, negation; "should change"):
#       QA: not 'unknown'; NLI: not 'neutral'; RE: not 'no relation';
#       continuous sentiment: the score outside [0.4, 0.6];
#   150, 151, 154 (intensifiers; "at least as extreme"): the score is not 0.5;
#   77, 78, 79, 80 (NLI generation): the source label is 'entailment'.
# We read them by answer type, so a custom task gets the rule a built-in task of its kind gets.

PRECONDITION_PREFIX = "precondition: "
PRECONDITION_ORACLE = "precondition"
NEUTRAL_LABEL = "neutral"
ENTAILMENT_LABEL = "entailment"
NEUTRAL_SCORE_BAND = (0.4, 0.6)  # LLMorph's VerifyDifferenceRange(0.4, 0.6), ends included
MIDPOINT_SCORE = 0.5
# Free-text answers that say "no answer": QA's 'unknown', relation extraction's 'no relation'.
ABSTAINING_TEXT = re.compile(r"\b(?:unknown|no relation(?:ship)?)\b")


def _label(parsed: ParsedOutput) -> str:
    return (parsed.answer or "").strip().lower()


def _score(parsed: ParsedOutput) -> float | None:
    value = parse_number(parsed.answer or "")
    return None if value is None or math.isnan(value) else value


def _decisive(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    if answer_type is AnswerType.LABEL and _label(source) == NEUTRAL_LABEL:
        return "the source label is 'neutral': there is no decision to change"
    if answer_type is AnswerType.TEXT and ABSTAINING_TEXT.search(
        normalise_text(source.answer or "")
    ):
        return f"the source answer is {source.answer!r}: there is no answer to change"
    if answer_type is AnswerType.SCORE:
        score = _score(source)
        low, high = NEUTRAL_SCORE_BAND
        if score is not None and low <= score <= high:
            return f"the source score {score:g} is in the neutral band [{low:g}, {high:g}]"
    return None


def _off_midpoint(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    if answer_type is AnswerType.SCORE and _score(source) == MIDPOINT_SCORE:
        return "the source score is exactly 0.5: it has no side to be more extreme on"
    return None


def _entailed(
    source: ParsedOutput, companions: Mapping[str, ParsedOutput], answer_type: AnswerType
) -> str | None:
    label = _label(source)
    if label != ENTAILMENT_LABEL:
        return f"the source label is {label!r}, not 'entailment'"
    return None


DECISIVE_SOURCE = SourcePrecondition(
    name="decisive_source",
    description=(
        "The source output must take a side: not the label 'neutral', not 'unknown' or 'no "
        "relation', not a score in [0.4, 0.6] (LLMorph 10, 25, 34, 152)."
    ),
    unmet=_decisive,
)
SCORE_OFF_MIDPOINT = SourcePrecondition(
    name="score_off_midpoint",
    description="A score task's source score must not be exactly 0.5 (LLMorph 150, 151, 154).",
    unmet=_off_midpoint,
)
ENTAILED_SOURCE = SourcePrecondition(
    name="entailed_source",
    description="The source label must be 'entailment' (LLMorph 77, 78, 79, 80).",
    unmet=_entailed,
)


def source_precondition_of(relation: Relation) -> SourcePrecondition | None:
    """The relation's own precondition, else its expectation's default.

    Every "should change" relation needs a decisive source: LLMorph checks one for each of its
    "different output" relations, and a change is undefined from "no answer" or a neutral one.
    """
    if relation.source_precondition is not None:
        return relation.source_precondition
    if relation.expectation is Expectation.DIFFERENT:
        return DECISIVE_SOURCE
    return None


def precondition_skip(
    relation: Relation,
    answer_type: AnswerType | str,
    source: ParsedOutput,
    companions: Mapping[str, ParsedOutput] | None = None,
) -> OracleResult | None:
    """A SKIP (reason ``precondition: …``) when the source is outside the relation's precondition."""
    precondition = source_precondition_of(relation)
    if precondition is None:
        return None
    why = precondition.unmet(source, companions or {}, AnswerType(answer_type))
    if why is None:
        return None
    return OracleResult(
        Verdict.SKIP,
        PRECONDITION_ORACLE,
        reason=PRECONDITION_PREFIX + why,
        details={"precondition": precondition.name, "source_answer": source.answer},
    )


def is_precondition_skip(reason: str | None) -> bool:
    """True for the reason of a SKIP made by an output precondition (not by the validity gate)."""
    return reason is not None and reason.startswith(PRECONDITION_PREFIX)
