"""Endpoints: the embedded model plus any OpenAI-compatible API (OpenAI, vLLM, Ollama, llama.cpp)."""

import streamlit as st

from app.ui.data import get_store
from app.ui.endpoints_view import render_embedded_model, render_new_endpoint, render_saved_endpoints
from app.ui.entry import require_entrypoint

require_entrypoint("pages/endpoints.py")
st.title("Endpoints")
store = get_store()
render_embedded_model()
render_saved_endpoints(store)
render_new_endpoint(store)
