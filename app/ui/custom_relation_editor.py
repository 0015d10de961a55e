"""The Relations page's custom relation editor: create, edit and delete the user's own relations
(find / replace, regex, template, LLM rewrite) and move them in and out as JSON.

The pure helpers (``rules_from_text``, ``spec_from_form``) turn the form's raw values into a spec;
``relations.custom`` validates and stores it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from app.ui.components import inert
from app.ui.data import data_changed, get_store
from relations.custom import (
    CUSTOM_KINDS,
    KINDS,
    SINGLE_INPUT_EXPECTATIONS,
    export_specs,
    import_specs,
    save_spec,
    slugify,
)

NEW_RELATION = "(new custom relation)"


# ---------------------------------------------------------------- the form's values (pure)


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
    specs = get_store().custom_relation_specs()
    pick = _pick_relation(specs)
    editing = specs.get(pick, {})
    suffix = "new" if pick == NEW_RELATION else pick
    # Outside the form: changing the kind swaps the form's inputs at once.
    kind = st.selectbox(
        "Kind",
        list(KINDS),
        index=list(KINDS).index(editing.get("kind", "replace")),
        format_func=lambda k: CUSTOM_KINDS[k].label,
        key=f"relations_custom_kind_{suffix}",
    )
    submitted_form = _relation_form(editing, kind, suffix)
    if submitted_form is not None:
        _save_from_form(specs, pick, **submitted_form)
    if editing:
        st.button(
            f"Delete {pick}",
            key="relations_custom_delete",
            on_click=_delete_custom,
            args=(pick,),
        )
    render_import_export(specs)


def _pick_relation(specs: dict[str, Any]) -> str:
    """The stored relation being edited, or ``NEW_RELATION``; a relation just saved is picked."""
    pending = st.session_state.pop("relations_custom_pending", None)
    if pending is not None:
        st.session_state["relations_custom_pick"] = pending
    _consume_flash()
    options = [NEW_RELATION, *specs]
    if st.session_state.get("relations_custom_pick") not in options:
        st.session_state["relations_custom_pick"] = NEW_RELATION
    return st.selectbox("Create or edit", options, key="relations_custom_pick")


def _relation_form(editing: dict[str, Any], kind: str, suffix: str) -> dict[str, Any] | None:
    """The form for one relation of ``kind``, filled from ``editing``; its raw values (the
    arguments of ``spec_from_form``) once submitted, else None."""
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
        transformation = _transformation_inputs(editing, kind)
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
    if not submitted:
        return None
    return {
        "relation_id": editing.get("id", relation_id),
        "name": name,
        "description": description,
        "example": example,
        "kind": kind,
        **transformation,
        "expectation": expectation,
        "threshold_text": threshold,
    }


def _transformation_inputs(editing: dict[str, Any], kind: str) -> dict[str, str]:
    """The inputs that say how a relation of ``kind`` transforms a text, as ``spec_from_form``
    arguments (those another kind uses stay empty)."""
    values = {"instruction": "", "rules_text": "", "prefix": "", "suffix": ""}
    if kind == "llm_rewrite":
        values["instruction"] = st.text_area(
            "Instruction for the rewrite",
            value=editing.get("instruction", ""),
            help="Our wording around it asks to keep every number, name, fact and question.",
        )
    elif kind in ("replace", "regex"):
        values["rules_text"] = st.text_area(
            "Rules, one per line: find => replace",
            value=rules_to_text(editing.get("rules", [])),
            help="Applied in order. For regex, the replacement may use \\1 or \\g<name>.",
        )
    else:
        values["prefix"] = st.text_input(
            "Prefix (added exactly, include a trailing space)",
            value=editing.get("prefix", ""),
        )
        values["suffix"] = st.text_input(
            "Suffix (added exactly, include a leading space)",
            value=editing.get("suffix", ""),
        )
    return values


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
