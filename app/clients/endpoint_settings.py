"""What an endpoint's saved settings mean: where its API key comes from, whether its base URL is
one a client can use.

The key itself is never stored: an endpoint names the environment variable that holds it (or the
entry of ``.streamlit/secrets.toml``). The rule for that name lives in ``core.key_names``, where
the store applies it too.
"""

from __future__ import annotations

import os
import tomllib
import urllib.parse
from pathlib import Path

from core.key_names import looks_like_secret
from core.types import Endpoint

SECRETS_FILE = Path(".streamlit/secrets.toml")
# No key named or found (llama.cpp, vLLM and Ollama need none): the chat path then sends no
# Authorization header, and the ``openai`` SDK (batch submission), which insists, gets this.
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
STORED_KEY = "its key setting holds a key, not a variable's name: edit it to the variable's name"


def missing_key(endpoint: Endpoint, secrets_file: Path = SECRETS_FILE) -> str | None:
    """One line when the endpoint names a key variable that is set neither in the environment
    nor in secrets.toml (a run would go out without a key); None when the key is found or the
    endpoint names no variable. Never the key itself."""
    if endpoint.api_key_env and looks_like_secret(endpoint.api_key_env):
        return STORED_KEY
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
        return STORED_KEY
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
