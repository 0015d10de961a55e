"""The Probe page's run form: the endpoint, task, relations, inputs and options a run is made of.

What the form holds is a ``ProbeChoices``: the same choices the CLI's ``run`` arguments make.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.engine.run_setup import with_sampling
from app.engine.workspace import all_relations, all_tasks
from app.inputs.column_mapping import suggest_mapping, suggest_reference_column
from app.inputs.datasets import DATASETS, datasets_for_task, load_dataset
from app.inputs.errors import InputError
from app.inputs.pasted import samples_from_pasted
from app.inputs.samples import samples_from_frame
from app.inputs.uploads import encoding_note, read_upload
from app.ui import form_memory
from app.ui.components import endpoint_picker, inert
from core.answers import AnswerType
from core.run_config import (
    DEFAULT_NLI_TARGET,
    DEFAULT_REWRITE_CANDIDATES,
    MAX_REWRITE_CANDIDATES,
    NLI_TARGETS,
    REWRITE_CANDIDATES_HELP,
)
from core.tasks import Task, custom_task
from core.types import Endpoint, Sample
from relations.base import CLAIM_FIELDS, Relation
from storage import Store

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
        # In a column Streamlit keeps the chips on one sideways-scrolling row, its text field
        # after the last chip, out of view: a click on the box then opened nothing, only the
        # chevron did. Wrapped, the field follows the chips in view.
        wrap=True,
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


def nli_target_picker(task: Task, key: str) -> str:
    """Which NLI input the same-label relations perturb; shown only for an NLI task (one with a
    hypothesis judged against another field). Other tasks keep the default."""
    claims = CLAIM_FIELDS.intersection(task.perturbable_fields)
    if not claims or not set(task.perturbable_fields) - claims:
        return DEFAULT_NLI_TARGET
    form_memory.seed(key, DEFAULT_NLI_TARGET, NLI_TARGETS, in_url=True)
    target = st.selectbox(
        "Perturb which NLI input",
        NLI_TARGETS,
        key=key,
        help="For the relations that expect the same label. The premise by default: an edited "
        "hypothesis can claim something else, and then the label may rightly change. Choose "
        "'hypothesis' or 'both' to test exactly that. Relations that expect a change, and the "
        "nli.* relations, pick their own input.",
    )
    form_memory.keep(key, in_url=True)
    return str(target)


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


def rewrite_candidates_option(key: str) -> int:
    """Best of k for LLM-prompted relations, in an advanced section of its own."""
    with st.expander("Options: rewrite candidates (LLM-prompted relations)"):
        count = st.number_input(
            "Rewrite candidates (k)", 1, MAX_REWRITE_CANDIDATES, DEFAULT_REWRITE_CANDIDATES,
            key=f"{key}_rewrite_candidates", help=REWRITE_CANDIDATES_HELP,
        )  # fmt: skip
    return int(count)


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
    nli_target: str = DEFAULT_NLI_TARGET
    rewrite_candidates: int = DEFAULT_REWRITE_CANDIDATES  # best of k for those relations

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
                self.seed, self.transformation_endpoint.name, self.nli_target,
                self.rewrite_candidates,
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
        nli_target = nli_target_picker(task, key=f"{key}_nli_target")
    with right:
        samples, dataset = input_picker(task, key=f"{key}_inputs")
        endpoint, repeats, seed = sampling_options(endpoint, task, key=f"{key}_options")
        transformation = endpoint_picker(
            store, "Transformation endpoint (LLM-prompted relations)", key=f"{key}_transform",
            help="Rewrites inputs for paraphrase-style relations; the embedded model by default.",
            remember=True,
        )  # fmt: skip
        candidates = rewrite_candidates_option(key=f"{key}_options")
    return ProbeChoices(
        endpoint=endpoint,
        task=task,
        relation_ids=tuple(relation_ids),
        samples=tuple(samples),
        dataset=dataset,
        repeats=repeats,
        seed=seed,
        transformation_endpoint=transformation,
        nli_target=nli_target,
        rewrite_candidates=candidates,
    )
