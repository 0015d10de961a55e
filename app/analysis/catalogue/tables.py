"""Table layouts: which columns each table shows, in which order, under which header.

The Analysis tables (``*_TABLE``), the HTML report's (``REPORT_*_TABLE``), the ``report``
command's text table (:data:`REPORT_TEXT_TABLE`) and the rows of ``report --json``
(:data:`REPORT_ROW_KEYS`). Headers and units come from the metric entries in
:mod:`app.analysis.catalogue.definitions`; a header differs from the entry's label only where a
table says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.analysis.catalogue.definitions import COUNTED_METRICS, metric
from app.analysis.catalogue.formats import Unit


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


# The metrics computed from the verdict counts end every model × relation row.
_COUNTED = tuple(m.key for m in COUNTED_METRICS)

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
    *_COUNTED,
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
    "invariance_stability",
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
TRIAGE_LABEL_COUNTS = ("confirmed", "fp_invalid_followup", "fp_oracle", "unsure")
TRIAGE_PROGRESS_TABLE = table("relation_id", "n_fail", "labeled", *TRIAGE_LABEL_COUNTS)
TRIAGE_RATES_TABLE = table("relation_id", "n_fail", *TRIAGE_FEEDBACK_COLUMNS, *TRIAGE_LABEL_COUNTS)
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
    ("stability", "stability (SI, incl. identity)"),
    "stability_excl_identity",
    "invariance_stability",
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


# ------------------------------------------------------------------ report --json

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
    # extras beyond the paper's table (their definitions are published too)
    "invalid_followup",
    "net_violation_rate",
    "inconsistency_rate",
    *_COUNTED,
)
"""The keys of one model × relation row of ``report --json``, in order."""

REPORT_FLOOR_KEYS = (
    "n", "pass", "fail", "violation_rate", "ci_low", "ci_high", "inconsistency_rate"
)  # fmt: skip
"""The keys of one model × task noise floor of ``report --json``, in order."""


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
