"""Endpoint helpers: API-key lookup, base-URL validation and connection tests.

The clients that talk to endpoints live in ``app.clients`` (one per endpoint kind).
"""

from __future__ import annotations

import asyncio
import os
import tomllib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

# The one API-key rule lives in core, where the store applies it too; it is re-exported here.
from core.key_names import looks_like_secret as looks_like_secret
from core.key_names import validate_api_key_env as validate_api_key_env
from core.types import OPENAI_KIND, Endpoint

SECRETS_FILE = Path(".streamlit/secrets.toml")
# Servers that need no key (llama.cpp, vLLM, Ollama) still get a placeholder: the client insists.
NO_KEY = "not-needed"


def resolve_api_key(endpoint: Endpoint, secrets_file: Path = SECRETS_FILE) -> str:
    """The key from the environment variable named by the endpoint, else from secrets.toml."""
    name = endpoint.api_key_env
    if not name:
        return NO_KEY
    value = os.environ.get(name)
    if value:
        return value
    try:
        with secrets_file.open("rb") as handle:
            secrets = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        secrets = {}
    value = secrets.get(name)
    return str(value) if value else NO_KEY


# An endpoint saved before keys were refused as variable names may hold a key there: it is
# never shown, and the endpoint is not used until the setting is edited to a name.
_STORED_KEY = "its key setting holds a key, not a variable's name: edit it to the variable's name"


def missing_key(endpoint: Endpoint, secrets_file: Path = SECRETS_FILE) -> str | None:
    """One line when the endpoint names a key variable that is set neither in the environment
    nor in secrets.toml (a run would go out without a key); None when the key is found or the
    endpoint names no variable. Never the key itself."""
    if endpoint.api_key_env and looks_like_secret(endpoint.api_key_env):
        return _STORED_KEY
    if not endpoint.api_key_env or resolve_api_key(endpoint, secrets_file) != NO_KEY:
        return None
    return (
        f"the key variable ${endpoint.api_key_env} is not set (neither in the environment nor "
        f"in {secrets_file})"
    )


def key_status(endpoint: Endpoint) -> str:
    """Human-readable key state, never the key itself."""
    if not endpoint.api_key_env:
        return "no key needed"
    if looks_like_secret(endpoint.api_key_env):
        return _STORED_KEY
    return (
        "key found"
        if resolve_api_key(endpoint) != NO_KEY
        else f"${endpoint.api_key_env} is not set"
    )


def validate_base_url(url: str) -> str:
    """Normalise a base URL or raise ValueError with a readable message."""
    url = (url or "").strip().rstrip("/")
    if not url:
        raise ValueError("the base URL is empty")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"the base URL must start with http:// or https:// (got {url!r})")
    if any(char.isspace() for char in url):
        raise ValueError("the base URL contains a space")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number or out of range
    except ValueError as exc:
        raise ValueError(f"the base URL {url!r} is malformed: {exc}") from None
    if not parts.hostname:
        raise ValueError(f"the base URL {url!r} has no host name")
    if port is None and parts.netloc.endswith(":"):
        raise ValueError(f"the base URL {url!r} has an empty port after ':'")
    if port == 0:
        raise ValueError(f"the base URL {url!r} has port 0; use a port from 1 to 65535")
    return url


@dataclass(frozen=True)
class ConnectionReport:
    """What a connection test found: whether it worked, a readable message, the served models."""

    ok: bool
    message: str
    models: tuple[str, ...] = ()
    sample_reply: str | None = None


def _not_openai(what: str, exc: BaseException) -> str:
    """One readable line for a response that is not what an OpenAI-compatible server sends."""
    detail = (str(exc).splitlines() or [""])[0][:160]
    kind = "is not valid JSON" if isinstance(exc, ValueError) else "has an unexpected shape"
    return f"not an OpenAI-compatible server: {what} {kind} ({detail or type(exc).__name__})"


async def _test_connection(endpoint: Endpoint, try_chat: bool) -> ConnectionReport:
    # app.clients imports this module (keys, URLs), so it is imported here, not at the top.
    from app.clients import RetryPolicy, make_client
    from app.clients.openai_compatible import describe_error, list_models

    try:
        validate_base_url(endpoint.base_url)
    except ValueError as exc:
        return ConnectionReport(False, str(exc))
    timeout_s = min(endpoint.timeout_s, 15.0)
    try:
        models = await list_models(endpoint, timeout_s)
    except (ValueError, TypeError) as exc:  # a body that is not JSON, or JSON of another shape
        return ConnectionReport(False, _not_openai("the models list", exc))
    except Exception as exc:  # an HTTP error status, a refused connection, a timeout
        return ConnectionReport(False, f"listing models failed — {describe_error(exc, timeout_s)}")
    if models and endpoint.model not in models:
        return ConnectionReport(
            False,
            f"model {endpoint.model!r} is not served here; available: {', '.join(models)}",
            models,
        )
    reply = None
    if try_chat:
        chat = make_client(endpoint, RetryPolicy(max_retries=0))
        try:
            completion = await chat.complete(
                [{"role": "user", "content": "Reply with the word: ready"}],
                {"max_tokens": 8, "temperature": 0.0},
            )
        except Exception as exc:  # a malformed body the client did not turn into an error
            return ConnectionReport(False, _not_openai("the chat completion", exc), models)
        finally:
            await chat.close()
        if not completion.ok:
            return ConnectionReport(False, f"chat completion failed — {completion.error}", models)
        reply = completion.text
    return ConnectionReport(True, f"connected; {len(models)} model(s) listed", models, reply)


# Pre-flight: short, so a dead endpoint is reported in seconds, not after a run of ERRORs.
PREFLIGHT_TIMEOUT_S = 15.0
# Statuses that say "this server will not serve this run" (as opposed to a passing hiccup).
_FATAL_STATUS = {400, 401, 403, 404}


async def _preflight(endpoint: Endpoint) -> str | None:
    from app.clients import RetryPolicy, make_client
    from app.clients.openai_compatible import (
        CONNECTION_FAILURES,
        TIMEOUTS,
        ChatStatusError,
        describe_error,
        list_models,
    )

    try:
        validate_base_url(endpoint.base_url)
    except ValueError as exc:
        return str(exc)
    where = f"{endpoint.base_url} ({endpoint.model})"
    timeout_s = min(endpoint.timeout_s, PREFLIGHT_TIMEOUT_S)
    try:
        models = await list_models(endpoint, timeout_s)
    except ChatStatusError as exc:
        if exc.status_code in (401, 403):
            return f"{where} refused the key — {describe_error(exc)}"
        models = ()  # no models list here (404) or a hiccup: one tiny chat decides
    except (*TIMEOUTS, *CONNECTION_FAILURES) as exc:
        return f"cannot reach {where} — {describe_error(exc, timeout_s)}"
    except Exception as exc:
        return f"{where} is not an OpenAI-compatible server — {describe_error(exc)}"[:300]
    if models:
        if endpoint.model in models:
            return None
        shown = ", ".join(models[:10]) + (" …" if len(models) > 10 else "")
        return f"model {endpoint.model!r} is not served at {endpoint.base_url}; available: {shown}"
    chat = make_client(endpoint, RetryPolicy(max_retries=1, total_s=PREFLIGHT_TIMEOUT_S * 2))
    try:
        completion = await chat.complete(
            [{"role": "user", "content": "Reply with the word: ready"}],
            {"max_tokens": 1, "temperature": 0.0},
        )
    finally:
        await chat.close()
    error = completion.error or ""
    if completion.ok or not _is_fatal(error):
        return None
    return f"{where} does not answer chat completions — {error}"


def _is_fatal(error: str) -> bool:
    if error.startswith("HTTP "):
        code = error[5:8]
        return code.isdigit() and int(code) in _FATAL_STATUS
    return error.startswith(("connection failed", "timed out", "not an OpenAI-compatible"))


def preflight(endpoint: Endpoint) -> str | None:
    """Check, before a run sends its cases, that the endpoint will serve it.

    Lists the models (one cheap request; a tiny chat call where the server lists none). Returns
    None when the run can go ahead, else one line: a key variable that is not set, a refused
    connection, a rejected key, a model the server does not serve, or a server that is not
    OpenAI-compatible. Passing hiccups (429,
    5xx) do not stop a run: its own retries handle them. Only ``openai``-kind endpoints are
    checked; other kinds have their own start-up checks.
    """
    if endpoint.kind != OPENAI_KIND:
        return None
    # A named key that is missing would send every call without it: stop before the first.
    missing = missing_key(endpoint)
    if missing == _STORED_KEY:
        return f"{endpoint.name}: {missing}"
    if missing:
        return f"{missing}: set it, or remove the key variable from the endpoint"
    return asyncio.run(_preflight(endpoint))


def test_connection(endpoint: Endpoint, try_chat: bool = True) -> ConnectionReport:
    """List the server's models and send a tiny chat; every failure becomes a readable message."""
    return asyncio.run(_test_connection(endpoint, try_chat))


test_connection.__test__ = False  # not a pytest test despite the name
