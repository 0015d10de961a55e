"""``report --json``: one row per model × relation, the noise floor, the statistical tests.

:func:`report` holds the counts, the violation rate with its Wilson interval, mean Δ, MAD,
stability and mean similarity per model × relation (plus a few extras: the keys are
``REPORT_ROW_KEYS``), the noise floor per model, the AgentDiff gap and the tests. Columns and
definitions come from :mod:`app.analysis.catalogue`; the numbers from :mod:`app.analysis.metrics`
and :mod:`app.analysis.stats`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.analysis import metrics, stats
from app.analysis.catalogue.definitions import DEFINITIONS, VIOLATION_RATE
from app.analysis.catalogue.formats import Unit, format_fraction, format_interval
from app.analysis.catalogue.tables import (
    CI_KEY,
    REPORT_FLOOR_KEYS,
    REPORT_ROW_KEYS,
    REPORT_TEXT_TABLE,
)
from app.analysis.sampling import sampling_view
from app.engine.repairs import flagged_runs
from app.reports.common import case_filter, json_safe, now
from core.case_filter import CaseFilter


def report(
    store,
    run_ids: Iterable[str] | None = None,
    *,
    models: Iterable[str] | None = None,
    tasks: Iterable[str] | None = None,
    relations: Iterable[str] | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    alpha: float = stats.ALPHA,
    flt: CaseFilter | None = None,
) -> dict[str, Any]:
    """The ``report --json`` document for the filtered cases (JSON-serialisable, no NaN).

    Keys: ``generated_at``, ``filters``, ``n_cases``, ``rows`` (model × relation, keys
    ``REPORT_ROW_KEYS``), ``models`` (per-model summary: the SI paper's MAD and stability over
    its ``si.*`` transformations, stability without identity and over every invariance relation,
    noise floor, net rate, AgentDiff gap), ``noise_floor`` (model → task → identity violation
    rate over its observations, one per sample × repeat, with n and Wilson interval; absent
    without identity cases), ``agentdiff_gap``, ``step_score`` (model × relation AvgStepScore of
    source and follow-up outputs and its change, for tasks with reference steps), ``tests``
    (``mann_whitney`` and
    ``kruskal_wallis`` lists with statistic, p_value, p_adjusted, reading), ``definitions`` and
    ``known_defects`` (the runs a known defect of their engine touched: rerun them to repair).
    When some run is adaptive (`run --precision/--budget`), each row adds ``sampling`` ("full
    grid", "adaptive" or "mixed") and the confidence-sequence interval ``cs_low``/``cs_high``
    that stopped it, and ``sampling`` (:mod:`app.analysis.sampling`) lists the adaptive runs,
    the calls they saved and the cells that mix adaptive and full-grid runs.
    """
    flt = case_filter(
        run_ids,
        flt,
        models=models,
        tasks=tasks,
        relations=relations,
        date_from=date_from,
        date_to=date_to,
    )
    summary = metrics.summarize(store, flt)
    rows = [{key: row.get(key) for key in REPORT_ROW_KEYS} for row in summary["rows"]]
    sampled = sampling_view(store, flt)
    if sampled.any_adaptive:
        for row in rows:
            row.update(sampled.row_fields(row["model"], row["relation_id"]))
    floors = {
        model: {
            task_id: {key: floor[key] for key in REPORT_FLOOR_KEYS}
            for task_id, floor in tasks.items()
        }
        for model, tasks in summary["noise_floor"].items()
    }
    document = {
        "generated_at": now(),
        "filters": flt.as_dict(),
        "n_cases": summary["n_cases"],
        "rows": rows,
        "models": summary["models"],
        "noise_floor": floors,
        "agentdiff_gap": summary["gap"],
        "step_score": summary["step_scores"],
        "tests": stats.run_tests(
            store, flt, counts=summary["counts"], roles=summary["roles"], alpha=alpha
        ),
        "definitions": DEFINITIONS,
        # Runs whose cases a known defect of the engine that judged them made wrong.
        "known_defects": [
            flagged.to_dict() for flagged in flagged_runs(store, flt.run_ids or None)
        ],
    }
    if sampled.any_adaptive:  # absent for full-grid runs: their documents stay as they were
        document["sampling"] = sampled.to_dict()
    return json_safe(document)


def report_json(store, run_id: str | None = None) -> dict[str, Any]:
    """``report --db PATH [--run RUN_ID] --json``: :func:`report` for one run or every case."""
    if run_id is not None and store.run(run_id) is None:
        raise ValueError(f"no run with id {run_id!r}")
    return report(store, [run_id] if run_id is not None else None)


def report_table(document: dict[str, Any]) -> list[str]:
    """The ``report`` command's text: the model × relation table, then each model's noise floor.

    Rates print as two-decimal fractions; the interval is left out ("—") with the rate.
    """
    lines = [" ".join(column.cell(column.header) for column in REPORT_TEXT_TABLE)]
    for row in document.get("rows", []):
        cells = []
        for column in REPORT_TEXT_TABLE:
            if column.key == CI_KEY:
                missing = row.get(VIOLATION_RATE) is None
                text = "—" if missing else format_interval(row["ci_low"], row["ci_high"])
            elif column.unit is Unit.PERCENT:
                text = format_fraction(row.get(column.key))
            else:
                text = str(row[column.key])
            cells.append(column.cell(text))
        lines.append(" ".join(cells))
    for model, tasks in (document.get("noise_floor") or {}).items():
        for task_id, floor in tasks.items():
            if floor.get(VIOLATION_RATE) is None:
                continue
            lines.append(
                f"noise floor ({model}, {task_id}, si.identity): "
                f"{format_fraction(floor[VIOLATION_RATE])} "
                f"{format_interval(floor['ci_low'], floor['ci_high'])} "
                f"over {floor['n']} observations"
            )
    return lines + sampling_lines(document.get("sampling"))


def sampling_lines(sampling: dict[str, Any] | None) -> list[str]:
    """The adaptive runs (calls used against the full grid) and the cells that mix adaptive
    and full-grid runs; nothing when no run is adaptive."""
    if not sampling:
        return []
    lines = [
        f"adaptive run {run['run_id']} ({run['model']}): {run['status']}; {run['calls_used']} "
        f"of the full grid's {run['full_grid_calls']} calls used, {run['calls_saved']} saved"
        for run in sampling["adaptive_runs"]
    ]
    for cell in sampling["cells"]:
        for interval in cell["cs_intervals"]:
            lines.append(
                f"  {cell['model']} × {cell['relation_id']}: confidence sequence "
                f"{format_interval(interval['low'], interval['high'])} over "
                f"{interval['inputs']} inputs (run {interval['run_id']})"
            )
        if cell["note"]:
            lines.append(f"note: {cell['model']} × {cell['relation_id']} {cell['note']}")
    return lines
