"""The one catalogue of metrics and columns: what each is called, how it is shown, what it means.

Everything that names or formats a metric reads this module: the Analysis tables
(``app.ui.analysis_view.frame``), the heatmaps (``app.analysis.figures``), the HTML report's tables, the
``report`` command's table and ``report --json`` (``REPORT_ROW_KEYS``, ``DEFINITIONS``).

Adding a metric to Analysis = one :class:`Metric` entry here (and its key in the tables that should
show it) + the code in ``app.analysis.metrics`` that computes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Unit(StrEnum):
    """How a column's values are written."""

    TEXT = "text"  # names and ids, left-aligned
    COUNT = "count"  # whole numbers
    PERCENT = "percent"  # a share in [0, 1], shown as a percentage
    DECIMAL = "decimal"  # a real number, three decimals
    P_VALUE = "p_value"  # three significant digits ("<0.001" in the HTML report)


@dataclass(frozen=True)
class HeatmapScale:
    """How a metric colours a model × relation heatmap.

    ``number_format`` is a Python format spec for the value printed in each cell; ``value_range``
    pins the colour scale (None: from the data); ``midpoint`` makes a diverging scale centre there.
    """

    colours: str
    number_format: str
    value_range: tuple[float, float] | None = None
    midpoint: float | None = None


@dataclass(frozen=True)
class Metric:
    """One metric or column.

    ``label`` is the short header of the Analysis tables, ``report_label`` the (longer) header of
    the HTML report, ``title`` the chart title (heatmaps, axes). ``definition`` (one line) is
    published in ``report --json`` under ``definition_key`` (default: the key). ``formula`` is the
    exact formula and ``source`` the paper (and section) it follows; the Analysis "Definitions"
    panel and the HTML report list every metric that has a formula.
    """

    key: str
    label: str
    unit: Unit
    definition: str = ""
    report_label: str = ""
    title: str = ""
    heatmap: HeatmapScale | None = None
    definition_key: str = ""
    formula: str = ""
    source: str = ""

    @property
    def long_label(self) -> str:
        return self.report_label or self.label


_FRACTION = (0.0, 1.0)

# Order matters: ``DEFINITIONS`` follows it, and ``report --json`` is pinned byte for byte.
_CATALOGUE: tuple[Metric, ...] = (
    # ---- names and ids
    Metric("model", "model", Unit.TEXT),
    Metric("relation_id", "relation", Unit.TEXT),
    Metric("task_id", "task", Unit.TEXT),
    Metric("side", "side", Unit.TEXT),
    Metric("id", "case", Unit.TEXT),
    Metric("verdict", "verdict", Unit.TEXT),
    Metric("reason", "reason", Unit.TEXT),
    Metric("source_answer", "source answer", Unit.TEXT),
    Metric("followup_answer", "follow-up answer", Unit.TEXT),
    # ---- counts
    Metric("n", "n", Unit.COUNT),
    Metric("pass", "pass", Unit.COUNT),
    Metric("fail", "fail", Unit.COUNT),
    Metric("skip", "skip", Unit.COUNT),
    Metric("error", "error", Unit.COUNT),
    Metric("samples", "samples", Unit.COUNT),
    Metric("labeled", "labeled", Unit.COUNT),
    Metric("n_originals", "originals", Unit.COUNT, report_label="originals with a side case"),
    Metric("n_cells", "cells", Unit.COUNT),
    Metric("repeat_index", "repeat", Unit.COUNT),
    Metric("followup_index", "follow-up", Unit.COUNT),
    # ---- the paper metrics (definitions published in report --json, in this order)
    Metric(
        "violation_rate",
        "violation",
        Unit.PERCENT,
        "FAIL / (PASS + FAIL); SKIP and ERROR excluded",
        report_label="violation rate",
        title="Violation rate",
        heatmap=HeatmapScale("Reds", ".0%", _FRACTION),
        formula="violation rate = FAIL / (PASS + FAIL)",
        source="LLMorph §I–II (an MR is violated when the outputs break the expected relation)",
    ),
    Metric(
        "ci_low",
        "CI low",
        Unit.PERCENT,
        "Wilson 95% score interval of the violation rate (z = 1.959964)",
        report_label="95% CI low",
        definition_key="ci_low/ci_high",
        formula="with p = FAIL/n, n = PASS + FAIL, z = 1.959964: (p + z²/2n ± "
        "z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1]",
        source="Wilson (1927) score interval",
    ),
    Metric("ci_high", "CI high", Unit.PERCENT, report_label="95% CI high"),
    Metric(
        "invalid_followup",
        "invalid follow-up",
        Unit.COUNT,
        "SKIPs whose reason starts with 'invalid_followup' (validity gate)",
    ),
    Metric(
        "mean_delta",
        "mean Δ",
        Unit.DECIMAL,
        "mean over (sample, relation) cells of the cell's mean Δ; Δ = Score(follow-up) "
        "− Score(source) against the reference",
        title="Mean Δ (score change)",
        heatmap=HeatmapScale("RdBu", "+.3f", midpoint=0.0),
        formula="Δ_τ(p) = cos(e(M(τ(p))), e(s*)) − cos(e(M(p)), e(s*)); mean Δ = mean over "
        "(sample, relation) cells of the cell's mean Δ",
        source="Semantic Invariance in Agentic AI §3.1, eq. 2–3",
    ),
    Metric(
        "mad",
        "mean |Δ|",
        Unit.DECIMAL,
        "mean |Δ| per observation (repeats not averaged first) over non-identity relations, "
        "contrastive included, 'should change' relations of other families left out "
        "(per relation row: that relation's observations)",
        title="Mean |Δ|",
        heatmap=HeatmapScale("Purples", ".3f"),
        formula="MAD = 1/(|T||P|) Σ_τ∈T Σ_p∈P |Δ_τ(p)|, T = the non-identity transformations",
        source="Semantic Invariance in Agentic AI §3.1, eq. 6",
    ),
    Metric(
        "stability",
        "stability",
        Unit.PERCENT,
        "share of observations with |Δ| < 0.05 (model level: identity included; "
        "stability_excl_identity without it; 'should change' relations of other families left "
        "out)",
        title="Stability (|Δ| < 0.05)",
        heatmap=HeatmapScale("Greens", ".0%", _FRACTION),
        formula="stability = #{(τ, p) : |Δ_τ(p)| < 0.05} / #{(τ, p)}, τ over every SI "
        "transformation, identity included (19 × 8 = 152 in the paper)",
        source="Semantic Invariance in Agentic AI §3.1 (stability rate)",
    ),
    Metric(
        "mean_similarity",
        "similarity",
        Unit.DECIMAL,
        "mean cosine similarity of source and follow-up outputs (all-MiniLM-L6-v2), over PASS "
        "and FAIL cases",
        report_label="mean similarity",
        title="Mean output similarity",
        heatmap=HeatmapScale("Blues", ".2f", _FRACTION),
        formula="mean over cases of cos(e(M(p)), e(M(τ(p)))), e = all-MiniLM-L6-v2",
        source="Semantic Invariance in Agentic AI §3.1, eq. 2 (cosine of sentence embeddings)",
    ),
    Metric(
        "inconsistency_rate",
        "inconsistency",
        Unit.PERCENT,
        "share of PASS and FAIL cases whose follow-up answer differs from the source answer, "
        "among cases with both answers",
        title="Inconsistency rate (answer changed)",
        heatmap=HeatmapScale("Oranges", ".0%", _FRACTION),
        formula="inconsistency = #{cases with a(τ(p)) ≠ a(p)} / #{cases with both answers}",
        source="AgentDiff §3.2 (inconsistency rate)",
    ),
    Metric(
        "noise_floor",
        "noise floor",
        Unit.PERCENT,
        "violation rate of the identity relation (unchanged input, re-sampled) per model × task,"
        " one observation per sample × repeat; over several tasks weighted by each task's cases",
        formula="noise floor(model, task) = FAIL / (PASS + FAIL) over the identity relation's "
        "judged cases, one per (sample, repeat)",
        source="Semantic Invariance in Agentic AI §3 (τ_id: baseline for sampling stochasticity)",
    ),
    Metric(
        "net_violation_rate",
        "net of floor",
        Unit.PERCENT,
        "max(0, violation_rate − noise_floor), invariance relations only, over tasks with a "
        "noise floor",
        title="Violation rate net of noise floor",
        heatmap=HeatmapScale("Reds", ".0%", _FRACTION),
        formula="net violation rate = max(0, violation rate − noise floor of the task), "
        "invariance relations only",
        source="Morphscope (violation rate net of the identity baseline)",
    ),
    Metric(
        "agentdiff_gap",
        "AgentDiff gap",
        Unit.DECIMAL,
        "per model × task: mean over meaning-bearing relations of their inconsistency (FAIL share"
        " per original, averaged over originals) − the same over presentation relations; mean "
        "over tasks (AgentDiff eqs. 1-2)",
        formula="gap = mean over meaning-bearing operators of IR(op) − mean over presentation "
        "operators of IR(op); IR(op) = mean over originals q of the FAIL share of op on q",
        source="AgentDiff §3.2, eqs. 1-2 (inconsistency rate gap)",
    ),
    # ---- further model-level and AgentDiff columns
    Metric(
        "step_score_source",
        "StepScore (source)",
        Unit.DECIMAL,
        "AvgStepScore of the source outputs' reasoning steps against the reference steps",
        report_label="AvgStepScore (source)",
        formula="StepScore_o(r, r*) = max_z cos(e(r_o), e(r*_z)); AvgStepScore(r, r*) = "
        "1/k Σ_o StepScore_o(r, r*), o over the output's k steps, reordering allowed",
        source="Semantic Invariance in Agentic AI §3.1, eq. 4",
    ),
    Metric(
        "step_score_followup",
        "StepScore (follow-up)",
        Unit.DECIMAL,
        "AvgStepScore of the follow-up outputs' reasoning steps against the reference steps",
        report_label="AvgStepScore (follow-up)",
    ),
    Metric(
        "step_score_delta",
        "StepScore Δ",
        Unit.DECIMAL,
        "mean per case of AvgStepScore(follow-up) − AvgStepScore(source)",
        report_label="AvgStepScore change",
        formula="StepScore Δ = mean over cases of AvgStepScore(M(τ(p))) − AvgStepScore(M(p))",
        source="Semantic Invariance in Agentic AI §3.1, eq. 4, compared as eq. 3 compares Score",
    ),
    Metric(
        "stability_excl_identity",
        "stability excl. identity",
        Unit.PERCENT,
        report_label="stability (excl. identity)",
    ),
    Metric("n_observations", "observations", Unit.COUNT),
    # ---- the definitions table
    Metric("metric", "metric", Unit.TEXT),
    Metric("formula", "formula", Unit.TEXT),
    Metric("source", "source", Unit.TEXT),
    Metric("definition", "definition", Unit.TEXT),
    Metric("meaning_rate", "meaning-bearing inconsistency", Unit.PERCENT),
    Metric("presentation_rate", "presentation inconsistency", Unit.PERCENT),
    Metric("gap", "gap", Unit.DECIMAL, report_label="gap (meaning − presentation)"),
    Metric("sd_gap", "sd", Unit.DECIMAL, report_label="sd of gap over tasks"),
    # ---- from Triage labels
    Metric("fp_rate", "false positives", Unit.PERCENT),
    Metric("fp_ci_low", "FP CI low", Unit.PERCENT),
    Metric("fp_ci_high", "FP CI high", Unit.PERCENT),
    Metric("confirmed_violation_rate", "confirmed violation", Unit.PERCENT),
    # ---- two runs compared
    Metric("a_n", "A cases", Unit.COUNT),
    Metric("b_n", "B cases", Unit.COUNT),
    Metric("a_violation_rate", "A violation", Unit.PERCENT),
    Metric("b_violation_rate", "B violation", Unit.PERCENT),
    Metric("violation_rate_change", "B − A", Unit.PERCENT),
    Metric("a_mean_delta", "A mean Δ", Unit.DECIMAL),
    Metric("b_mean_delta", "B mean Δ", Unit.DECIMAL),
    Metric("a_mean_similarity", "A similarity", Unit.DECIMAL),
    Metric("b_mean_similarity", "B similarity", Unit.DECIMAL),
    # ---- one case and its severity proxies
    Metric("value", "value", Unit.DECIMAL),
    Metric("delta", "Δ", Unit.DECIMAL),
    Metric("output_similarity", "similarity", Unit.DECIMAL),
    Metric("levenshtein", "edit distance", Unit.DECIMAL, title="Normalised Levenshtein distance"),
    Metric("jaccard", "Jaccard distance", Unit.DECIMAL, title="Token Jaccard distance"),
    Metric(
        "cosine_distance",
        "cosine distance",
        Unit.DECIMAL,
        "1 − cosine similarity of the source and follow-up inputs (the changed fields; "
        "all-MiniLM-L6-v2), AgentDiff's third severity proxy",
        title="Embedding cosine distance of the inputs",
    ),
    Metric("length_change", "length change", Unit.DECIMAL, title="|Length change| ratio"),
    # ---- statistical tests
    Metric("subject", "compared", Unit.TEXT),
    Metric("measure", "measure", Unit.TEXT),
    Metric("statistic", "statistic", Unit.DECIMAL),
    Metric("p_value", "p", Unit.P_VALUE),
    Metric("p_adjusted", "BH-adjusted p", Unit.P_VALUE),
    Metric("significant", "significant", Unit.TEXT),
    Metric("reading", "reading", Unit.TEXT),
)

METRICS: dict[str, Metric] = {metric.key: metric for metric in _CATALOGUE}

DEFINITIONS: dict[str, str] = {
    metric.definition_key or metric.key: metric.definition
    for metric in _CATALOGUE
    if metric.definition
}
"""Metric → one-line definition, as published in ``report --json`` and the HTML report."""

FORMULAS: tuple[Metric, ...] = tuple(metric for metric in _CATALOGUE if metric.formula)
"""The metrics with an exact formula and a source, in catalogue order (the Definitions panel)."""


def definition_rows() -> list[dict[str, str]]:
    """One row per metric with a formula (``FORMULAS``): its name, exact formula, paper source
    and one-line meaning — the Analysis "Definitions" tab and the HTML report's section."""
    return [
        {
            "metric": metric.long_label,
            "formula": metric.formula,
            "source": metric.source,
            "definition": metric.definition,
        }
        for metric in FORMULAS
    ]


HEATMAP_METRICS: dict[str, Metric] = {m.key: m for m in _CATALOGUE if m.heatmap is not None}
"""The metrics a heatmap can be coloured by."""

HEATMAP_CHOICES = (
    "violation_rate",
    "net_violation_rate",
    "mean_delta",
    "mean_similarity",
    "inconsistency_rate",
)
"""The heatmap colourings offered on the Analysis page, in order."""

SEVERITY_PROXIES: dict[str, str] = {
    key: METRICS[key].title
    for key in ("levenshtein", "jaccard", "cosine_distance", "length_change")
}
"""Severity proxy → its chart title."""

REPORT_ROW_KEYS = (
    "model",
    "relation_id",
    "n",
    "pass",
    "fail",
    "skip",
    "error",
    "violation_rate",
    "ci_low",
    "ci_high",
    "mean_delta",
    "mad",
    "stability",
    "mean_similarity",
    # extras beyond the paper's table, defined above
    "invalid_followup",
    "net_violation_rate",
    "inconsistency_rate",
)
"""The keys of one model × relation row of ``report --json``, in order."""


def metric(key: str) -> Metric:
    """The catalogue entry for ``key``; unknown keys (e.g. a sample metadata key) are text."""
    return METRICS.get(key) or Metric(key, key, Unit.TEXT)


def heatmap_title(key: str) -> str:
    """The title of a heatmap coloured by ``key`` (raises ``ValueError`` if it cannot be)."""
    if key not in HEATMAP_METRICS:
        raise ValueError(f"unknown heatmap metric {key!r}")
    return HEATMAP_METRICS[key].title


# ------------------------------------------------------------------ tables


@dataclass(frozen=True)
class Shown:
    """One column of a displayed table: the row key, its header and how values are written."""

    key: str
    label: str
    unit: Unit


Entry = str | tuple[str, str] | Shown


def table(*entries: Entry, report: bool = False) -> tuple[Shown, ...]:
    """A table layout from keys; ``(key, header)`` overrides a header for this table only.

    ``report=True`` takes the HTML report's (longer) headers.
    """
    shown = []
    for entry in entries:
        if isinstance(entry, Shown):
            shown.append(entry)
            continue
        key, label = entry if isinstance(entry, tuple) else (entry, None)
        found = metric(key)
        shown.append(Shown(key, label or (found.long_label if report else found.label), found.unit))
    return tuple(shown)


# Analysis page tables.
MODEL_RELATION_TABLE = table(
    "model",
    "relation_id",
    "n",
    "pass",
    "fail",
    "skip",
    "invalid_followup",
    "error",
    "violation_rate",
    "ci_low",
    "ci_high",
    "net_violation_rate",
    "mean_delta",
    "mad",
    "stability",
    "mean_similarity",
    "inconsistency_rate",
)
MODEL_TABLE = table(
    "model",
    ("n", "cases"),
    "violation_rate",
    "ci_low",
    "ci_high",
    "noise_floor",
    "net_violation_rate",
    ("mad", "MAD"),
    "stability",
    "stability_excl_identity",
    "mean_similarity",
    "inconsistency_rate",
    "agentdiff_gap",
)
STEP_SCORE_TABLE = table(
    "model", "relation_id", "n", "step_score_source", "step_score_followup", "step_score_delta"
)  # fmt: skip
DEFINITION_TABLE = table("metric", "formula", "source", "definition")
GAP_TABLE = table(
    "model", "n_cells", "n_originals", "meaning_rate", "presentation_rate", "gap", "sd_gap"
)  # fmt: skip
FLOOR_TABLE = table(
    "model",
    "task_id",
    ("n", "observations"),
    "pass",
    "fail",
    ("violation_rate", "noise floor"),
    "ci_low",
    "ci_high",
)
# What the Triage labels say about the FAILs (``app.analysis.triage.false_positives``), in the
# order the Analysis and Triage pages both show it.
FALSE_POSITIVE_RATES = (
    "fp_rate",
    "fp_ci_low",
    "fp_ci_high",
    "violation_rate",
    "confirmed_violation_rate",
)
TRIAGE_FEEDBACK_COLUMNS = ("labeled", *FALSE_POSITIVE_RATES)
TRIAGE_FEEDBACK_TABLE = table("model", "relation_id", *TRIAGE_FEEDBACK_COLUMNS)
TEST_TABLE = table(
    "subject", "measure", "statistic", "p_value", "p_adjusted", "significant", "reading"
)  # fmt: skip
CASE_TABLE = table(
    "id",
    "verdict",
    "value",
    "reason",
    "source_answer",
    "followup_answer",
    "delta",
    "output_similarity",
    "levenshtein",
    "jaccard",
    "length_change",
    "repeat_index",
    "followup_index",
)
COMPARE_TABLE = table(
    "relation_id",
    "a_n",
    "a_violation_rate",
    "b_n",
    "b_violation_rate",
    "violation_rate_change",
    "a_mean_delta",
    "b_mean_delta",
    "a_mean_similarity",
    "b_mean_similarity",
)


def breakdown_table(key: str) -> tuple[Shown, ...]:
    """The Analysis breakdown table for the sample metadata key ``key``."""
    return table(
        "model",
        Shown(key, key, Unit.TEXT),
        "samples",
        ("n", "cases"),
        "violation_rate",
        "ci_low",
        "ci_high",
        "mean_delta",
        "inconsistency_rate",
    )


# HTML report tables.
REPORT_MODEL_RELATION_TABLE = table(*(c.key for c in MODEL_RELATION_TABLE), report=True)
REPORT_MODEL_TABLE = table(
    "model",
    ("n", "cases (non-identity)"),
    "violation_rate",
    "ci_low",
    "ci_high",
    "noise_floor",
    "net_violation_rate",
    ("mad", "MAD"),
    ("stability", "stability (incl. identity)"),
    "stability_excl_identity",
    "mean_similarity",
    "inconsistency_rate",
    "agentdiff_gap",
    report=True,
)
REPORT_FLOOR_TABLE = table(
    "model",
    "task_id",
    ("n", "identity observations"),
    "pass",
    "fail",
    ("violation_rate", "noise floor"),
    "ci_low",
    "ci_high",
    ("inconsistency_rate", "identity inconsistency"),
    report=True,
)
REPORT_STEP_SCORE_TABLE = table(*(c.key for c in STEP_SCORE_TABLE), report=True)
REPORT_GAP_TABLE = table(*(c.key for c in GAP_TABLE), report=True)
REPORT_TEST_TABLE = table(
    "subject",
    "measure",
    # test statistics span orders of magnitude: significant digits, like the p-values
    Shown("statistic", "statistic", Unit.P_VALUE),
    "p_value",
    "p_adjusted",
    "reading",
    report=True,
)


def report_breakdown_table(key: str) -> tuple[Shown, ...]:
    """The HTML report's breakdown table for the sample metadata key ``key``."""
    return table(
        "model",
        Shown(key, key, Unit.TEXT),
        "samples",
        ("n", "cases"),
        "violation_rate",
        "mean_delta",
        "inconsistency_rate",
        report=True,
    )


# ------------------------------------------------------------------ formatting


def format_text(value: Any, unit: Unit) -> str:
    """One value as the HTML report writes it ("—" when missing)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if unit is Unit.PERCENT:
        return f"{value:.1%}"
    if unit is Unit.DECIMAL:
        return f"{value:.3f}"
    if unit is Unit.P_VALUE:
        return "<0.001" if value < 0.001 else f"{value:.3g}"
    return str(value)


# ------------------------------------------------------------------ the `report` command's table


@dataclass(frozen=True)
class TextColumn:
    """One column of a fixed-width text table: the row key, its header and its width."""

    key: str
    header: str
    width: int
    unit: Unit

    def cell(self, text: str) -> str:
        """``text`` padded to the width: text left-aligned (and cut to fit), numbers right."""
        if self.unit is Unit.TEXT:
            return f"{text[: self.width]:<{self.width}}"
        return f"{text:>{self.width}}"


CI_KEY = "ci"
"""The text table's derived column: the Wilson interval ``[ci_low, ci_high]``."""

REPORT_TEXT_TABLE = (
    TextColumn("model", "model", 28, Unit.TEXT),
    TextColumn("relation_id", "relation", 30, Unit.TEXT),
    TextColumn("n", "n", 5, Unit.COUNT),
    TextColumn("violation_rate", "viol.", 7, Unit.PERCENT),
    TextColumn(CI_KEY, "95% CI", 15, Unit.PERCENT),
    TextColumn("net_violation_rate", "net", 6, Unit.PERCENT),
)
"""The ``report`` command's model × relation table."""


def format_fraction(value: float | None, missing: str = "—") -> str:
    """A share in [0, 1] as the ``report`` command prints it (two decimals, not a percentage)."""
    return missing if value is None else f"{value:.2f}"


def format_interval(low: float | None, high: float | None) -> str:
    """A confidence interval as the ``report`` command prints it: ``[0.21, 0.94]``."""
    return f"[{format_fraction(low)}, {format_fraction(high)}]"


# ------------------------------------------------------------------ sample metadata values


MISSING_META = "(none)"
"""How a breakdown names the samples that lack the metadata key."""


def meta_value_order(value: Any) -> tuple[int, float, str]:
    """A sort key for sample metadata values, which mix types across samples (a "score" may be
    0.5 in one sample, "high" in another and missing in a third): numbers by value first, then
    text, then missing values — never a comparison between a number and a string."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return (0, float(value), "")
    if value is None or value == MISSING_META or isinstance(value, float):
        return (2, 0.0, "")
    return (1, 0.0, str(value))


# ------------------------------------------------------------------ on-screen formats (Analysis)

WIDE_INTERVAL = 0.30
"""A 95% interval wider than this (30 percentage points) marks a rate as uncertain: too few
cases to tell it apart from its neighbours (e.g. 100% from 4 cases spans 51–100%)."""

FEW_CASES = 10
"""Below this many cases a value without an interval is marked uncertain too."""

MISSING = "—"
"""What a table cell shows for a value that cannot be measured."""

_MISSING_WHY = {
    Unit.PERCENT: "no PASS or FAIL cases to count (only SKIP or ERROR, or no such cases)",
    Unit.DECIMAL: "no case carries this value (e.g. no reference answer, no embeddings, or "
    "only SKIP/ERROR cases)",
    Unit.P_VALUE: "the test needs more data",
    Unit.COUNT: "not counted here",
    Unit.TEXT: "not recorded",
}


def metric_label(key: str) -> str:
    """A human name for ``key``: its chart title, else its long label, else the key with the
    underscores made spaces (never snake_case on screen)."""
    found = METRICS.get(key)
    if found is None:
        return key.replace("_", " ")
    return found.title or found.long_label


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, written without an exponent for the
    magnitudes Analysis shows (0.000123, 0.158, 12.3, 1,230)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(value, decimals)
    if decimals == 0:
        return f"{rounded:,.0f}"
    return f"{rounded:.{decimals}f}"


def format_p_value(value: float) -> str:
    """A p-value: "p < 0.001" below a thousandth, else three significant digits."""
    return "p < 0.001" if value < 0.001 else f"p = {significant(value)}"


def format_shown(value: Any, unit: Unit, *, scaled_percent: bool = False) -> str:
    """One value as the Analysis tables show it: percentages with one decimal, other decimals
    with three significant digits, p-values as "p < 0.001", counts with thousands separators,
    "—" when missing. ``scaled_percent``: a percent value already multiplied by 100."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, str) or unit is Unit.TEXT:
        return str(value)
    if unit is Unit.PERCENT:
        return f"{value:.1f}%" if scaled_percent else f"{value:.1%}"
    if unit is Unit.P_VALUE:
        return format_p_value(float(value))
    if unit is Unit.COUNT:
        return f"{int(value):,}"
    return significant(float(value))


def column_help(key: str, unit: Unit) -> str:
    """The tooltip of a table header: what the column means and why a cell may read "—"."""
    found = METRICS.get(key)
    meaning = found.definition if found and found.definition else metric_label(key)
    if unit in (Unit.TEXT, Unit.COUNT):
        return meaning
    return f"{meaning}. {MISSING} = {_MISSING_WHY[unit]}."


def format_interval_percent(low: float | None, high: float | None) -> str:
    """A 95% interval of a rate for a chart label: "34–60%" ("" when unknown)."""
    if low is None or high is None:
        return ""
    return f"{low * 100:.0f}–{high * 100:.0f}%"
