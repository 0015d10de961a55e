"""OpenAI-compatible endpoints: key lookup, a retrying async chat client, connection tests.

Errors are data: ``complete`` never raises for a failed call — it returns a ``Completion`` whose
``error`` says what happened after the retries ran out.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI

from core.types import Completion, Endpoint

log = logging.getLogger(__name__)

SECRETS_FILE = Path(".streamlit/secrets.toml")
# Servers that need no key (llama.cpp, vLLM, Ollama) still get a placeholder: the client insists.
NO_KEY = "not-needed"
RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_BACKOFF_S = 30.0


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


def key_status(endpoint: Endpoint) -> str:
    """Human-readable key state, never the key itself."""
    if not endpoint.api_key_env:
        return "no key needed"
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
    if " " in url:
        raise ValueError("the base URL contains a space")
    return url


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(value)
    if parsed is None:
        return None
    return max(0.0, parsed.timestamp() - time.time())


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        message = getattr(exc, "message", str(exc))
        return f"HTTP {exc.status_code}: {message}"[:500]
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return f"connection failed: {cause}"[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


@dataclass
class RetryPolicy:
    max_retries: int = 4
    base_delay_s: float = 0.5

    def backoff(self, attempt: int, rng: random.Random) -> float:
        return min(MAX_BACKOFF_S, self.base_delay_s * (2**attempt)) * (0.5 + rng.random() / 2)


class ChatClient:
    """A retrying, concurrency-limited async client for one endpoint."""

    def __init__(self, endpoint: Endpoint, retry: RetryPolicy | None = None) -> None:
        self.endpoint = endpoint
        self.retry = retry or RetryPolicy()
        self._client = AsyncOpenAI(
            base_url=validate_base_url(endpoint.base_url),
            api_key=resolve_api_key(endpoint),
            timeout=endpoint.timeout_s,
            max_retries=0,  # we retry ourselves, honouring Retry-After
        )
        self._limit = asyncio.Semaphore(max(1, endpoint.concurrency))
        self._jitter = random.Random(0)  # backoff jitter only; not a follow-up choice

    async def close(self) -> None:
        await self._client.close()

    async def complete(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Completion:
        attempt = 0
        while True:
            started = time.perf_counter()
            wait: float | None = None
            try:
                async with self._limit:
                    response = await self._client.chat.completions.create(
                        model=self.endpoint.model, messages=messages, **params
                    )
                latency_ms = (time.perf_counter() - started) * 1000
                return _completion_from(response, latency_ms)
            except openai.APIStatusError as exc:
                if exc.status_code not in RETRYABLE_STATUS:
                    return Completion(text=None, error=describe_error(exc))
                wait = retry_after_seconds(exc.response.headers)
                error = describe_error(exc)
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error = describe_error(exc)
            except openai.OpenAIError as exc:  # e.g. a non-OpenAI server's body
                return Completion(text=None, error=describe_error(exc))
            if attempt >= self.retry.max_retries:
                return Completion(text=None, error=f"{error} (after {attempt + 1} attempts)")
            delay = wait if wait is not None else self.retry.backoff(attempt, self._jitter)
            await asyncio.sleep(min(delay, MAX_BACKOFF_S))
            attempt += 1


def _completion_from(response: Any, latency_ms: float) -> Completion:
    choices = getattr(response, "choices", None)
    if not choices:
        return Completion(text=None, error="not an OpenAI-compatible response (no choices)")
    message = getattr(choices[0], "message", None)
    text = getattr(message, "content", None)
    if text is None:
        return Completion(text=None, error="the response has no message content")
    usage_obj = getattr(response, "usage", None)
    usage = {}
    if usage_obj is not None:
        for key in ("prompt_tokens", "completion_tokens"):
            value = getattr(usage_obj, key, None)
            if isinstance(value, int):
                usage[key] = value
    return Completion(text=text, latency_ms=latency_ms, usage=usage)


@dataclass(frozen=True)
class ConnectionReport:
    ok: bool
    message: str
    models: tuple[str, ...] = ()
    sample_reply: str | None = None


async def _test_connection(endpoint: Endpoint, try_chat: bool) -> ConnectionReport:
    try:
        base_url = validate_base_url(endpoint.base_url)
    except ValueError as exc:
        return ConnectionReport(False, str(exc))
    client = AsyncOpenAI(
        base_url=base_url,
        api_key=resolve_api_key(endpoint),
        timeout=min(endpoint.timeout_s, 15.0),
        max_retries=0,
    )
    try:
        try:
            page = await client.models.list()
            models = tuple(sorted(m.id for m in page.data))
        except openai.OpenAIError as exc:
            return ConnectionReport(False, f"listing models failed — {describe_error(exc)}")
        except Exception as exc:
            return ConnectionReport(False, f"not an OpenAI-compatible server: {exc}"[:300])
        if models and endpoint.model not in models:
            return ConnectionReport(
                False,
                f"model {endpoint.model!r} is not served here; available: {', '.join(models)}",
                models,
            )
        reply = None
        if try_chat:
            chat = ChatClient(endpoint, RetryPolicy(max_retries=0))
            completion = await chat.complete(
                [{"role": "user", "content": "Reply with the word: ready"}],
                {"max_tokens": 8, "temperature": 0.0},
            )
            await chat.close()
            if not completion.ok:
                return ConnectionReport(
                    False, f"chat completion failed — {completion.error}", models
                )
            reply = completion.text
        return ConnectionReport(True, f"connected; {len(models)} model(s) listed", models, reply)
    finally:
        await client.close()


def test_connection(endpoint: Endpoint, try_chat: bool = True) -> ConnectionReport:
    """List the server's models and send a tiny chat; every failure becomes a readable message."""
    return asyncio.run(_test_connection(endpoint, try_chat))


test_connection.__test__ = False  # not a pytest test despite the name
