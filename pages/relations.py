"""Relations: browse the catalog, try any relation on any text, manage custom relations."""

import streamlit as st

from app.ui.custom_relation_editor import render_custom_editor
from app.ui.entry import require_entrypoint
from app.ui.relations_view import load_relations, render_catalog, render_try_it

require_entrypoint("pages/relations.py")
st.title("Relations")
st.caption(
    "Metamorphic relations: an input transformation plus the output relation it should keep. "
    "Rule relations are computed live; LLM-prompted ones need a transformation endpoint."
)

relations = load_relations()
catalog_tab, try_tab, custom_tab = st.tabs(["Catalog", "Try it", "Custom relations"])
with catalog_tab:
    render_catalog(relations)
with try_tab:
    render_try_it(relations)
with custom_tab:
    render_custom_editor()
