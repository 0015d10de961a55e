"""The metric catalogue's entries: every metric and column, what it is called, how it is shown
and what it means.

Everything that names a metric reads this module: the Analysis tables and the HTML report's (laid
out in :mod:`app.analysis.catalogue.tables`), the heatmaps (``app.analysis.heatmaps``), the
``report`` command and ``report --json`` (``DEFINITIONS``). Metric keys are spelled here and in
the SQL that computes them; other code names them through the constants and choices below.

Adding a metric to Analysis = one :class:`Metric` entry here (and its key in the tables and
choices that should show it) + the code in ``app.analysis.metrics`` that computes it. A metric
that is a ratio of ``Store.verdict_counts`` sums needs no code: its entry says which
(``from_counts``), and it is computed and shown in every model × relation row by itself — so a new
one is its sum in ``storage.analysis_verbs.VERDICT_SUMS`` and its entry here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.analysis.catalogue.formats import MISSING, Unit


class CellInterval(StrEnum):
    """Where the 95% interval printed in a heatmap cell comes from."""

    NONE = "none"  # a mean: the cell shows its n only
    ROW = "row"  # the row's own Wilson interval (ci_low, ci_high)
    ROW_LESS_FLOOR = "row_less_floor"  # that interval less the row's noise floor, clipped at 0
    WILSON_OVER_N = "wilson_over_n"  # a Wilson interval of the rate over the cell's n


@dataclass(frozen=True)
class HeatmapScale:
    """How a metric colours a model × relation heatmap.

    ``number_format`` is a Python format spec for the value printed in each cell; ``value_range``
    pins the colour scale (None: from the data); ``midpoint`` makes a diverging scale centre there.
    A cell's n is the row's judged (PASS + FAIL) cases, or its ``n_key`` count where the value
    rests on other observations; ``interval`` says where the cell's 95% interval comes from.
    """

    colours: str
    number_format: str
    value_range: tuple[float, float] | None = None
    midpoint: float | None = None
    interval: CellInterval = CellInterval.NONE
    n_key: str = ""


@dataclass(frozen=True)
class CountRatio:
    """A metric computed from a ``Store.verdict_counts`` row (``storage.analysis_verbs``): the
    ``numerator`` column over the sum of the ``denominator`` columns. Both are sums, so the ratio
    of pooled rows (per model, over tasks) is exact."""

    numerator: str
    denominator: tuple[str, ...]

    def of(self, counts: Mapping[str, Any]) -> float | None:
        """The ratio for one row of counts; None when the denominator is 0 (nothing measured)."""
        denominator = sum(counts[column] for column in self.denominator)
        return counts[self.numerator] / denominator if denominator else None


@dataclass(frozen=True)
class Metric:
    """One metric or column.

    ``label`` is the short header of the Analysis tables, ``report_label`` the (longer) header of
    the HTML report, ``title`` the chart title (heatmaps, axes). ``definition`` (one line) is
    published in ``report --json`` under ``definition_key`` (default: the key). ``formula`` is the
    exact formula and ``source`` the paper (and section) it follows; the Analysis "Definitions"
    panel and the HTML report list every metric that has a formula. ``from_counts``: how the
    metric is computed from the verdict counts, for one that is a column of every model ×
    relation row (the Analysis and HTML report tables, ``report --json``).
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
    from_counts: CountRatio | None = None

    @property
    def long_label(self) -> str:
        return self.report_label or self.label


VIOLATION_RATE = "violation_rate"
"""The headline metric: the default heatmap colouring, the order of the drill-down's cells."""

COMPARED_RATES = ("a_violation_rate", "b_violation_rate")
"""The violation rates of run A and run B in a row of two runs compared."""

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
    # ---- Triage's label counts (the labels' names are the Triage buttons')
    Metric("n_fail", "FAILs", Unit.COUNT),
    Metric("confirmed", "confirmed", Unit.COUNT),
    Metric("fp_invalid_followup", "invalid follow-up", Unit.COUNT),
    Metric("fp_oracle", "checker wrong", Unit.COUNT),
    Metric("unsure", "unsure", Unit.COUNT),
    Metric("n_originals", "originals", Unit.COUNT, report_label="originals with a side case"),
    Metric("n_cells", "cells", Unit.COUNT),
    Metric("repeat_index", "repeat", Unit.COUNT),
    Metric("followup_index", "follow-up", Unit.COUNT),
    # ---- the paper metrics (definitions published in report --json, in this order)
    Metric(
        VIOLATION_RATE,
        "violation",
        Unit.PERCENT,
        "FAIL / (PASS + FAIL); SKIP and ERROR excluded",
        report_label="violation rate",
        title="Violation rate",
        heatmap=HeatmapScale("Reds", ".0%", _FRACTION, interval=CellInterval.ROW),
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
        heatmap=HeatmapScale("RdBu", "+.3f", midpoint=0.0, n_key="n_observations"),
        formula="Δ_τ(p) = cos(e(M(τ(p))), e(s*)) − cos(e(M(p)), e(s*)); mean Δ = mean over "
        "(sample, relation) cells of the cell's mean Δ",
        source="Semantic Invariance in Agentic AI §3.1, eq. 2–3",
    ),
    Metric(
        "mad",
        "mean |Δ|",
        Unit.DECIMAL,
        "mean |Δ| per observation (repeats not averaged first) over the SI paper's 7 non-identity "
        "transformations (si.*, contrastive included); per relation row: that si.* relation's "
        "observations; none for identity and for relations outside si.*",
        title="Mean |Δ|",
        heatmap=HeatmapScale("Purples", ".3f"),
        formula="MAD = 1/(|T||P|) Σ_τ∈T Σ_p∈P |Δ_τ(p)|, T = the 7 non-identity si.* "
        "transformations, one term per observation",
        source="Semantic Invariance in Agentic AI §3.1, eq. 6; Table 3",
    ),
    Metric(
        "stability",
        "stability",
        Unit.PERCENT,
        "share of observations with |Δ| < 0.05 over the SI paper's 8 transformations (si.*), "
        "identity included and counted once per sample × repeat; stability_excl_identity "
        "over the 7 without identity; none for relations outside si.*",
        title="Stability (|Δ| < 0.05)",
        heatmap=HeatmapScale("Greens", ".0%", _FRACTION),
        formula="stability = #{(τ, p) : |Δ_τ(p)| < 0.05} / #{(τ, p)}, τ over the 8 si.* "
        "transformations, identity included (19 × 8 = 152 in the paper)",
        source="Semantic Invariance in Agentic AI §3.1 (Stability Rate), Table 3",
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
        "share of PASS and FAIL cases whose follow-up answer is not equivalent to the source "
        "answer (the oracles' equivalence for the task's answer type: '5.4 km' = '5.4'), among "
        "cases with both answers",
        title="Inconsistency rate (answer changed)",
        heatmap=HeatmapScale(
            "Oranges", ".0%", _FRACTION, interval=CellInterval.WILSON_OVER_N, n_key="n_answered"
        ),
        formula="inconsistency = #{cases with a(τ(p)) ≢ a(p)} / #{cases with both answers}, ≡ "
        "= equal labels, numbers within the oracle's ε, math-verify equivalence, equal "
        "normalised text",
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
        heatmap=HeatmapScale("Reds", ".0%", _FRACTION, interval=CellInterval.ROW_LESS_FLOOR),
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
        report_label="stability (SI, excl. identity)",
    ),
    Metric(
        "invariance_stability",
        "invariance stability",
        Unit.PERCENT,
        "share of observations with |Δ| < 0.05 over every invariance relation (expectation "
        "'equivalent', any family), identity counted once per sample × repeat; wider than the "
        "SI paper's stability",
        formula="invariance stability = #{(τ, p) : |Δ_τ(p)| < 0.05} / #{(τ, p)}, τ over every "
        "relation whose expectation is 'equivalent'",
        source="Morphscope (the SI paper's Stability Rate widened to every invariance relation)",
    ),
    Metric("n_observations", "observations", Unit.COUNT),
    Metric("n_mad_observations", "MAD observations", Unit.COUNT),
    Metric("n_stability_observations", "stability observations", Unit.COUNT),
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
    Metric(COMPARED_RATES[0], "A violation", Unit.PERCENT),
    Metric(COMPARED_RATES[1], "B violation", Unit.PERCENT),
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
    Metric(
        "mann_whitney",
        "Mann-Whitney U",
        Unit.TEXT,
        "two models compared on per-observation |Δ| (one per judged case, identity left out) "
        "over the invariance relations; the violation indicator per case when a model has "
        "fewer than two observations",
        formula="U on {|Δ_τ(p)| of A} vs {|Δ_τ(p)| of B}, one value per observation, τ over "
        "relations with expectation 'equivalent' except identity; BH-adjusted over model pairs",
        source="Semantic Invariance in Agentic AI §3.1 (Δ, eq. 3; unit of MAD, eq. 6), §4–5 "
        "(Mann-Whitney U; Table 4)",
    ),
    Metric(
        "kruskal_wallis",
        "Kruskal-Wallis H",
        Unit.TEXT,
        "within one model, one group per invariance relation (identity included, once per "
        "sample × repeat) of per-observation |Δ|; the violation indicator per case when fewer "
        "than two relations have observations",
        formula="H over groups {|Δ_τ(p)|}_τ, one value per observation, τ over relations with "
        "expectation 'equivalent'; BH-adjusted over models",
        source="Semantic Invariance in Agentic AI §3.1 (unit of MAD, eq. 6), §4–5 (Kruskal-Wallis)",
    ),
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

COUNTED_METRICS: tuple[Metric, ...] = tuple(m for m in _CATALOGUE if m.from_counts is not None)
"""The metrics computed from the verdict counts (``from_counts``), in catalogue order: the last
columns of every model × relation row."""

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
    VIOLATION_RATE,
    "net_violation_rate",
    "mean_delta",
    "mean_similarity",
    "inconsistency_rate",
)
"""The heatmap colourings offered on the Analysis page, in order."""

REPORT_HEATMAPS = (VIOLATION_RATE, "mean_delta", "mean_similarity")
"""The heatmaps of the HTML report, in order (each drawn where some row has a value)."""

BREAKDOWN_CHOICES = (VIOLATION_RATE, "inconsistency_rate", "mean_delta")
"""The metrics a breakdown by sample metadata can chart on the Analysis page, in order."""

SEVERITY_PROXIES: dict[str, str] = {
    key: METRICS[key].title
    for key in ("levenshtein", "jaccard", "cosine_distance", "length_change")
}
"""Severity proxy → its chart title."""


def metric(key: str) -> Metric:
    """The catalogue entry for ``key``; unknown keys (e.g. a sample metadata key) are text."""
    return METRICS.get(key) or Metric(key, key, Unit.TEXT)


def heatmap_title(key: str) -> str:
    """The title of a heatmap coloured by ``key`` (raises ``ValueError`` if it cannot be)."""
    if key not in HEATMAP_METRICS:
        raise ValueError(f"unknown heatmap metric {key!r}")
    return HEATMAP_METRICS[key].title


def metric_label(key: str) -> str:
    """A human name for ``key``: its chart title, else its long label, else the key with the
    underscores made spaces (never snake_case on screen)."""
    found = METRICS.get(key)
    if found is None:
        return key.replace("_", " ")
    return found.title or found.long_label


_MISSING_WHY = {
    Unit.PERCENT: "no PASS or FAIL cases to count (only SKIP or ERROR, or no such cases)",
    Unit.DECIMAL: "no case carries this value (e.g. no reference answer, no embeddings, or "
    "only SKIP/ERROR cases)",
    Unit.P_VALUE: "the test needs more data",
    Unit.COUNT: "not counted here",
    Unit.TEXT: "not recorded",
}


def column_help(key: str, unit: Unit) -> str:
    """The tooltip of a table header: what the column means and why a cell may read "—"."""
    found = METRICS.get(key)
    meaning = found.definition if found and found.definition else metric_label(key)
    if unit in (Unit.TEXT, Unit.COUNT):
        return meaning
    return f"{meaning}. {MISSING} = {_MISSING_WHY[unit]}."
