"""Endpoints page building blocks: the endpoint form and the connection test."""

from __future__ import annotations

import streamlit as st

from app.endpoints import key_status, test_connection, validate_base_url
from core.types import Endpoint

PRESETS = {
    "OpenAI": ("https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY"),
    "vLLM": ("http://127.0.0.1:8000/v1", "", ""),
    "Ollama": ("http://127.0.0.1:11434/v1", "llama3.2", ""),
    "llama.cpp server": ("http://127.0.0.1:8080/v1", "", ""),
    "Other OpenAI-compatible": ("", "", ""),
}


def endpoint_form(existing: Endpoint | None, key: str) -> Endpoint | None:
    """A form; returns the validated Endpoint when submitted, else None (errors shown)."""
    preset = st.selectbox(
        "Preset", list(PRESETS), key=f"{key}_preset", disabled=existing is not None
    )
    url, model, key_env = PRESETS[preset]
    if existing is not None:
        url, model, key_env = existing.base_url, existing.model, existing.api_key_env or ""
    with st.form(f"{key}_form_{preset}"):
        name = st.text_input(
            "Name", value=existing.name if existing else "", disabled=existing is not None
        )
        base_url = st.text_input("Base URL", value=url, placeholder="http://host:port/v1")
        model_name = st.text_input("Model", value=model)
        api_key_env = st.text_input(
            "API key environment variable (name only)", value=key_env,
            help="Morphscope reads the key from this variable or .streamlit/secrets.toml; the key "
            "itself is never stored.",
        )  # fmt: skip
        cols = st.columns(3)
        base = existing or Endpoint(name="", base_url="", model="")
        temperature = cols[0].number_input("Temperature", 0.0, 2.0, base.temperature, 0.1)
        top_p = cols[1].number_input("top_p", 0.0, 1.0, base.top_p, 0.05)
        max_tokens = cols[2].number_input("Max tokens", 1, 32768, base.max_tokens)
        cols = st.columns(3)
        seed_text = cols[0].text_input(
            "Seed (optional)", value="" if base.seed is None else str(base.seed)
        )
        concurrency = cols[1].number_input("Concurrency", 1, 64, base.concurrency)
        timeout_s = cols[2].number_input("Timeout (s)", 1.0, 600.0, float(base.timeout_s))
        submitted = st.form_submit_button("Save endpoint", type="primary")
    if not submitted:
        return None
    errors = []
    name = (existing.name if existing else name).strip()
    if not name:
        errors.append("give the endpoint a name")
    try:
        base_url = validate_base_url(base_url)
    except ValueError as exc:
        errors.append(str(exc))
    if not model_name.strip():
        errors.append("the model name is empty")
    if api_key_env and not api_key_env.replace("_", "").isalnum():
        errors.append("the key variable name should look like OPENAI_API_KEY (not the key itself)")
    if api_key_env.startswith("sk-"):
        errors.append("that looks like a key: enter the NAME of the environment variable instead")
    seed = None
    if seed_text.strip():
        try:
            seed = int(seed_text)
        except ValueError:
            errors.append("the seed must be a whole number")
    if errors:
        for error in errors:
            st.error(error)
        return None
    return Endpoint(
        name=name,
        base_url=base_url,
        model=model_name.strip(),
        api_key_env=api_key_env.strip() or None,
        temperature=float(temperature),
        top_p=float(top_p),
        max_tokens=int(max_tokens),
        seed=seed,
        concurrency=int(concurrency),
        timeout_s=float(timeout_s),
    )


def connection_test(endpoint: Endpoint, key: str) -> None:
    if st.button("Test connection", key=key):
        with st.spinner(f"Contacting {endpoint.base_url}…"):
            report = test_connection(endpoint)
        if report.ok:
            st.success(report.message)
            if report.sample_reply is not None:
                st.caption("Sample reply:")
                st.text(report.sample_reply)
        else:
            st.error(report.message)
        if report.models:
            st.caption("Models listed by the server:")
            st.text("\n".join(report.models))


def describe(endpoint: Endpoint) -> str:
    return (
        f"`{endpoint.base_url}` · model `{endpoint.model}` · {key_status(endpoint)} · "
        f"T={endpoint.temperature:g}, top_p={endpoint.top_p:g}, max_tokens={endpoint.max_tokens}, "
        f"concurrency {endpoint.concurrency}, timeout {endpoint.timeout_s:g} s"
    )
