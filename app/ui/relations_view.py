"""The Relations page's pieces: catalog table, detail panel, try-it box (the custom relation
editor is ``custom_relation_editor``).

Pure helpers (``catalog_frame``, ``filter_relations``, ``try_relation`` …) do the work and are
unit-tested; the ``render_*`` functions only lay out widgets around them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from app.engine.workspace import all_relations
from app.ui.components import inert, side_by_side
from app.ui.data import get_store
from app.ui.probe_form import rewrite_candidates_option
from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations.apply import (
    ONE_CANDIDATE,
    Candidates,
    SkippedFollowUp,
    generate_followups,
    transform_text,
)
from relations.base import FollowUp, NotApplicable, Relation, RelationKind, Rewriter
from relations.candidates import DETAILS_KEY
from relations.catalog import describe_relation
from relations.validity import INVALID

log = logging.getLogger(__name__)

ANY_TASK = "any task"
DEFAULT_TRY_TEXT = (
    "The bakery sold 48 loaves on Monday. It was a great day. Sales on Tuesday were 12 fewer. "
    "How many loaves were sold on Tuesday?"
)
# Partners for relations that mix in other inputs (interleave, sequential overload, pairwise).
DEFAULT_PARTNERS = (
    "A train leaves at 9:15 and arrives at 11:45. How long is the journey?",
    "Ana has three times as many stamps as Ben, who has 14. How many does Ana have?",
    "The garden is 6 metres wide and 9 metres long. What is its area?",
)


def transformation_rewriter(count: int = 1) -> tuple[Rewriter, Candidates]:
    """The embedded model as the transformation endpoint for trying LLM-prompted relations, and
    best of ``count`` candidates as a run asks for them (the same calls, worked examples and
    MiniLM ranking).

    Lazy: the server is started (and waited for) only when a relation actually asks for a
    rewrite, the embedder only when candidates are ranked; calls share the runs' cache, so
    trying the same text twice is instant.
    """
    from app.engine.calls import TransformationError, make_sync_candidate_rewriter
    from app.engine.fluency import embedded_rewriter
    from app.engine.model_server import get_server
    from app.ui.components import resolve_embedded

    def ask(prompt: str, candidate: int) -> str:
        live = resolve_embedded(get_server().endpoint())
        if live is None:
            raise NotApplicable("the embedded model is not available as transformation endpoint")
        try:
            return make_sync_candidate_rewriter(get_store(), live)(prompt, candidate)
        except TransformationError as exc:
            raise NotApplicable(str(exc)) from None

    def similarity(a: str, b: str) -> float:
        from app.engine.embedder import EmbeddingCache
        from app.engine.workspace import default_embedder

        return EmbeddingCache(default_embedder(), get_store()).similarity(a, b)

    # The prompts a run gives the embedded rewriter: no worked examples (``app.engine.plan``).
    # The embedded model is a small rewriter: the gate holds it to the closer rule, as in a run.
    candidates = Candidates(count, ask, similarity, small_rewriter=embedded_rewriter())
    return (lambda prompt: ask(prompt, 0)), candidates


# ---------------------------------------------------------------- catalog (pure)


def _tasks_text(tasks: Sequence[str]) -> str:
    return "any" if list(tasks) == ["*"] else ", ".join(tasks)


def catalog_frame(relations: Sequence[Relation]) -> pd.DataFrame:
    """One row per relation with the catalog columns the page shows."""
    rows = []
    for relation in relations:
        entry = describe_relation(relation, BUILTIN_TASKS.values())
        rows.append(
            {
                "id": entry["id"],
                "name": entry["name"],
                "family": entry["family"],
                "category": entry["category"],
                "kind": entry["kind"],
                "output relation": entry["output_relation"],
                "tasks": _tasks_text(entry["tasks"]),
                "ref": entry["ref"],
                "available": entry["available"],
                "unavailable because": entry["unavailable_reason"] or "",
            }
        )
    columns = [
        "id",
        "name",
        "family",
        "category",
        "kind",
        "output relation",
        "tasks",
        "ref",
        "available",
        "unavailable because",
    ]
    return pd.DataFrame(rows, columns=columns)


def filter_relations(
    relations: Sequence[Relation],
    *,
    families: Iterable[str] = (),
    categories: Iterable[str] = (),
    task: str | None = None,
) -> list[Relation]:
    """Relations in any of ``families`` and ``categories`` (empty = all) that apply to ``task``."""
    families, categories = set(families), set(categories)
    return [
        r
        for r in relations
        if (not families or r.family in families)
        and (not categories or r.category in categories)
        and (task in (None, ANY_TASK) or r.applies_to(BUILTIN_TASKS[task]))
    ]


# ---------------------------------------------------------------- trying a relation (pure)


def main_field(relation: Relation) -> str:
    """The field a free text goes into when trying the relation."""
    if relation.fields:
        return relation.fields[0]
    example_fields = relation.params.get("example_fields") or {}
    return next(iter(example_fields), "text")


def relation_task(relation: Relation) -> str:
    """A task the relation applies to (used for trying it): its first task, else 'reasoning'."""
    task_ids = relation.task_ids(BUILTIN_TASKS.values())
    return task_ids[0] if task_ids else "reasoning"


def extra_fields(relation: Relation) -> dict[str, str]:
    """Fields besides the main one that the relation's example needs (e.g. head / tail)."""
    example_fields = dict(relation.params.get("example_fields") or {})
    example_fields.pop(main_field(relation), None)
    return example_fields


def example_partners(relation: Relation, field: str) -> list[Sample]:
    declared = relation.params.get("example_partners")
    if declared:
        return [Sample(fields=dict(fields)) for fields in declared]
    return [Sample(fields={field: text}) for text in DEFAULT_PARTNERS]


@dataclass(frozen=True)
class TryResult:
    """What trying a relation produced: the source fields and a follow-up, a skip or an error."""

    source_fields: dict[str, str]
    outcome: FollowUp | SkippedFollowUp | None
    error: str | None = None

    @property
    def followup(self) -> FollowUp | None:
        return self.outcome if isinstance(self.outcome, FollowUp) else None


def try_relation(
    relation: Relation,
    text: str,
    *,
    seed: int = 0,
    partner_texts: Sequence[str] = (),
    fields: dict[str, str] | None = None,
    rewrite: Rewriter | None = None,
    candidates: Candidates = ONE_CANDIDATE,
) -> TryResult:
    """Apply ``relation`` to ``text`` (plus any other ``fields``) as the try-it box does.

    Partners default to the relation's example partners (or a few demo problems), so relations
    that mix in other inputs still show something. A bug in a relation becomes ``error``.
    """
    field = main_field(relation)
    partners = (
        [Sample(fields={field: t}) for t in partner_texts if t.strip()]
        if any(t.strip() for t in partner_texts)
        else example_partners(relation, field)
    )
    others = {k: v for k, v in (fields or {}).items() if k != field}
    source_fields = {field: text, **others}
    try:
        if not others:
            outcome = transform_text(
                relation,
                text,
                seed=seed,
                task=BUILTIN_TASKS[relation_task(relation)],
                field=field,
                partners=partners,
                rewrite=rewrite,
                candidates=candidates,
            )
        else:
            outcomes = generate_followups(
                relation,
                Sample(fields=source_fields),
                BUILTIN_TASKS[relation_task(relation)],
                list(source_fields),
                run_seed=seed,
                partners=partners,
                rewrite=rewrite,
                candidates=candidates,
            )
            outcome = outcomes[0] if outcomes else SkippedFollowUp("*", "no follow-up")
    except Exception as exc:  # a broken relation must not take the page down
        log.exception("relation %s failed on try-it input", relation.id)
        return TryResult(source_fields, None, f"{type(exc).__name__}: {exc}")
    return TryResult(source_fields, outcome)


def worked_example(relation: Relation, rewrite: Rewriter | None = None) -> TryResult:
    """The relation's example input and its follow-up, computed live (seed 0)."""
    return try_relation(
        relation,
        relation.example,
        fields=extra_fields(relation) or None,
        rewrite=rewrite,
    )


def changed_fields(result: TryResult) -> list[tuple[str, str, str]]:
    """(field, source text, follow-up text) for every field the follow-up changed or added."""
    followup = result.followup
    if followup is None:
        return []
    base = followup.source_fields if followup.source_fields is not None else result.source_fields
    rows = [
        (name, base.get(name, ""), value)
        for name, value in followup.fields.items()
        if value != base.get(name, "")
    ]
    if not rows:  # identical follow-up (e.g. identity): show the main field anyway
        name = next(iter(followup.fields))
        rows = [(name, base.get(name, ""), followup.fields[name])]
    return rows


# ---------------------------------------------------------------- rendering


def _label(relation: Relation) -> str:
    return f"{relation.id} — {relation.name}"


def render_followup(result: TryResult, relation: Relation) -> None:
    """Show a try-it / worked-example result: diff, skip reason or error."""
    if result.error:
        st.error(f"The relation failed on this input: {inert(result.error)}")
        return
    outcome = result.outcome
    if isinstance(outcome, SkippedFollowUp) or outcome is None:
        reason = outcome.reason if outcome else "no follow-up"
        if relation.kind == RelationKind.LLM and "transformation endpoint" in reason:
            reason = (
                f"{reason}. Trying an LLM-prompted relation needs a transformation endpoint "
                "(add one on the Endpoints page)."
            )
        st.info(f"No follow-up: {inert(reason)}")
        return
    for name, source, followup in changed_fields(result):
        side_by_side(f"Source · {name}", source, f"Follow-up · {name}", followup)
    if outcome.note:
        st.caption(inert(outcome.note))
    if outcome.preamble:
        with st.expander("Preamble sent before the task prompt"):
            st.text(outcome.preamble)
    if outcome.companions:
        with st.expander("Companion inputs (also sent to the model)"):
            st.json(outcome.companions)
    for line in candidate_summaries(outcome):
        st.caption(inert(line))


def candidate_summaries(followup: FollowUp) -> list[str]:
    """What the best of k did, one line per rewritten field: how many candidates were asked, how
    many the gate passed, which was kept (none passing: a run SKIPs the case), and why the gate
    rejected each of the others."""
    details = followup.details
    by_field = details.get("fields") or {followup.target: details}
    lines = []
    for name, field_details in by_field.items():
        tried = field_details.get(DETAILS_KEY)
        if not tried or "valid" not in tried:
            continue
        head = f"{name}: {tried['tried']} rewrite candidate(s) asked, {tried['valid']} valid"
        if "by_sentence" in tried:
            lines.append(_by_sentence_summary(head, tried))
            continue
        if tried["valid"]:
            line = f"{head}; candidate #{tried['chosen']} kept (the closest to the source)."
        else:
            line = f"{head}; none passed the validity gate, so a run would SKIP this case."
        rejected = [
            f"#{c['n']} {c['gate'].removeprefix(INVALID + ': ')}"
            for c in tried.get("candidates", [])
            if c.get("gate")
        ]
        lines.append(line + (f" Rejected: {'; '.join(rejected)}." if rejected else ""))
    return lines


def _by_sentence_summary(head: str, tried: dict) -> str:
    """A small rewriter's rewrite, asked sentence by sentence: which sentences were reworded."""
    sentences = tried["by_sentence"]
    reworded = sum(1 for s in sentences if s["kept"] == "reworded")
    asked = sum(1 for s in sentences if s["kept"] != "question")
    questions = len(sentences) - asked
    line = f"{head}, sentence by sentence: {reworded} of {asked} sentence(s) reworded"
    if questions:
        line += f", {questions} question(s) kept as written"
    if not reworded:
        return line + "; none passed the validity gate, so a run would SKIP this case."
    line += " (each the closest valid candidate; the others as written)."
    if tried.get("gate"):
        reason = tried["gate"].removeprefix(INVALID + ": ")
        line += f" Put back together, the text fails the gate ({reason}): a run would SKIP it."
    return line


def render_catalog(relations: Sequence[Relation]) -> None:
    """Filters, the catalog table, unavailable relations and the detail panel."""
    families = sorted({r.family for r in relations})
    categories = sorted({r.category for r in relations})
    col_family, col_category, col_task = st.columns(3)
    # wrap: in a column, chips stay on one scrolling row and push the text field out of view
    # (the box then opens from its chevron alone; see probe_form.relation_picker)
    chosen_families = col_family.multiselect("Family", families, key="relations_family", wrap=True)
    chosen_categories = col_category.multiselect(
        "Category", categories, key="relations_category", wrap=True
    )
    task = col_task.selectbox("Task", [ANY_TASK, *BUILTIN_TASKS], key="relations_task")
    shown = filter_relations(
        relations, families=chosen_families, categories=chosen_categories, task=task
    )
    st.caption(f"{len(shown)} of {len(relations)} relations")
    frame = catalog_frame(shown)
    st.dataframe(frame, hide_index=True, width="stretch")

    unavailable = frame[~frame["available"]] if not frame.empty else frame
    if not unavailable.empty:
        lines = "\n".join(
            f"- `{row['id']}`: {row['unavailable because']}" for _, row in unavailable.iterrows()
        )
        st.warning(f"Unavailable relations:\n{lines}")

    if not shown:
        st.info("No relation matches these filters.")
        return
    by_label = {_label(r): r for r in shown}
    picked = st.selectbox("Details of", list(by_label), key="relations_detail")
    render_detail(by_label[picked])


def render_detail(relation: Relation) -> None:
    entry = describe_relation(relation, BUILTIN_TASKS.values())
    st.subheader(inert(relation.name, one_line=True))
    st.markdown(inert(relation.description))
    facts = {
        "id": entry["id"],
        "family / category": f"{entry['family']} / {entry['category']}",
        "kind": entry["kind"],
        "expected output relation": entry["output_relation"],
        "tasks": _tasks_text(entry["tasks"]),
        "fields": ", ".join(entry["fields"]) if entry["fields"] else "the task's",
        "ref": entry["ref"] or "—",
    }
    st.table(pd.DataFrame({"value": list(facts.values())}, index=list(facts)), hide_header=True)
    if entry["preconditions"]:
        st.markdown(f"**Preconditions.** {entry['preconditions']}")
    if relation.negative_control:
        st.caption("Negative control: not strictly meaning-preserving.")
    if not entry["available"]:
        st.warning(f"Unavailable: {entry['unavailable_reason']}")
        return
    st.markdown("**Worked example**")
    # The catalog never starts a model: LLM-prompted examples are tried in "Try it".
    render_followup(worked_example(relation, None), relation)


def render_try_it(relations: Sequence[Relation]) -> None:
    """Pick any relation, type a text (and partners / seed), see the follow-up live."""
    by_label = {_label(r): r for r in relations}
    picked = st.selectbox("Relation", list(by_label), key="relations_try_relation")
    relation = by_label[picked]
    st.caption(f"{inert(relation.description)} Expected output: {relation.expectation}.")
    field = main_field(relation)
    use_model = st.toggle(
        "Rewrite with the embedded model (LLM-prompted relations)",
        value=True,
        key="relations_try_use_model",
        help="Off: LLM-prompted relations only explain what they would need.",
    )
    # A custom relation is tried on the example its author wrote (its own box, so switching
    # back and forth keeps each text); built-in relations share one box and one default text.
    custom = relation.family == "custom"
    text = st.text_area(
        f"Text ({field})",
        value=relation.example if custom and relation.example else DEFAULT_TRY_TEXT,
        key=f"relations_try_text_{relation.id}" if custom else "relations_try_text",
        height=120,
    )
    fields = {
        name: st.text_input(name, value=value, key=f"relations_try_{relation.id}_{name}")
        for name, value in extra_fields(relation).items()
    }
    col_partner, col_seed = st.columns([3, 1])
    partners = col_partner.text_area(
        "Partner inputs (optional, one per line; default: demo inputs)",
        key="relations_try_partners",
        height=80,
    )
    seed = col_seed.number_input("Seed", min_value=0, value=0, step=1, key="relations_try_seed")
    # Best of k as a run asks for it, so what is shown here is what a run would send.
    count = rewrite_candidates_option("relations_try") if relation.kind == RelationKind.LLM else 1
    if not text.strip():
        st.info("Type a text to transform.")
        return
    # One slot for the result: a rerun replaces the previous relation's follow-up at once with
    # the spinner, instead of leaving it on screen while an LLM rewrite runs.
    with st.empty().container():
        rewrites = use_model and relation.kind == RelationKind.LLM
        spinner = st.spinner("Rewriting with the embedded model…", show_time=True)
        rewrite, candidates = transformation_rewriter(count) if use_model else (None, ONE_CANDIDATE)
        with spinner if rewrites else nullcontext():
            result = try_relation(
                relation,
                text,
                seed=int(seed),
                partner_texts=partners.splitlines(),
                fields=fields or None,
                rewrite=rewrite,
                candidates=candidates,
            )
        render_followup(result, relation)


def load_relations() -> list[Relation]:
    """Built-in relations plus the stored custom ones."""
    return all_relations(get_store())
