"""The Probe page's run: the Run button, the run started in the background and watched with a
progress bar and Cancel, and the interrupted-run notice with Resume.

The checks and the config a run is made of come from ``app.engine.run_setup``, as for the CLI.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.clients import kind_of
from app.engine.adaptive_run import AdaptiveSettings
from app.engine.background import ProgressSnapshot, RunJob, active_job, forget, get_job, start_run
from app.engine.preview import comparison_line
from app.engine.run_setup import RunSetupError, endpoint_problem, plan_run, require_samples
from app.engine.workspace import make_runner
from app.ui.components import inert, resolve_embedded
from app.ui.data import claim_results, data_changed
from app.ui.probe_adaptive import (
    adaptive_options,
    cell_text,
    form_preview,
    render_cells,
    render_preview,
)
from app.ui.probe_form import ProbeChoices
from app.ui.probe_results import markdown_literal
from core.records import Run
from core.run_config import RunConfig
from core.tasks import Task
from storage import Store

# How often a page looks at a background run; also how soon a click interrupts the watching.
POLL_EVERY_S = 0.25


def progress_text(progress: ProgressSnapshot) -> str:
    """The progress bar's caption: cases done, calls made, answers from the cache."""
    if not progress.total:
        return "Preparing follow-ups…"
    return (
        f"{progress.done}/{progress.total} cases · {progress.calls_made} calls · "
        f"{progress.cache_hits} from cache"
        + (f" · {progress.load.describe()}" if progress.load else "")
    )


def follow_run(job: RunJob, key: str) -> None:
    """Watch a background run until it ends: progress bar and Cancel (both gone once it has).
    Any click reruns the script, which ends this watching, never the run; the next script run
    watches again."""
    if job.cancel_requested:
        st.warning(f"Run `{job.run_id}` cancelled: no new calls are sent; finished cases are kept.")
    slot = st.empty()
    with slot.container():
        if not job.cancel_requested:
            st.button(
                "Cancel run", key=f"{key}_cancel_{job.id}", on_click=job.request_cancel,
                help="Stop sending now; finished cases are kept, and Resume continues the run",
            )  # fmt: skip
        bar = st.progress(job.progress.fraction, text=progress_text(job.progress))
        cells = st.empty()
        while not job.wait(POLL_EVERY_S):
            # Drawing the bar is also where Streamlit notices a click and reruns the script.
            bar.progress(job.progress.fraction, text=progress_text(job.progress))
            with cells.container():
                render_cells(job.progress)
    slot.empty()


def collect_run(job: RunJob, key: str, *, own: bool = True) -> None:
    """Keep an ended run's summary in the session (or say why it failed). The registry forgets
    the job once the session that started it (``own``) has collected it."""
    st.session_state.pop(f"{key}_job", None)
    if own:
        forget(job.id)
    if job.error:
        st.error(f"The run stopped with an error: {inert(job.error)}")
    if job.summary is not None:
        st.session_state[f"{key}_summary"] = job.summary
    st.session_state[f"{key}_sampling"] = job.sampling
    st.session_state[f"{key}_run_id"] = job.run_id
    data_changed()


def render_active_run(store: Store, key: str) -> None:
    """The background run of this session, or one still going on this database (started
    before a reload): watched until it ends, then its summary kept."""
    job = get_job(st.session_state.get(f"{key}_job"))
    own = job is not None and st.session_state.get(f"{key}_job_owner") == job.id
    if job is None:
        job = active_job(store.path)
        if job is None:
            return
        st.session_state[f"{key}_job"] = job.id
        st.session_state.pop(f"{key}_fingerprint", None)  # not started from this form
    follow_run(job, key)
    collect_run(job, key, own=own)


def run_and_remember(
    store: Store,
    config: RunConfig,
    task: Task,
    samples,
    key: str,
    fingerprint: str | None = None,
    adaptive: AdaptiveSettings | None = None,
) -> None:
    """Pre-flight, then start the run in the background and watch it; its summary and run id
    stay in the session, with the ``fingerprint`` of the form that asked for it. ``adaptive``
    sends it in rounds (Precision, Budget)."""
    problem = endpoint_problem(config)
    if problem:
        st.error(f"Not run: {markdown_literal(problem)}")
        return
    running = active_job(store.path)
    if running is not None:
        st.warning(f"Run `{running.run_id}` is still going: cancel it or wait for it first.")
        return
    job = start_run(
        store.path, config, task, list(samples), runner_factory=make_runner, adaptive=adaptive
    )
    st.session_state[f"{key}_job"] = job.id
    st.session_state[f"{key}_job_owner"] = job.id
    st.session_state[f"{key}_fingerprint"] = fingerprint
    for stale in ("summary", "run_id", "sampling"):  # the previous run's are not this run's
        st.session_state.pop(f"{key}_{stale}", None)
    claim_results(key)


def probe_run_config(
    store: Store, choices: ProbeChoices, resolve=resolve_embedded
) -> RunConfig | None:
    """The run the form describes, checked like the CLI's (``RunSetupError`` on a bad choice).

    None when an embedded endpoint cannot be started (``resolve`` has said so on the page).
    """
    plan = plan_run(store, choices.task.id, choices.relation_ids)
    require_samples(choices.samples, choices.dataset or "inputs")
    live = resolve(choices.endpoint)
    if live is None:
        return None
    transformation = None
    if plan.needs_transformation_endpoint:
        # Only start the transformation model when an LLM-prompted relation needs it.
        transformation = resolve(choices.transformation_endpoint)
        if transformation is None:
            return None
    return plan.config(
        live,
        repeats=choices.repeats,
        seed=choices.seed,
        dataset=choices.dataset,
        transformation_endpoint=transformation,
        nli_target=choices.nli_target,
        rewrite_candidates=choices.rewrite_candidates,
    )


def render_run(store: Store, choices: ProbeChoices, key: str) -> None:
    """The Run button; a click runs with a live progress bar and keeps the summary."""
    if not choices.ready:
        st.info("Choose at least one relation and some inputs, then press **Run probe**.")
    else:
        st.caption(
            f"{len(choices.relation_ids)} relation(s) × {len(choices.samples)} input(s)"
            + (f" × {choices.repeats} repeats" if choices.repeats > 1 else "")
            + f" → about {choices.planned_cases()} cases, at most {choices.max_calls()} model "
            "calls (answers already stored are not asked again)"
        )
    if not kind_of(choices.endpoint).sends_calls:
        # An endpoint answered offline is never called from here: its runs go out as batch
        # files (the panel below).
        st.info(
            f"**{choices.endpoint.name}** is answered by batch files: export this run under "
            "**Batch mode** below, have the batch engine answer it, then import the results."
        )
        render_active_run(store, key)
        return
    adaptive = adaptive_options(key)
    # Not while a run goes: each of its reruns of the page would plan the form's run again.
    idle = choices.ready and active_job(store.path) is None
    preview = form_preview(store, choices, adaptive) if idle else None
    render_preview(preview, adaptive)
    if st.button("Run probe", type="primary", disabled=not choices.ready, key=f"{key}_run"):
        st.session_state[f"{key}_preview"] = preview
        start_probe(store, choices, key, adaptive)
    render_active_run(store, key)
    render_outcome(key)


def render_outcome(key: str) -> None:
    """After a run of this form: how an adaptive run stopped, and what the run used beside
    what its preview said."""
    summary = st.session_state.get(f"{key}_summary")
    if summary is None:
        return
    sampling = st.session_state.get(f"{key}_sampling")
    if sampling is not None:
        st.info(
            f"Adaptive run {summary.status}: {sampling.calls_used} of the full grid's "
            f"{sampling.full_grid_calls} calls used, {sampling.calls_saved} saved."
        )
        st.markdown("  \n".join(cell_text(cell) for cell in sampling.cells))
    preview = st.session_state.get(f"{key}_preview")
    if preview is not None:
        st.caption(comparison_line(preview, summary))


def start_probe(
    store: Store, choices: ProbeChoices, key: str, adaptive: AdaptiveSettings | None = None
) -> None:
    """Check the form's run like the CLI, then start it in the background."""
    try:
        config = probe_run_config(store, choices)
    except RunSetupError as exc:
        st.error(f"Cannot run: {inert(exc)}")
        return
    if config is None:
        return
    run_and_remember(
        store, config, choices.task, choices.samples, key, choices.fingerprint, adaptive
    )


def resume_config(store: Store, run: Run, resolve=resolve_embedded):
    """The stored run rebuilt to continue it: (config, task, samples), or None when its
    embedded endpoint cannot be started (``resolve`` has said so on the page)."""
    from app.engine.workspace import get_task

    stored = RunConfig.from_dict(run.config)
    endpoint = resolve(stored.endpoint)
    if endpoint is None:
        return None
    transformation = stored.transformation_endpoint
    if transformation is not None:
        transformation = resolve(transformation)
        if transformation is None:
            return None
    config = replace(stored, endpoint=endpoint, transformation_endpoint=transformation)
    return config, get_task(store, stored.task_id), store.run_samples(run.id)


def render_interrupted_notice(store: Store, key: str) -> None:
    """Say so when the latest run stopped early (a killed process included), with Resume."""
    latest = store.runs()[:1]
    if latest and latest[0].status in ("interrupted", "cancelled"):
        run = latest[0]
        st.warning(
            f"Run `{run.id}` was {run.status} after {run.n_cases} of {run.n_planned} "
            "cases. **Resume** it; finished calls are not repeated."
        )
        st.session_state.setdefault(f"{key}_run_id", run.id)
        if st.button("Resume", key=f"{key}_resume_{run.id}"):
            rerun_stored(store, run, key, refused="Cannot resume")


def rerun_stored(store: Store, run: Run, key: str, *, refused: str) -> None:
    """Run a stored run again from its stored config, in the background (Resume, a repair);
    ``refused`` starts the line shown when its config cannot be rebuilt."""
    try:
        rebuilt = resume_config(store, run)
    except (KeyError, ValueError, TypeError) as exc:
        st.error(f"{refused}: {markdown_literal(str(exc))}")
        return
    if rebuilt is not None:
        config, task, samples = rebuilt
        st.session_state.pop(f"{key}_preview", None)  # the form's preview is not this run's
        run_and_remember(store, config, task, samples, key)
        render_active_run(store, key)
