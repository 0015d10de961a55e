"""Statistical tests of the Analysis page, each with a plain-language reading.

- Only judged cases (PASS/FAIL) of invariance relations (expectation "equivalent") enter: a SKIP
  — the validity gate's or an oracle's ``precondition: …`` — or an ERROR is no observation, and a
  "should change" relation's Δ measures a change it asks for, not a lack of robustness.
- The unit is the *observation*, as for MAD (SI §3.1, eq. 6): one |Δ| per judged case, each
  repeat, follow-up and target its own, the absolute value taken before anything is pooled;
  ``si.identity`` counts once per sample × repeat (``storage.delta_verbs``).
- **Mann-Whitney U between models** (two-sided, scipy's default method) on per-observation |Δ|
  over the invariance relations, the noise-floor relation left out (sampling noise, not
  robustness). A pair of models without at least two observations each falls back to the
  per-case violation indicator (1 = FAIL, 0 = PASS) over the same relations.
  The effect size is P(A > B) + ½·P(A = B) = U_A / (n_A·n_B): above ½ means A's values tend to be
  larger.
- **Kruskal-Wallis across relations within a model** on per-observation |Δ|, one group per
  invariance relation with an observation (identity included, as the noise reference), falling
  back to the violation indicator when fewer than two relations have observations.
- **Benjamini-Hochberg** adjusted p-values, separately for the Mann-Whitney family and the
  Kruskal-Wallis family. A result is called significant when its adjusted p < alpha (0.05).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from app.analysis.relation_roles import RelationRoles
from core.case_filter import CaseFilter
from storage.analysis_verbs import IDENTITY_RELATION

ALPHA = 0.05
MEASURE_LABELS = {"abs_delta": "|Δ|", "violation": "violation rate"}


@dataclass(frozen=True)
class TestResult:
    """One test: what was compared, the statistic, raw and BH-adjusted p, and a reading."""

    test: str  # "mann_whitney" | "kruskal_wallis"
    subject: str  # "model A vs model B" or the model
    measure: str  # "abs_delta" | "violation"
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    sizes: tuple[int, ...]
    effect: float | None  # Mann-Whitney: P(A > B) + ½ P(A = B)
    significant: bool
    reading: str
    model_a: str | None = None
    model_b: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sizes"] = list(self.sizes)
        return out


def benjamini_hochberg(p_values: list[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1); None stays None.

    For m p-values sorted ascending p(1) ≤ … ≤ p(m): adjusted p(i) = min over j ≥ i of
    p(j)·m / j, then mapped back to the input order.

    Not ``scipy.stats.false_discovery_control``: it rounds p·(m / j), which differs from p·m / j
    in the last bit for about a third of inputs and can move an adjusted p that is exactly alpha
    (e.g. p = 1/24, m = 6, j = 5 gives 0.05) just below it, calling it significant.
    """
    indexed = [(p, i) for i, p in enumerate(p_values) if p is not None]
    m = len(indexed)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 1.0
    for rank, (p, i) in reversed(list(enumerate(sorted(indexed), start=1))):
        running = min(running, p * m / rank)
        adjusted[i] = min(running, 1.0)
    return adjusted


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def mann_whitney(a: np.ndarray, b: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """(U of a, two-sided p, effect U/(n_a·n_b)) — scipy.stats.mannwhitneyu with its defaults.

    p is None when the test is undefined (an empty sample, or every value identical).
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return None, None, None
    result = scipy_stats.mannwhitneyu(a, b, alternative="two-sided")
    u = _finite(result.statistic)
    effect = u / (a.size * b.size) if u is not None else None
    if np.ptp(np.concatenate([a, b])) == 0:
        return u, None, effect
    return u, _finite(result.pvalue), effect


def kruskal_wallis(groups: list[np.ndarray]) -> tuple[float | None, float | None]:
    """(H, p) — scipy.stats.kruskal; None when undefined (< 2 groups or all values identical)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(groups) < 2:
        return None, None
    if np.ptp(np.concatenate(groups)) == 0:
        return None, None
    result = scipy_stats.kruskal(*groups)
    return _finite(result.statistic), _finite(result.pvalue)


def _fmt_p(p: float | None) -> str:
    """A p-value in a sentence: "p < 0.001", "p = 0.042", "p n/a"."""
    if p is None:
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3g}"


def _p_text(p: float | None, p_adjusted: float | None) -> str:
    return f"{_fmt_p(p)}, adjusted {_fmt_p(p_adjusted)}"


def shown_tests(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Test rows as tables show them: the measure in words ("|Δ|", not its key)."""
    return [{**row, "measure": MEASURE_LABELS.get(row["measure"], row["measure"])} for row in rows]


def _mw_reading(a: str, b: str, measure: str, result: dict[str, Any], alpha: float) -> str:
    label = MEASURE_LABELS[measure]
    if result["p_value"] is None:
        return f"{a} vs {b}: no variation in {label}, so nothing to test."
    p_text = _p_text(result["p_value"], result["p_adjusted"])
    effect = result["effect"]
    if result["p_adjusted"] is not None and result["p_adjusted"] < alpha:
        direction = "larger" if effect is not None and effect > 0.5 else "smaller"
        return f"{a}'s {label} is {direction} than {b}'s ({p_text}): unlikely to be chance."
    return f"No clear difference in {label} between {a} and {b} ({p_text}): could be chance."


def _kw_reading(model: str, measure: str, result: dict[str, Any], alpha: float) -> str:
    label = MEASURE_LABELS[measure]
    if result["p_value"] is None:
        return f"{model}: no variation in {label} across relations, so nothing to test."
    h = result["statistic"]
    p_text = f"H = {h:.3g}, {_p_text(result['p_value'], result['p_adjusted'])}"
    if result["p_adjusted"] is not None and result["p_adjusted"] < alpha:
        return (
            f"{model}: {label} differs across relations ({p_text}): which relation is applied "
            "matters, beyond chance."
        )
    return f"{model}: no evidence that {label} differs across relations ({p_text})."


def _violation_array(n_pass: int, n_fail: int) -> np.ndarray:
    return np.concatenate([np.ones(n_fail), np.zeros(n_pass)])


def _collect(store, flt: CaseFilter, counts_rows: list[dict[str, Any]], roles: RelationRoles):
    """Per-observation |Δ| per model × relation (queried) and PASS/FAIL counts per model ×
    relation (from ``counts_rows``), both over the invariance and noise-floor relations only."""
    tested = roles.invariance | roles.noise_floor
    abs_delta: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    observations = store.observation_deltas(flt, tested, once_per_repeat=sorted(roles.noise_floor))
    for model, relation_id, value in observations:
        abs_delta[model][relation_id].append(value)
    counts: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for row in counts_rows:
        if row["relation_id"] in tested:
            counts[row["model"]][row["relation_id"]] = (row["n_pass"], row["n_fail"])
    return abs_delta, counts


def model_tests(
    abs_delta: dict[str, dict[str, list[float]]],
    counts: dict[str, dict[str, tuple[int, int]]],
    alpha: float = ALPHA,
    floor_relations: frozenset[str] = frozenset({IDENTITY_RELATION}),
) -> list[TestResult]:
    """Mann-Whitney U for every pair of models (sorted by name), BH-adjusted together.

    ``floor_relations`` (the noise-floor relations, sampling noise rather than robustness) are
    left out of both measures.
    """
    models = sorted(set(abs_delta) | set(counts))

    def deltas(model: str) -> np.ndarray:
        values = [
            v
            for rel, vs in abs_delta.get(model, {}).items()
            if rel not in floor_relations
            for v in vs
        ]
        return np.asarray(values, dtype=float)

    def violations(model: str) -> np.ndarray:
        judged = [pf for rel, pf in counts.get(model, {}).items() if rel not in floor_relations]
        n_pass = sum(p for p, _ in judged)
        n_fail = sum(f for _, f in judged)
        return _violation_array(n_pass, n_fail)

    raw = []
    for a, b in combinations(models, 2):
        values_a, values_b = deltas(a), deltas(b)
        measure = "abs_delta"
        if values_a.size < 2 or values_b.size < 2:
            measure = "violation"
            values_a, values_b = violations(a), violations(b)
        if values_a.size == 0 or values_b.size == 0:
            continue
        u, p, effect = mann_whitney(values_a, values_b)
        raw.append(
            {
                "a": a,
                "b": b,
                "measure": measure,
                "statistic": u,
                "p_value": p,
                "effect": effect,
                "sizes": (int(values_a.size), int(values_b.size)),
            }
        )
    return _finish("mann_whitney", raw, alpha)


def relation_tests(
    abs_delta: dict[str, dict[str, list[float]]],
    counts: dict[str, dict[str, tuple[int, int]]],
    alpha: float = ALPHA,
) -> list[TestResult]:
    """Kruskal-Wallis across relations, one test per model, BH-adjusted together."""
    raw = []
    for model in sorted(set(abs_delta) | set(counts)):
        by_relation = {rel: vs for rel, vs in abs_delta.get(model, {}).items() if vs}
        measure = "abs_delta"
        groups = [np.asarray(by_relation[rel]) for rel in sorted(by_relation)]
        if len(groups) < 2:
            measure = "violation"
            groups = [
                _violation_array(p, f)
                for _, (p, f) in sorted(counts.get(model, {}).items())
                if p + f
            ]
        if len(groups) < 2:
            continue
        h, p = kruskal_wallis(groups)
        raw.append(
            {
                "a": model,
                "b": None,
                "measure": measure,
                "statistic": h,
                "p_value": p,
                "effect": None,
                "sizes": tuple(len(g) for g in groups),
            }
        )
    return _finish("kruskal_wallis", raw, alpha)


def _finish(test: str, raw: list[dict[str, Any]], alpha: float) -> list[TestResult]:
    adjusted = benjamini_hochberg([r["p_value"] for r in raw])
    results = []
    for r, p_adjusted in zip(raw, adjusted, strict=True):
        r["p_adjusted"] = p_adjusted
        if test == "mann_whitney":
            reading = _mw_reading(r["a"], r["b"], r["measure"], r, alpha)
            subject = f"{r['a']} vs {r['b']}"
        else:
            reading = _kw_reading(r["a"], r["measure"], r, alpha)
            subject = r["a"]
        results.append(
            TestResult(
                test=test,
                subject=subject,
                measure=r["measure"],
                statistic=r["statistic"],
                p_value=r["p_value"],
                p_adjusted=p_adjusted,
                sizes=r["sizes"],
                effect=r["effect"],
                significant=p_adjusted is not None and p_adjusted < alpha,
                reading=reading,
                model_a=r["a"],
                model_b=r["b"],
            )
        )
    return results


def run_tests(
    store,
    flt: CaseFilter,
    *,
    counts: list[dict[str, Any]],
    roles: RelationRoles,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """All tests for the filtered cases: ``{"alpha", "mann_whitney": [...], "kruskal_wallis":
    [...]}`` with each result as a JSON-friendly dict. ``counts`` (``verdict_counts`` by model ×
    relation) and ``roles`` are those of ``app.analysis.metrics.summarize`` for the same filter;
    only the observations' |Δ| are queried here."""
    abs_delta, per_model = _collect(store, flt, counts, roles)
    floor = roles.noise_floor
    return {
        "alpha": alpha,
        "mann_whitney": [r.as_dict() for r in model_tests(abs_delta, per_model, alpha, floor)],
        "kruskal_wallis": [r.as_dict() for r in relation_tests(abs_delta, per_model, alpha)],
    }
