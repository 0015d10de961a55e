"""The Relations page's pieces: catalog table, detail panel, try-it box, custom relation editor.

Pure helpers (``catalog_frame``, ``filter_relations``, ``try_relation``, ``spec_from_form`` …) do
the work and are unit-tested; the ``render_*`` functions only lay out widgets around them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from app.engine.workspace import all_relations
from app.inputs.tasks import BUILTIN_TASKS
from app.ui.components import inert, side_by_side
from app.ui.data import data_changed, get_store
from core.types import Sample
from relations.apply import SkippedFollowUp, generate_followups, transform_text
from relations.base import FollowUp, NotApplicable, Relation, RelationKind, Rewriter
from relations.custom import (
    KINDS,
    SINGLE_INPUT_EXPECTATIONS,
    export_specs,
    import_specs,
    save_spec,
    slugify,
)

log = logging.getLogger(__name__)

ANY_TASK = "any task"
NEW_RELATION = "(new custom relation)"
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
KIND_LABELS = {
    "replace": "find / replace",
    "regex": "regular expression",
    "template": "prefix / suffix template",
    "llm_rewrite": "LLM rewrite (needs a transformation endpoint)",
}


def transformation_rewriter() -> Rewriter | None:
    """The embedded model as the transformation endpoint for trying LLM-prompted relations.

    Lazy: the server is started (and waited for) only when a relation actually asks for a
    rewrite; calls share the runs' cache, so trying the same text twice is instant.
    """
    from app.engine.calls import TransformationError, make_sync_rewriter
    from app.engine.model_server import get_server
    from app.ui.components import resolve_embedded

    def rewrite(prompt: str) -> str:
        live = resolve_embedded(get_server().endpoint())
        if live is None:
            raise NotApplicable("the embedded model is not available as transformation endpoint")
        try:
            return make_sync_rewriter(get_store(), live)(prompt)
        except TransformationError as exc:
            raise NotApplicable(str(exc)) from None

    return rewrite


# ---------------------------------------------------------------- catalog (pure)


def _tasks_text(tasks: Sequence[str]) -> str:
    return "any" if list(tasks) == ["*"] else ", ".join(tasks)


def catalog_frame(relations: Sequence[Relation]) -> pd.DataFrame:
    """One row per relation with the catalog columns the page shows."""
    rows = []
    for relation in relations:
        entry = relation.describe(BUILTIN_TASKS.values())
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


# ---------------------------------------------------------------- custom relation form (pure)


def rules_from_text(text: str) -> list[dict[str, str]]:
    """Rules typed one per line as ``find => replace`` (an empty replacement deletes)."""
    rules = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        separator = " => " if " => " in line else "=>"
        if separator not in line:
            raise ValueError(f"rule line {number} needs the form 'find => replace': {line!r}")
        find, replace = line.split(separator, 1)
        rules.append({"find": find.strip(), "replace": replace.strip()})
    return rules


def rules_to_text(rules: Iterable[dict[str, str]]) -> str:
    return "\n".join(f"{rule['find']} => {rule['replace']}" for rule in rules)


def spec_from_form(
    *,
    relation_id: str,
    name: str,
    description: str,
    example: str,
    kind: str,
    instruction: str = "",
    rules_text: str = "",
    prefix: str = "",
    suffix: str = "",
    expectation: str,
    threshold_text: str = "",
) -> dict[str, Any]:
    """A spec dict from the form's raw values (validated later by ``validate_spec``)."""
    spec: dict[str, Any] = {
        "id": relation_id.strip() or slugify(name),
        "name": name.strip(),
        "description": description.strip(),
        "kind": kind,
        "expectation": expectation,
    }
    if example.strip():
        spec["example"] = example.strip()
    if threshold_text.strip():
        try:
            spec["threshold"] = float(threshold_text.strip())
        except ValueError:
            raise ValueError(
                f"threshold must be a number, not {threshold_text.strip()!r}"
            ) from None
    if kind == "llm_rewrite":
        spec["instruction"] = instruction
    elif kind in ("replace", "regex"):
        spec["rules"] = rules_from_text(rules_text)
    else:
        spec["prefix"], spec["suffix"] = prefix, suffix
    return spec


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


def render_catalog(relations: Sequence[Relation]) -> None:
    """Filters, the catalog table, unavailable relations and the detail panel."""
    families = sorted({r.family for r in relations})
    categories = sorted({r.category for r in relations})
    col_family, col_category, col_task = st.columns(3)
    chosen_families = col_family.multiselect("Family", families, key="relations_family")
    chosen_categories = col_category.multiselect("Category", categories, key="relations_category")
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
    entry = relation.describe(BUILTIN_TASKS.values())
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
    text = st.text_area(
        f"Text ({field})", value=DEFAULT_TRY_TEXT, key="relations_try_text", height=120
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
    if not text.strip():
        st.info("Type a text to transform.")
        return
    result = try_relation(
        relation,
        text,
        seed=int(seed),
        partner_texts=partners.splitlines(),
        fields=fields or None,
        rewrite=transformation_rewriter() if use_model else None,
    )
    render_followup(result, relation)


def _consume_flash() -> None:
    flash = st.session_state.pop("relations_custom_flash", None)
    if flash:
        st.success(flash)


def _delete_custom(relation_id: str) -> None:
    get_store().delete_custom_relation(relation_id)
    data_changed()
    st.session_state["relations_custom_pick"] = NEW_RELATION
    st.session_state["relations_custom_flash"] = f"Deleted {relation_id}."


def render_custom_editor() -> None:
    """Create, edit and delete custom relations; export and import them as JSON."""
    store = get_store()
    specs = store.custom_relation_specs()
    pending = st.session_state.pop("relations_custom_pending", None)
    if pending is not None:
        st.session_state["relations_custom_pick"] = pending
    _consume_flash()

    options = [NEW_RELATION, *specs]
    if st.session_state.get("relations_custom_pick") not in options:
        st.session_state["relations_custom_pick"] = NEW_RELATION
    pick = st.selectbox("Create or edit", options, key="relations_custom_pick")
    editing = specs.get(pick, {})
    suffix = "new" if pick == NEW_RELATION else pick

    kind = st.selectbox(
        "Kind",
        list(KINDS),
        index=list(KINDS).index(editing.get("kind", "replace")),
        format_func=lambda k: KIND_LABELS[k],
        key=f"relations_custom_kind_{suffix}",
    )
    expectations = [e.value for e in SINGLE_INPUT_EXPECTATIONS]
    with st.form(f"relations_custom_form_{suffix}"):
        name = st.text_input("Name", value=editing.get("name", ""))
        relation_id = st.text_input(
            "Id (custom.<slug>; empty: made from the name)",
            value=editing.get("id", ""),
            disabled=bool(editing),
        )
        description = st.text_input("Description", value=editing.get("description", ""))
        example = st.text_input("Example input (optional)", value=editing.get("example", ""))
        instruction = rules_text = prefix = suffix_text = ""
        if kind == "llm_rewrite":
            instruction = st.text_area(
                "Instruction for the rewrite",
                value=editing.get("instruction", ""),
                help="Our wording around it asks to keep every number, name, fact and question.",
            )
        elif kind in ("replace", "regex"):
            rules_text = st.text_area(
                "Rules, one per line: find => replace",
                value=rules_to_text(editing.get("rules", [])),
                help="Applied in order. For regex, the replacement may use \\1 or \\g<name>.",
            )
        else:
            prefix = st.text_input(
                "Prefix (added exactly, include a trailing space)",
                value=editing.get("prefix", ""),
            )
            suffix_text = st.text_input(
                "Suffix (added exactly, include a leading space)",
                value=editing.get("suffix", ""),
            )
        expectation = st.selectbox(
            "Expected output relation",
            expectations,
            index=expectations.index(editing.get("expectation", "equivalent")),
        )
        threshold = st.text_input(
            "Threshold (optional; similarity θ or numeric ε — empty: the default)",
            value="" if editing.get("threshold") is None else str(editing["threshold"]),
        )
        submitted = st.form_submit_button("Save custom relation")
    if submitted:
        _save_from_form(
            specs,
            pick,
            relation_id=editing.get("id", relation_id),
            name=name,
            description=description,
            example=example,
            kind=kind,
            instruction=instruction,
            rules_text=rules_text,
            prefix=prefix,
            suffix=suffix_text,
            expectation=expectation,
            threshold_text=threshold,
        )
    if editing:
        st.button(
            f"Delete {pick}",
            key="relations_custom_delete",
            on_click=_delete_custom,
            args=(pick,),
        )
    render_import_export(specs)


def _save_from_form(specs: dict[str, Any], pick: str, **form: Any) -> None:
    store = get_store()
    try:
        spec = spec_from_form(relation_id=form.pop("relation_id"), **form)
        if pick == NEW_RELATION and spec["id"] in specs:
            raise ValueError(f"{spec['id']} already exists: pick it above to edit it")
        saved = save_spec(store, spec)
    except ValueError as exc:
        st.error(f"Not saved: {inert(exc)}")
        return
    data_changed()
    st.session_state["relations_custom_pending"] = saved["id"]
    st.session_state["relations_custom_flash"] = f"Saved {saved['id']}."
    st.rerun()


def render_import_export(specs: dict[str, Any]) -> None:
    store = get_store()
    st.markdown("**Export / import**")
    st.download_button(
        "Download custom relations (JSON)",
        data=export_specs(store),
        file_name="morphscope_custom_relations.json",
        mime="application/json",
        disabled=not specs,
        key="relations_custom_export",
    )
    uploaded = st.file_uploader("Import a JSON file", type=["json"], key="relations_custom_upload")
    pasted = st.text_area("…or paste JSON", key="relations_custom_paste", height=100)
    if st.button("Import", key="relations_custom_import"):
        try:
            text = uploaded.getvalue().decode("utf-8") if uploaded is not None else pasted
            if not text.strip():
                raise ValueError("choose a file or paste JSON first")
            imported = import_specs(store, text)
        except UnicodeDecodeError:
            st.error("Not imported: the file is not UTF-8 text.")
            return
        except ValueError as exc:
            st.error(f"Not imported: {inert(exc)}")
            return
        data_changed()
        st.session_state["relations_custom_flash"] = f"Imported {', '.join(imported)}."
        st.rerun()


def load_relations() -> list[Relation]:
    """Built-in relations plus the stored custom ones."""
    return all_relations(get_store())
