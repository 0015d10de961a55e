"""The Analysis page's release gate: the **Gate** tab (each relation's rate, interval, threshold
and verdict, from ``app.analysis.release_report.evaluate_gate`` — the code `morphscope gate`
runs — with the thresholds editable and saved as the gate's TOML file) and, under **Compare
runs**, the change of each relation with its significance, the cases whose verdict flipped, and
"Set as baseline".

(The release gate decides whether a model passes a build; the validity gate, elsewhere, rejects
follow-ups before they are sent.) Widget keys are prefixed ``analysis_gate_``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app.analysis.release_report import EXIT_FAILED, EXIT_PASSED, BaselineChoice, GateReport
from app.analysis.release_thresholds import (
    MODE_HELP,
    MODES,
    GateConfigError,
    GateSettings,
    check_rate,
    settings_from_toml,
    settings_to_toml,
)
from app.ui import analysis_view as view
from app.ui.components import inert
from app.ui.data import data_changed
from core.types import Case
from storage import Store

SETTINGS_KEY = "analysis_gate_settings"
DEFAULT_SETTINGS = GateSettings(max_rate=0.10)
FLIPS_SHOWN = 200


def _with_store(path: str, fn):
    store = Store(path)
    try:
        return fn(store)
    finally:
        store.close()


@st.cache_data(show_spinner="Judging runs…", max_entries=32)
def gate_report(
    path: str, version: Any, run_ids: tuple[str, ...], settings: GateSettings
) -> GateReport | str:
    """The gate's report for ``run_ids``, or the reason there is nothing to judge."""
    from app.analysis.release_report import GateInputError, evaluate_gate

    def judge(store: Store) -> GateReport | str:
        try:
            return evaluate_gate(store, list(run_ids), settings, BaselineChoice())
        except GateInputError as exc:
            return str(exc)

    return _with_store(path, judge)


def latest_run_ids(runs: list[dict[str, Any]]) -> list[str]:
    """The latest run of each model × task (what `morphscope gate` judges by default)."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: str(r.get("created_at") or ""), reverse=True):
        latest.setdefault((run.get("model"), run.get("task_id")), run)
    return [run["id"] for run in latest.values()]


# ---------------------------------------------------------------- thresholds


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 4)


def _loaded_settings() -> GateSettings:
    """The settings the editor starts from: a loaded TOML file's, else the last ones used."""
    upload = st.file_uploader(
        "Load thresholds (gate TOML file)", type=["toml"], key="analysis_gate_upload"
    )
    if upload is not None:
        try:
            st.session_state[SETTINGS_KEY] = settings_from_toml(upload.getvalue().decode("utf-8"))
        except (GateConfigError, UnicodeDecodeError) as exc:
            st.error(f"{inert(upload.name)}: {inert(exc)}")
    return st.session_state.get(SETTINGS_KEY, DEFAULT_SETTINGS)


def render_threshold_editor() -> GateSettings | None:
    """Mode, max, errors, tolerated increase and per-relation maxima; None while a value is
    invalid (the message names it)."""
    base = _loaded_settings()
    columns = st.columns(4)
    mode = columns[0].radio(
        "Rule", MODES, index=MODES.index(base.mode), key="analysis_gate_mode",
        help="; ".join(f"{m}: {t}" for m, t in MODE_HELP.items()),
    )  # fmt: skip
    max_percent = columns[1].number_input(
        "Max violation % (every relation)", 0.0, 100.0, _percent(base.max_rate),
        step=1.0, key="analysis_gate_max", help="empty: only the relations listed below are gated",
    )  # fmt: skip
    increase = columns[2].number_input(
        "Tolerated increase % over the baseline", 0.0, 100.0, _percent(base.max_increase),
        step=1.0, key="analysis_gate_max_increase",
    )  # fmt: skip
    allow_errors = columns[3].checkbox(
        "Allow ERROR cases", base.allow_errors, key="analysis_gate_allow_errors"
    )
    rows = pd.DataFrame(
        [{"relation (id or glob)": p, "max %": _percent(r)} for p, r in base.relation_max],
        columns=["relation (id or glob)", "max %"],
    )
    if base.tasks:  # kept from the loaded file; edited there
        st.caption(
            "Per-task thresholds from the loaded file (kept as they are): "
            + "; ".join(
                f"{inert(task_id)}: max {_percent(task.max_rate)}%, "
                + ", ".join(f"{inert(p)} {_percent(r)}%" for p, r in task.relation_max)
                for task_id, task in base.tasks
            )
        )
    edited = st.data_editor(
        rows, num_rows="dynamic", key="analysis_gate_relations", width="stretch"
    )
    try:
        limits = tuple(
            (str(pattern).strip(), check_rate(float(percent) / 100, f"max % of {pattern}"))
            for pattern, percent in edited.itertuples(index=False)
            if str(pattern or "").strip() and not pd.isna(percent)
        )
    except (GateConfigError, TypeError, ValueError) as exc:
        st.error(inert(exc))
        return None
    settings = replace(
        base,
        mode=mode,
        max_rate=None if max_percent is None else max_percent / 100,
        relation_max=limits,
        max_increase=(increase or 0.0) / 100,
        allow_errors=allow_errors,
    )
    st.session_state[SETTINGS_KEY] = settings
    return settings


def render_save(settings: GateSettings) -> None:
    """The settings as the gate's TOML file: downloaded, or written to a path on the server."""
    text = settings_to_toml(settings)
    columns = st.columns([1, 2, 1], vertical_alignment="bottom")
    columns[0].download_button(
        "Download gate.toml", text, file_name="gate.toml", mime="application/toml",
        key="analysis_gate_download", on_click="ignore",
    )  # fmt: skip
    target = columns[1].text_input("…or save to this path", key="analysis_gate_path")
    if columns[2].button("Save", key="analysis_gate_save", disabled=not target):
        try:
            Path(target).expanduser().write_text(text, encoding="utf-8")
        except OSError as exc:
            st.error(f"Cannot write {inert(target)}: {inert(exc.strerror or exc)}")
        else:
            st.success(f"Saved to {inert(target)} — `morphscope gate --config {inert(target)}`")


# ---------------------------------------------------------------- the Gate tab

VERDICT_BADGE = {
    EXIT_PASSED: ":green-badge[PASSED]",
    EXIT_FAILED: ":red-badge[FAILED]",
    3: ":orange-badge[ERROR cases]",
}


def verdict_rows(report: GateReport) -> list[dict[str, Any]]:
    """One table row per relation of each judged run, worst first."""
    regressed = {(c.run_id, c.relation_id) for c in report.regressions}
    return [
        {
            "verdict": v.outcome.upper()
            + (" · regressed" if (v.run_id, v.relation_id) in regressed else ""),
            "relation": v.relation_id,
            "model": v.model,
            "task": v.task_id,
            "role": v.role,
            "rate %": _percent(v.gated.rate),
            "95% low %": _percent(v.gated.ci_low),
            "95% high %": _percent(v.gated.ci_high),
            "noise floor %": _percent(v.gated.noise_floor),
            "max %": _percent(v.threshold),
            "judged": v.gated.judged,
            "errors": v.n_error,
            "reason": v.reason,
        }
        for v in report.worst_first()
    ]


def render_gate(data) -> None:
    """The Gate tab: runs to judge, thresholds, and the verdict of each relation."""
    runs = list(data.runs_by_id.values())
    labels = {run["id"]: view.run_label(run) for run in runs}
    chosen = st.multiselect(
        "Runs to judge", list(labels), default=latest_run_ids(runs), format_func=labels.get,
        key="analysis_gate_runs", help="default: the latest run of each model × task, as the CLI",
    )  # fmt: skip
    settings = render_threshold_editor()
    if settings is None:
        return
    render_save(settings)
    if not chosen:
        st.info("Pick at least one run to judge.")
        return
    report = gate_report(data.path, data.version, tuple(chosen), settings)
    if isinstance(report, str):
        st.info(f"Nothing to judge: {inert(report)}")
        return
    st.markdown(
        f"{VERDICT_BADGE[report.exit_code]} exit code **{report.exit_code}** · "
        f"{len(report.failures)} over their max · {len(report.regressions)} regressed · "
        f"{report.n_errors} ERROR cases · rule **{settings.mode}**"
    )
    for run in report.runs:
        if run.baseline_run_id:
            st.caption(
                f"Run {inert(run.run.id)} is compared with its baseline {inert(run.baseline_run_id)}."
            )
    st.dataframe(pd.DataFrame(verdict_rows(report)), hide_index=True, width="stretch")


# ---------------------------------------------------------------- compare runs


@st.cache_data(show_spinner=False, max_entries=32)
def run_changes(path: str, version: Any, run_a: str, run_b: str) -> dict[str, Any]:
    """Run B against run A: each relation's rate change with its significance (as the gate's
    regression check), the counts of flipped verdicts and the flipped cases."""
    from app.analysis.regression import compare_counts
    from app.analysis.release_gate import REFERENCE, run_verdicts

    def counts(store: Store, run_id: str) -> dict[str, tuple[int, int]]:
        verdicts = run_verdicts(store, store.run(run_id), GateSettings())
        return {
            v.relation_id: (v.n_fail, v.gated.judged) for v in verdicts if v.outcome != REFERENCE
        }

    def read(store: Store) -> dict[str, Any]:
        return {
            "changes": compare_counts(run_b, run_a, counts(store, run_b), counts(store, run_a)),
            "flip_counts": store.verdict_flip_counts(run_a, run_b),
            "flips": store.verdict_flips(run_a, run_b, limit=FLIPS_SHOWN),
        }

    return _with_store(path, read)


def change_rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    flips = found["flip_counts"]
    return [
        {
            "relation": c.relation_id,
            "A violation %": _percent(c.baseline_rate),
            "B violation %": _percent(c.rate),
            "B − A %": _percent(c.difference),
            "95% low %": _percent(c.ci_low),
            "95% high %": _percent(c.ci_high),
            "adjusted p": round(c.p_adjusted, 4),
            "significantly worse": c.regressed,
            "PASS→FAIL": flips.get(c.relation_id, {}).get("worse", 0),
            "FAIL→PASS": flips.get(c.relation_id, {}).get("better", 0),
        }
        for c in found["changes"]
    ]


def _stored_cases(path: str, case_ids: tuple[str, ...]) -> list[Case | None]:
    return _with_store(path, lambda store: [store.case(case_id) for case_id in case_ids])


def render_flips(data, run_a: str, run_b: str) -> None:
    """Per relation, how each changed and whether significantly; the flipped cases side by side;
    and "Set run B as baseline"."""
    found = run_changes(data.path, data.version, run_a, run_b)
    st.subheader("What changed, case by case")
    st.caption(
        "Per relation: B − A with a Newcombe 95% interval and Benjamini–Hochberg adjusted p (the "
        "gate's regression check); PASS→FAIL and FAIL→PASS count the same case in both runs."
    )
    st.dataframe(pd.DataFrame(change_rows(found)), hide_index=True, width="stretch")
    flips = found["flips"]
    if not flips:
        st.info("No case flipped between PASS and FAIL.")
    else:
        names = {
            i: f"{f.relation_id} · sample {f.sample_id} · {f.verdict_a}→{f.verdict_b}"
            for i, f in enumerate(flips)
        }
        picked = st.selectbox(
            f"Flipped cases ({len(flips)}{'+' if len(flips) == FLIPS_SHOWN else ''})",
            list(names), format_func=names.get, key="analysis_gate_flip",
        )  # fmt: skip
        flip = flips[picked]
        cases = _stored_cases(data.path, (flip.case_a, flip.case_b))
        for title, case in zip(("Run A", "Run B"), cases, strict=True):
            st.markdown(f"**{title}**")
            if case is None:  # deleted since the list was read
                st.info("This case is no longer stored.")
            else:
                view.render_case(case)
    if st.button("Set run B as its task's baseline", key="analysis_gate_set_baseline"):
        note = "set on the Analysis page"
        approved = _with_store(data.path, lambda store: store.set_baseline(run_b, note=note))
        data_changed()
        st.success(
            f"Run {inert(approved.run_id)} is now the baseline of task {inert(approved.task_id)}."
        )
