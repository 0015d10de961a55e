"""Triage: label FAILs one at a time; the labels feed false-positive rates and thresholds back."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.triage import (
    IMPORT_FORMATS,
    LabelImportError,
    agreement_table,
    apply_threshold,
    export_labels,
    import_labels,
    relation_feedback_table,
    suggest_thresholds,
)
from app.ui.data import data_changed, data_version, get_store
from app.ui.entry import require_entrypoint
from app.ui.triage_view import (
    LABEL_BUTTONS,
    progress_frame,
    render_case,
    suggestion_text,
)

require_entrypoint("pages/triage.py")
st.title("Triage")
st.caption(
    "Judge each violation: real, or a false positive of the transformation or of the checker. "
    "Keys: 1–4 label, U undo, N next, P previous."
)
store = get_store()
state = st.session_state

flash = state.pop("triage_flash", None)
if flash:
    getattr(st, flash[0])(flash[1])

options = store.triage_options()
if not options["runs"]:
    st.info("No violations recorded yet. Run some relations on the Probe page, then come back.")
    st.stop()

# ---------------------------------------------------------------- who and what

if "triage_labeler" not in state:
    state["triage_labeler"] = store.last_labeler() or ""
labeler = st.text_input(
    "Your name (labeler)", key="triage_labeler", help="Remembered; kept with every label"
).strip()

runs_by_id = {run["id"]: run for run in options["runs"]}
with st.expander("Filters", expanded=True):
    columns = st.columns(4)
    run_ids = columns[0].multiselect(
        "Runs",
        list(runs_by_id),
        key="triage_runs",
        format_func=lambda run_id: (
            f"{runs_by_id[run_id]['model']} · {runs_by_id[run_id]['task_id']} · "
            f"{runs_by_id[run_id]['created_at'][:16]} ({runs_by_id[run_id]['n_fail']} FAIL)"
        ),
        placeholder="All runs",
    )
    models = columns[1].multiselect(
        "Models", options["models"], key="triage_models", placeholder="All"
    )
    tasks = columns[2].multiselect("Tasks", options["tasks"], key="triage_tasks", placeholder="All")
    relations = columns[3].multiselect(
        "Relations", options["relations"], key="triage_relations", placeholder="All"
    )
    columns = st.columns(3)
    unlabeled_only = columns[0].checkbox("Unlabeled only", value=True, key="triage_unlabeled")
    scope = columns[1].radio(
        "Unlabeled by",
        ["anyone", "me"],
        key="triage_scope",
        horizontal=True,
        disabled=not unlabeled_only,
        help="'me': cases you have not labeled yet, even if a teammate has (for agreement)",
    )
    labeled_by = columns[2].selectbox(
        "Labeled by", ["(anyone or no one)", *store.labelers()], key="triage_labeled_by"
    )

filters = {
    "run_ids": run_ids or None,
    "models": models or None,
    "tasks": tasks or None,
    "relation_ids": relations or None,
}
queue = store.triage_queue(
    **filters,
    unlabeled_only=unlabeled_only,
    labeler=labeler if (unlabeled_only and scope == "me") else None,
    labeled_by=None if labeled_by == "(anyone or no one)" else labeled_by,
)

# ---------------------------------------------------------------- progress

progress = store.label_progress(**filters)
total, labeled = progress["total"], progress["labeled"]
st.progress(labeled / total if total else 0.0, text=f"{labeled} of {total} FAILs labeled")

# ---------------------------------------------------------------- actions (callbacks run first)


def _label(case_id: str, label: str, next_id: str | None) -> None:
    try:
        get_store().add_label(case_id, label, state.get("triage_note", ""), state["triage_labeler"])
    except ValueError as error:  # e.g. a threshold applied meanwhile made it a PASS
        state["triage_flash"] = ("error", str(error))
        return
    state.setdefault("triage_undo_stack", []).append(case_id)
    state["triage_case_id"] = next_id
    state["triage_note"] = ""
    state["triage_flash"] = ("success", f"Labeled {case_id} as {label}.")
    data_changed()


def _undo(current_id: str | None) -> None:
    stack = state.setdefault("triage_undo_stack", [])
    case_id = stack.pop() if stack else current_id
    if case_id is None:
        return
    undone = get_store().undo_label(case_id, state["triage_labeler"])
    if undone is None:
        state["triage_flash"] = ("info", "Nothing of yours to undo on this case.")
        return
    state["triage_case_id"] = case_id
    state["triage_flash"] = ("success", f"Undid '{undone['label']}' on {case_id}.")
    data_changed()


def _go(case_id: str | None) -> None:
    state["triage_case_id"] = case_id


def _apply(relation_id: str, oracle: str, threshold: float) -> None:
    try:
        result = apply_threshold(get_store(), relation_id, threshold, oracle=oracle)
    except ValueError as error:
        state["triage_flash"] = ("error", str(error))
        return
    state["triage_flash"] = (
        "success",
        f"Threshold {threshold:.3f} applied to {relation_id}: {result['changed']} of "
        f"{result['considered']} verdicts changed ({result['to_pass']} → PASS, "
        f"{result['to_fail']} → FAIL). The automatic verdicts are kept.",
    )
    data_changed()


# ---------------------------------------------------------------- the current case

if not queue:
    if total and labeled == total:
        st.success("🎉 Every FAIL matching these filters is labeled.")
    else:
        st.info("Nothing to triage with these filters. Widen them or untick 'Unlabeled only'.")
    current_id = None
else:
    current_id = state.get("triage_case_id")
    if current_id not in queue:
        current_id = queue[0]
        state["triage_case_id"] = current_id
    index = queue.index(current_id)
    previous_id = queue[index - 1] if index > 0 else None
    next_id = queue[index + 1] if index + 1 < len(queue) else None
    case = store.case(current_id)

    buttons = st.columns(len(LABEL_BUTTONS))
    for column, (label, text, shortcut, help_text) in zip(buttons, LABEL_BUTTONS, strict=True):
        column.button(
            text,
            key=f"triage_label_{label}",
            shortcut=shortcut,
            help=help_text,
            disabled=not labeler,
            on_click=_label,
            args=(current_id, label, next_id),
            width="stretch",
        )
    st.text_input("Note (optional)", key="triage_note", placeholder="why, in a few words")
    if not labeler:
        st.warning("Enter your name above to label.")
    navigation = st.columns(3)
    navigation[0].button(
        "← Previous",
        key="triage_previous",
        shortcut="P",
        disabled=previous_id is None,
        on_click=_go,
        args=(previous_id,),
        width="stretch",
    )
    navigation[1].button(
        "↶ Undo",
        key="triage_undo",
        shortcut="U",
        disabled=not labeler,
        on_click=_undo,
        args=(current_id,),
        width="stretch",
    )
    navigation[2].button(
        "Next →",
        key="triage_next",
        shortcut="N",
        disabled=next_id is None,
        on_click=_go,
        args=(next_id,),
        width="stretch",
    )
    render_case(case, store.label_history(current_id), f"Case {index + 1} of {len(queue)}")

# ---------------------------------------------------------------- feedback into the numbers

st.divider()
st.subheader("Progress by relation")
st.dataframe(progress_frame(progress), hide_index=True)


@st.cache_data(show_spinner=False)
def _feedback(_store, db_path: str, version: int, filters: tuple) -> tuple:
    run_ids, models, relations = filters
    table = relation_feedback_table(_store, run_ids, models, relations)
    return table, suggest_thresholds(_store, run_ids)


feedback, suggestions = _feedback(
    store,
    store.path,
    data_version(),
    (filters["run_ids"], filters["models"], filters["relation_ids"]),
)
st.subheader("False-positive rates")
st.caption(
    "fp rate = (invalid follow-up + checker wrong) / labeled FAILs, unsure excluded, with a "
    "Wilson 95% interval. Confirmed violation rate = violation rate × (1 − fp rate)."
)
st.dataframe(
    feedback[
        [
            "relation",
            "n_fail",
            "labeled",
            "fp_rate",
            "fp_ci_low",
            "fp_ci_high",
            "violation_rate",
            "confirmed_violation_rate",
            "confirmed",
            "fp_invalid_followup",
            "fp_oracle",
            "unsure",
        ]
    ],
    hide_index=True,
    column_config={
        column: st.column_config.NumberColumn(format="%.3f")
        for column in (
            "fp_rate",
            "fp_ci_low",
            "fp_ci_high",
            "violation_rate",
            "confirmed_violation_rate",
        )
    },
)

st.subheader("Threshold suggestions")
if not suggestions:
    st.caption(
        "Label FAILs of relations judged by similarity or |Δ| as 'confirmed' or 'checker wrong' "
        "to get a suggested threshold."
    )
for position, suggestion in enumerate(suggestions):
    line, action = st.columns([5, 1])
    line.text(suggestion_text(suggestion))
    if suggestion.suggested_threshold is not None and suggestion.changes_threshold:
        action.button(
            f"Apply {suggestion.suggested_threshold:.3f}",
            key=f"triage_apply_{position}",
            on_click=_apply,
            args=(suggestion.relation_id, suggestion.oracle, suggestion.suggested_threshold),
            help="Recompute this relation's stored PASS/FAIL verdicts (no model calls)",
        )

# ---------------------------------------------------------------- teams

with st.expander("Team: export, import, agreement"):
    columns = st.columns(2)
    columns[0].download_button(
        "Download labels (CSV)",
        export_labels(store, "csv"),
        file_name="morphscope-labels.csv",
        mime="text/csv",
        key="triage_export_csv",
    )
    columns[1].download_button(
        "Download labels (JSONL)",
        export_labels(store, "jsonl"),
        file_name="morphscope-labels.jsonl",
        mime="application/jsonl",
        key="triage_export_jsonl",
    )
    upload = st.file_uploader(
        "Import a teammate's labels", type=list(IMPORT_FORMATS), key="triage_import"
    )
    if upload is not None and st.button("Import", key="triage_import_go"):
        fmt = Path(upload.name).suffix.lstrip(".").lower()
        try:
            result = import_labels(store, upload.getvalue().decode("utf-8"), fmt)
        except UnicodeDecodeError:
            st.error("The file is not UTF-8 text; nothing was imported.")
        except LabelImportError as error:
            st.error("Nothing was imported:\n\n" + "\n".join(f"- {e}" for e in error.errors))
        else:
            state["triage_flash"] = (
                "success",
                f"Imported {result['added']} label entries "
                f"({result['duplicates']} already present).",
            )
            data_changed()
            st.rerun()
    agreement = agreement_table(store, filters["run_ids"])
    if agreement.empty:
        st.caption("Agreement (Cohen's kappa) appears once two labelers label the same cases.")
    else:
        st.markdown("**Agreement between labelers** (Cohen's kappa on cases both labeled)")
        st.dataframe(agreement, hide_index=True)
