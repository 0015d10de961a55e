"""The Probe page's panels: the run form (pickers, inputs, options), the run with progress, the
interrupted-run notice and the results of the latest run.

The checks and the config a run is made of come from ``app.engine.run_setup``, as for the CLI.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

import pandas as pd
import streamlit as st

from app.analysis.catalogue.formats import Unit, format_shown
from app.engine.background import ProgressSnapshot, RunJob, active_job, forget, get_job, start_run
from app.engine.progress import RunSummary
from app.engine.run_setup import (
    RunSetupError,
    endpoint_problem,
    plan_run,
    require_samples,
    with_sampling,
)
from app.engine.workspace import all_relations, all_tasks, make_runner
from app.inputs.column_mapping import suggest_mapping, suggest_reference_column
from app.inputs.datasets import DATASETS, datasets_for_task, load_dataset
from app.inputs.errors import InputError
from app.inputs.pasted import samples_from_pasted
from app.inputs.samples import samples_from_frame
from app.inputs.tasks import Task, custom_task
from app.inputs.uploads import encoding_note, read_upload
from app.ui import form_memory
from app.ui.components import (
    VERDICT_CELL_STYLES,
    endpoint_picker,
    fields_text,
    inert,
    page_link,
    resolve_embedded,
    shorten,
    side_by_side,
    verdict_badge,
)
from app.ui.data import data_changed
from core.answers import AnswerType
from core.run_config import RunConfig
from core.types import BATCH_KIND, Endpoint, Sample
from relations.base import Relation, RelationKind
from storage import Store
from storage.gate_verbs import GateCount

MAX_SHOWN_CASES = 60
DEFAULT_RELATIONS = {
    "sentiment": ["si.identity", "char.leet", "sentence.uppercase", "word.negation"],
    "sentiment_score": ["si.identity", "sentiment.exclamation", "char.random_replace"],
    "qa": ["si.identity", "char.swap_neighbours", "ad.distractor"],
    "reasoning": ["si.identity", "si.academic", "si.business", "rrb.word_reversal"],
    "math": ["si.identity", "si.academic", "rrb.sentence_reversal"],
    "nli": ["si.identity", "char.random_replace"],
    "relation_extraction": ["si.identity", "char.delete"],
}


def relation_picker(relations: list[Relation], task: Task, key: str) -> list[str]:
    """Multi-select grouped by family (options sorted by family, labelled 'family · name')."""
    usable = [r for r in relations if r.applies_to(task)]
    by_id = {r.id: r for r in usable}
    options = sorted(by_id, key=lambda rid: (by_id[rid].family, rid))
    defaults = [r for r in DEFAULT_RELATIONS.get(task.id, ["si.identity"]) if r in by_id]
    widget_key = f"{key}_{task.id}"
    form_memory.seed(widget_key, defaults, options, in_url=True)
    chosen = st.multiselect(
        "Relations",
        options,
        key=widget_key,
        format_func=lambda rid: f"{by_id[rid].family} · {by_id[rid].name}  ({rid})",
        help="Grouped by family. si = semantic invariance, rrb = structural perturbations, "
        "ad = AgentDiff, char/word/sentence = LLMorph parity, multi = multi-input.",
    )
    form_memory.keep(widget_key, in_url=True)
    if chosen:
        # The picker's chips can be cut off in a narrow column: every choice is listed here.
        st.caption(f"{len(chosen)} chosen: " + ", ".join(inert(rid) for rid in chosen))
        with st.expander(f"What the {len(chosen)} selected relations do"):
            for rid in chosen:
                relation = by_id[rid]
                note = " — *negative control*" if relation.negative_control else ""
                st.markdown(
                    f"**{inert(relation.name)}** `{rid}` · expects *{relation.expectation}*"
                    f"{note}  \n{inert(relation.description)}"
                )
    return chosen


def input_picker(task: Task, key: str) -> tuple[list[Sample], str | None]:
    """Inputs from a demo dataset, pasted text or an upload. Errors are shown, never raised."""
    demo_ids = datasets_for_task(task.id)
    sources = (["Demo dataset"] if demo_ids else []) + ["Paste", "Upload"]
    form_memory.seed(f"{key}_source", sources[0], sources, in_url=True)
    source = st.radio("Inputs", sources, horizontal=True, key=f"{key}_source")
    form_memory.keep(f"{key}_source", in_url=True)
    try:
        if source == "Demo dataset":
            form_memory.seed(f"{key}_dataset", demo_ids[0], demo_ids, in_url=True)
            dataset_id = st.selectbox(
                "Dataset", demo_ids, key=f"{key}_dataset", format_func=lambda d: DATASETS[d].title
            )
            form_memory.keep(f"{key}_dataset", in_url=True)
            samples = load_dataset(dataset_id)
            sizes = range(1, len(samples) + 1)
            form_memory.seed(f"{key}_limit", min(6, len(samples)), sizes, in_url=True)
            limit = st.slider("How many inputs", 1, len(samples), key=f"{key}_limit")
            form_memory.keep(f"{key}_limit", in_url=True)
            return samples[:limit], dataset_id
        if source == "Paste":
            hint = (
                "One input per line"
                if len(task.fields) == 1
                else f"One input per line, fields ({', '.join(task.fields)}) separated by a tab "
                "or ' ||| '"
            )
            form_memory.seed(f"{key}_paste", "")
            text = st.text_area(f"{hint}, or JSON lines", key=f"{key}_paste", height=150)
            form_memory.keep(f"{key}_paste")
            if not text.strip():
                return [], None
            samples = samples_from_pasted(text, list(task.fields))
            st.caption(f"{len(samples)} input(s) read")
            return samples, "pasted"
        upload = st.file_uploader(
            "CSV, JSONL or TXT", type=["csv", "tsv", "jsonl", "json", "txt"], key=f"{key}_upload"
        )
        if upload is None:
            return [], None
        frame = read_upload(upload.name, upload.getvalue())
        note = encoding_note(frame)
        if note:
            st.info(note)
        st.dataframe(frame.head(5), hide_index=True)
        columns = [str(c) for c in frame.columns]
        suggested = suggest_mapping(columns, list(task.fields))
        mapping = {}
        mapping_columns = st.columns(len(task.fields) + 1)
        for column_widget, field in zip(mapping_columns, task.fields, strict=False):
            choice = column_widget.selectbox(
                f"Column for {{{field}}}",
                ["—", *columns],
                index=(columns.index(suggested[field]) + 1) if suggested.get(field) else 0,
                key=f"{key}_map_{field}",
            )
            mapping[field] = None if choice == "—" else choice
        ref_default = suggest_reference_column(columns, exclude=[c for c in mapping.values() if c])
        ref_choice = mapping_columns[-1].selectbox(
            "Reference (optional)",
            ["—", *columns],
            index=(columns.index(ref_default) + 1) if ref_default else 0,
            key=f"{key}_map_reference",
        )
        reference = None if ref_choice == "—" else ref_choice
        samples = samples_from_frame(frame, mapping, reference_column=reference)
        st.caption(f"{len(samples)} input(s) from {upload.name}")
        return samples, upload.name
    except InputError as exc:
        st.error(f"Cannot use these inputs: {inert(exc)}")
    except (KeyError, ValueError) as exc:
        st.error(f"Cannot use these inputs: {inert(exc)}")
    return [], None


def sampling_options(endpoint: Endpoint, task: Task, key: str) -> tuple[Endpoint, int, int]:
    """Sampling parameters, repeats and seed; task defaults (e.g. reasoning's) preselected."""
    with st.expander("Options: sampling, repeats, seed"):
        cols = st.columns(4)
        temperature = cols[0].number_input(
            "Temperature", 0.0, 2.0, float(task.defaults.get("temperature", endpoint.temperature)),
            0.1, key=f"{key}_temperature",
        )  # fmt: skip
        max_tokens = cols[1].number_input(
            "Max tokens", 1, 4096, int(task.defaults.get("max_tokens", endpoint.max_tokens)),
            key=f"{key}_max_tokens",
        )  # fmt: skip
        repeats = cols[2].number_input(
            "Repeats", 1, 10, 1, key=f"{key}_repeats",
            help="Run every case k times; with si.identity this measures the noise floor",
        )  # fmt: skip
        seed = cols[3].number_input("Seed", 0, 2**31 - 1, 0, key=f"{key}_seed")
    endpoint = with_sampling(
        endpoint, task=task, temperature=float(temperature), max_tokens=int(max_tokens)
    )
    return endpoint, int(repeats), int(seed)


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
        while not job.wait(POLL_EVERY_S):
            # Drawing the bar is also where Streamlit notices a click and reruns the script.
            bar.progress(job.progress.fraction, text=progress_text(job.progress))
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


def summary_line(summary: RunSummary) -> str:
    """The verdict counts of a finished run and what it cost (calls, cache hits, time)."""
    counts = " · ".join(f"{verdict_badge(k)} {v}" for k, v in sorted(summary.verdicts.items()))
    head = f"Run `{summary.run_id}` — {summary.cases} cases: {counts}  \n"
    if summary.new_cases == 0 and summary.calls_made == 0 and not summary.retried_errors:
        return head + "Every case of this configuration was already stored: 0 model calls."
    retried = (
        f"{summary.retried_errors} errored case(s) sent again, " if summary.retried_errors else ""
    )
    return head + (
        f"{retried}{summary.calls_made} model calls, {summary.cache_hits} answered from the "
        f"cache, {summary.elapsed_s:.1f} s"
    )


def error_notice(summary: RunSummary) -> str | None:
    """A warning for a run with ERROR cases (shown above its results), or None."""
    line = summary.error_line()
    if not line:
        return None
    # The error kinds quote server replies: shown as text, never as live Markdown.
    text = _markdown_literal(line[0].upper() + line[1:])
    if summary.stop_reason:
        text += f". {summary.stop_reason[0].upper()}{summary.stop_reason[1:]}"
    return f"{text}. Press **Run probe** again with the same settings to retry them."


def _markdown_literal(text: str) -> str:
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~])", r"\\\1", text)


def run_and_remember(
    store: Store, config: RunConfig, task: Task, samples, key: str, fingerprint: str | None = None
) -> None:
    """Pre-flight, then start the run in the background and watch it; its summary and run id
    stay in the session, with the ``fingerprint`` of the form that asked for it."""
    problem = endpoint_problem(config)
    if problem:
        st.error(f"Not run: {_markdown_literal(problem)}")
        return
    running = active_job(store.path)
    if running is not None:
        st.warning(f"Run `{running.run_id}` is still going: cancel it or wait for it first.")
        return
    job = start_run(store.path, config, task, list(samples), runner_factory=make_runner)
    st.session_state[f"{key}_job"] = job.id
    st.session_state[f"{key}_job_owner"] = job.id
    st.session_state[f"{key}_fingerprint"] = fingerprint
    for stale in ("summary", "run_id"):  # the previous run's results are not this run's
        st.session_state.pop(f"{key}_{stale}", None)


# Above this share of rejected follow-ups, the rewriter is the problem, not the inputs.
GATE_HINT_SHARE = 0.5


def render_gate_summary(counts: list[GateCount], llm_relation_ids: frozenset[str]) -> None:
    """Per relation, how many follow-ups the validity gate rejected (nothing when none were).

    When it rejected most follow-ups of an LLM-prompted relation, a hint: the transformation
    endpoint's rewrites keep changing the meaning, so a stronger model should do them.
    """
    rejected = [count for count in counts if count.rejected]
    if not rejected:
        return
    st.markdown("**Validity gate** — follow-ups SKIPped before sending, per relation")
    st.dataframe(
        pd.DataFrame(
            {
                "relation": [c.relation_id for c in rejected],
                "follow-ups": [c.followups for c in rejected],
                "rejected": [c.rejected for c in rejected],
                "share rejected": [c.rejected_share for c in rejected],
            }
        ),
        hide_index=True,
        column_config={"share rejected": st.column_config.NumberColumn(format="percent")},
    )
    for count in rejected:
        if count.relation_id in llm_relation_ids and count.rejected_share > GATE_HINT_SHARE:
            st.warning(
                f"The validity gate rejected {count.rejected} of {count.followups} follow-ups of "
                f"{count.relation_id}: its rewrites often change the meaning or carry the "
                "rewriter's own comments. Point the transformation endpoint at a stronger model "
                "(**Transformation endpoint** in the run form)."
            )


def _llm_relation_ids(store: Store) -> frozenset[str]:
    return frozenset(r.id for r in all_relations(store) if r.kind == RelationKind.LLM)


def render_results(store, run_id: str, key: str) -> None:
    """The side-by-side results of one run, with filters by verdict and relation."""
    cases = store.cases_for([run_id])
    if not cases:
        st.info("This run has no cases yet.")
        return
    render_gate_summary(store.gate_counts(run_id), _llm_relation_ids(store))
    frame = pd.DataFrame(cases)
    cols = st.columns(2)
    verdicts = cols[0].multiselect(
        "Verdict", ["FAIL", "PASS", "SKIP", "ERROR"], default=[], key=f"{key}_verdicts",
        placeholder="all verdicts",
    )  # fmt: skip
    relation_ids = sorted(frame["relation_id"].unique())
    relations = cols[1].multiselect(
        "Relation", relation_ids, default=[], key=f"{key}_relations", placeholder="all relations"
    )
    if verdicts:
        frame = frame[frame["verdict"].isin(verdicts)]
    if relations:
        frame = frame[frame["relation_id"].isin(relations)]
    # Text cells are shortened ("—" when missing; the expanders below show them whole), the value
    # written as the Analysis tables write a decimal, and the verdict coloured.
    table = pd.DataFrame(
        {
            "verdict": frame["verdict"].map(str),
            "relation": frame["relation_id"],
            "field": frame["target"],
            "source input": frame["source_input"].map(fields_text).map(shorten),
            "follow-up input": frame["followup_input"].map(fields_text).map(shorten),
            "source answer": frame["source_answer"].map(shorten),
            "follow-up answer": frame["followup_answer"].map(shorten),
            "value": frame["value"].map(lambda v: format_shown(v, Unit.DECIMAL)),
            "reason": frame["reason"].map(shorten),
        }
    )
    styled = table.style.map(lambda v: VERDICT_CELL_STYLES.get(v, ""), subset=["verdict"])
    st.dataframe(
        styled,
        hide_index=True,
        column_config={
            "value": st.column_config.TextColumn(
                help="The oracle's measured value (cosine, |Δ|, 1/0 for labels); — when the case "
                "was not judged (SKIP, ERROR)"
            ),
            "source input": st.column_config.TextColumn(width="medium"),
            "follow-up input": st.column_config.TextColumn(width="medium"),
        },
    )
    st.caption(
        f"{len(frame)} case(s) shown. Expand a case for the full texts, differences highlighted."
    )
    order = {"FAIL": 0, "ERROR": 1, "PASS": 2, "SKIP": 3}
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    ranked = sorted(records, key=lambda c: order.get(c["verdict"], 9))
    for case in ranked[:MAX_SHOWN_CASES]:
        value = f" · value {case['value']:.3f}" if case.get("value") is not None else ""
        title = f"{case['verdict']} · {case['relation_id']} · {case['target']}{value}"
        with st.expander(inert(title, one_line=True)):
            st.markdown(f"{verdict_badge(case['verdict'])} {inert(case['reason'] or '')}")
            side_by_side(
                "Source input", fields_text(case["source_input"]),
                "Follow-up input", fields_text(case["followup_input"]),
            )  # fmt: skip
            if case.get("source_output") is not None or case.get("followup_output") is not None:
                side_by_side(
                    f"Source output → {case.get('source_answer')}", case.get("source_output"),
                    f"Follow-up output → {case.get('followup_answer')}", case.get("followup_output"),
                )  # fmt: skip
    if len(ranked) > MAX_SHOWN_CASES:
        st.caption(f"Showing the first {MAX_SHOWN_CASES}; filter to see others, or use Analysis.")


def custom_task_form(store, key: str, task_key: str) -> None:
    """Define a task: a template with {field} placeholders and an answer type (saved in the DB).
    A saved task is chosen at once in the Task picker ``task_key``."""
    flash = st.session_state.pop(f"{key}_flash", None)
    if flash:
        st.success(flash)
    with st.expander("Define a custom task"), st.form(f"{key}_form"):
        task_id = st.text_input("Task id", placeholder="toxicity", key=f"{key}_id")
        name = st.text_input("Name", placeholder="Toxicity label", key=f"{key}_name")
        template = st.text_area(
            "Prompt template ({field} placeholders)",
            placeholder="Is this comment toxic? Answer toxic or fine.\n\nComment: {text}",
            key=f"{key}_template",
        )
        answer_type = st.selectbox(
            "Answer type", [a.value for a in AnswerType], key=f"{key}_answer_type"
        )
        labels = st.text_input("Labels (comma-separated, for label answers)", key=f"{key}_labels")
        if st.form_submit_button("Save task"):
            try:
                task = custom_task(
                    task_id.strip(), name.strip(), template, answer_type, labels.split(",")
                )
            except ValueError as exc:
                st.error(str(exc))
                return
            store.save_task(task.id, task.name, task.template, task.answer_type, task.labels)
            # The Task list above was drawn before the save: draw the page again with the new
            # task in it and chosen, and say so there.
            st.session_state[f"{task_key}_saved"] = task.id
            st.session_state[f"{key}_flash"] = (
                f"Saved task {task.id} with fields {', '.join(task.fields)}."
            )
            st.rerun()


# ---------------------------------------------------------------- the page's panels


@dataclass(frozen=True)
class ProbeChoices:
    """What the run form holds: the same choices the CLI's ``run`` arguments make."""

    endpoint: Endpoint  # sampling options applied; the embedded one not yet resolved
    task: Task
    relation_ids: tuple[str, ...]
    samples: tuple[Sample, ...]
    dataset: str | None
    repeats: int
    seed: int
    # The picker's choice; used only when an LLM-prompted relation rewrites inputs.
    transformation_endpoint: Endpoint

    @property
    def ready(self) -> bool:
        return bool(self.relation_ids) and bool(self.samples)

    @property
    def fingerprint(self) -> str:
        """What makes the form's run: results are shown only while the form still says this."""
        return repr(
            (
                self.endpoint.name, self.endpoint.temperature, self.endpoint.max_tokens,
                self.task.id, self.relation_ids, self.samples, self.dataset, self.repeats,
                self.seed, self.transformation_endpoint.name,
            )
        )  # fmt: skip

    def planned_cases(self) -> int:
        """About how many cases a run makes: one per input, relation and repeat."""
        return len(self.samples) * len(self.relation_ids) * self.repeats

    def max_calls(self) -> int:
        """At most this many model calls: each input's source once per repeat, and one
        follow-up per case (answers already stored are not asked again)."""
        return len(self.samples) * self.repeats + self.planned_cases()


def render_run_form(store: Store, key: str) -> ProbeChoices:
    """Endpoint, task, relations on the left; inputs, options, transformation on the right."""
    tasks = all_tasks(store)
    left, right = st.columns([1, 1])
    with left:
        endpoint = endpoint_picker(store, "Model endpoint", key=f"{key}_endpoint", remember=True)
        task_ids = list(tasks)
        saved_task = st.session_state.pop(f"{key}_task_saved", None)
        if saved_task in tasks:  # a custom task just saved: show it chosen at once
            st.session_state[f"{key}_task"] = saved_task
        # Sentiment has short answers: the quickest first probe.
        form_memory.seed(f"{key}_task", "sentiment", task_ids, in_url=True)
        task_id = st.selectbox(
            "Task", task_ids, key=f"{key}_task", format_func=lambda t: f"{tasks[t].name} ({t})"
        )
        form_memory.keep(f"{key}_task", in_url=True)
        task = tasks[task_id]
        custom_task_form(store, key=f"{key}_custom_task", task_key=f"{key}_task")
        relation_ids = relation_picker(all_relations(store, task.id), task, key=f"{key}_relations")
    with right:
        samples, dataset = input_picker(task, key=f"{key}_inputs")
        endpoint, repeats, seed = sampling_options(endpoint, task, key=f"{key}_options")
        transformation = endpoint_picker(
            store, "Transformation endpoint (LLM-prompted relations)", key=f"{key}_transform",
            help="Rewrites inputs for paraphrase-style relations; the embedded model by default.",
            remember=True,
        )  # fmt: skip
    return ProbeChoices(
        endpoint=endpoint,
        task=task,
        relation_ids=tuple(relation_ids),
        samples=tuple(samples),
        dataset=dataset,
        repeats=repeats,
        seed=seed,
        transformation_endpoint=transformation,
    )


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
    if choices.endpoint.kind == BATCH_KIND:
        # Never called from here: its runs go out as batch files (the panel below).
        st.info(
            f"**{choices.endpoint.name}** is answered by batch files: export this run under "
            "**Batch mode** below, have the batch engine answer it, then import the results."
        )
    elif st.button("Run probe", type="primary", disabled=not choices.ready, key=f"{key}_run"):
        start_probe(store, choices, key)
    render_active_run(store, key)


def start_probe(store: Store, choices: ProbeChoices, key: str) -> None:
    """Check the form's run like the CLI, then start it in the background."""
    try:
        config = probe_run_config(store, choices)
    except RunSetupError as exc:
        st.error(f"Cannot run: {inert(exc)}")
        return
    if config is None:
        return
    run_and_remember(store, config, choices.task, choices.samples, key, choices.fingerprint)


def resume_config(store: Store, run: dict, resolve=resolve_embedded):
    """The stored run rebuilt to continue it: (config, task, samples), or None when its
    embedded endpoint cannot be started (``resolve`` has said so on the page)."""
    from app.engine.workspace import get_task

    config_data = run["config"]
    if isinstance(config_data, str):  # ``Store.runs`` rows keep it as JSON text
        config_data = json.loads(config_data)
    stored = RunConfig.from_dict(config_data)
    endpoint = resolve(stored.endpoint)
    if endpoint is None:
        return None
    transformation = stored.transformation_endpoint
    if transformation is not None:
        transformation = resolve(transformation)
        if transformation is None:
            return None
    config = replace(stored, endpoint=endpoint, transformation_endpoint=transformation)
    return config, get_task(store, stored.task_id), store.run_samples(run["id"])


def render_interrupted_notice(store: Store, key: str) -> None:
    """Say so when the latest run stopped early (a killed process included), with Resume."""
    latest = store.runs()[:1]
    if latest and latest[0]["status"] in ("interrupted", "cancelled"):
        run = latest[0]
        st.warning(
            f"Run `{run['id']}` was {run['status']} after {run['n_cases']} of {run['n_planned']} "
            "cases. **Resume** it; finished calls are not repeated."
        )
        st.session_state.setdefault(f"{key}_run_id", run["id"])
        if st.button("Resume", key=f"{key}_resume_{run['id']}"):
            rerun_stored(store, run, key, refused="Cannot resume")


def rerun_stored(store: Store, run: dict, key: str, *, refused: str) -> None:
    """Run a stored run again from its stored config, in the background (Resume, a repair);
    ``refused`` starts the line shown when its config cannot be rebuilt."""
    try:
        rebuilt = resume_config(store, run)
    except (KeyError, ValueError, TypeError) as exc:
        st.error(f"{refused}: {_markdown_literal(str(exc))}")
        return
    if rebuilt is not None:
        config, task, samples = rebuilt
        run_and_remember(store, config, task, samples, key)
        render_active_run(store, key)


def render_delete_run(store: Store, run_id: str, key: str) -> None:
    """A Delete button that asks first; deleting removes the run, its cases and their labels."""
    pending = f"{key}_confirm_{run_id}"
    if not st.session_state.get(pending):
        if st.button("Delete this run…", key=f"{key}_delete_{run_id}"):
            st.session_state[pending] = True
            st.rerun()
        return
    run = store.run(run_id)
    n_cases = len(store.recorded_case_verdicts(run_id)) if run else 0
    st.warning(
        f"Delete run `{run_id}` with its {n_cases} cases and their labels? This cannot be undone."
    )
    cols = st.columns(2)
    if cols[0].button("Yes, delete", type="primary", key=f"{key}_delete_yes_{run_id}"):
        store.delete_run(run_id)
        st.session_state.pop(pending, None)
        for suffix in ("summary", "run_id"):
            st.session_state.pop(f"{key}_{suffix}", None)
        data_changed()
        st.rerun()
    if cols[1].button("Keep it", key=f"{key}_delete_no_{run_id}"):
        st.session_state.pop(pending, None)
        st.rerun()


def render_latest_results(store: Store, key: str, choices: ProbeChoices | None = None) -> None:
    """The summary line of this session's last run and its cases side by side; with the form's
    ``choices``, only while the form still describes that run (a resumed run always shows)."""
    asked_by = st.session_state.get(f"{key}_fingerprint")
    if choices is not None and asked_by is not None and asked_by != choices.fingerprint:
        st.caption(
            "The form has changed since the last run: press **Run probe** for the results of "
            "this configuration (answers already stored are reused)."
        )
        return
    summary = st.session_state.get(f"{key}_summary")
    if summary is not None:
        notice = error_notice(summary)
        if notice:
            st.warning(notice)
        st.markdown(summary_line(summary))
    run_id = st.session_state.get(f"{key}_run_id")
    if run_id and store.run(run_id) is not None:
        page_link(
            "pages/analysis.py", "Open Analysis", ":material/analytics:",
            help="Rates, intervals and heatmaps of this run with the others",
        )  # fmt: skip
        st.subheader("Source and follow-up, side by side")
        render_results(store, run_id, key=f"{key}_results")
        render_delete_run(store, run_id, key=f"{key}_manage")
