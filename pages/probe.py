"""Probe: pick an endpoint, a task, relations and inputs; run; read violations side by side."""

import streamlit as st

from app.runner import RunConfig
from app.ui.components import endpoint_picker, resolve_embedded
from app.ui.data import data_changed, get_store
from app.ui.demo import render_demo_offer
from app.ui.entry import require_entrypoint
from app.ui.probe_view import (
    custom_task_form,
    execute_with_progress,
    input_picker,
    relation_picker,
    render_results,
    sampling_options,
    summary_line,
)
from app.workspace import all_relations, all_tasks, make_runner

require_entrypoint("pages/probe.py")
st.title("Probe")
st.caption(
    "Metamorphic testing: transform each input, ask the model both versions, and flag the "
    "follow-ups whose output breaks the expected relation."
)
store = get_store()
tasks = all_tasks(store)
if not store.runs():
    render_demo_offer(key="probe")

left, right = st.columns([1, 1])
with left:
    endpoint = endpoint_picker(store, "Model endpoint", key="probe_endpoint")
    task_ids = list(tasks)
    task_id = st.selectbox(
        "Task",
        task_ids,
        index=task_ids.index("sentiment"),  # short answers: the quickest first probe
        key="probe_task",
        format_func=lambda t: f"{tasks[t].name} ({t})",
    )
    task = tasks[task_id]
    custom_task_form(store, key="probe_custom_task")
    relation_ids = relation_picker(all_relations(store, task.id), task, key="probe_relations")
with right:
    samples, dataset = input_picker(task, key="probe_inputs")
    endpoint, repeats, seed = sampling_options(endpoint, task, key="probe_options")
    transformation = endpoint_picker(
        store, "Transformation endpoint (LLM-prompted relations)", key="probe_transform",
        help="Rewrites inputs for paraphrase-style relations; the embedded model by default.",
    )  # fmt: skip

ready = bool(relation_ids) and bool(samples)
if not ready:
    st.info("Choose at least one relation and some inputs, then press **Run probe**.")
if st.button("Run probe", type="primary", disabled=not ready, key="probe_run"):
    relations_by_id = {r.id: r for r in all_relations(store, task.id)}
    needs_rewriter = any(relations_by_id[r].kind == "llm" for r in relation_ids)
    live = resolve_embedded(endpoint)
    # Only start the transformation model when an LLM-prompted relation needs it.
    live_transformation = resolve_embedded(transformation) if needs_rewriter else live
    if live is not None and live_transformation is not None:
        config = RunConfig(
            endpoint=live,
            task_id=task.id,
            relation_ids=tuple(relation_ids),
            repeats=repeats,
            seed=seed,
            dataset=dataset,
            transformation_endpoint=live_transformation,
        )
        # Any click re-runs the script, which interrupts the run; finished work is kept.
        st.button("Cancel run", key="probe_cancel", help="Stop now; run again to resume")
        summary = execute_with_progress(make_runner(store), config, task, samples)
        st.session_state["probe_summary"] = summary
        st.session_state["probe_run_id"] = summary.run_id
        data_changed()

latest = store.runs()[:1]
if latest and latest[0]["status"] in ("interrupted", "cancelled"):
    run = latest[0]
    st.warning(
        f"Run `{run['id']}` was interrupted after {run['n_cases']} of {run['n_planned']} cases. "
        "Press **Run probe** with the same settings to resume; finished calls are not repeated."
    )
    st.session_state.setdefault("probe_run_id", run["id"])

summary = st.session_state.get("probe_summary")
if summary is not None:
    st.markdown(summary_line(summary))
run_id = st.session_state.get("probe_run_id")
if run_id and store.run(run_id) is not None:
    st.subheader("Source and follow-up, side by side")
    render_results(store, run_id, key="probe_results")
