"""The OpenAI-compatible chat client (kind ``openai``): retries with backoff and Retry-After.

Works against any server speaking ``/v1/chat/completions`` (OpenAI, vLLM, llama.cpp, Ollama).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from typing import Any

import openai
from openai import AsyncOpenAI

from app.clients.base import MAX_BACKOFF_S, Messages, RetryPolicy, client_kind
from app.endpoints import resolve_api_key, validate_base_url
from core.types import OPENAI_KIND, Completion, Endpoint

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


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
    """A short readable message for a failed call (HTTP status, timeout, connection)."""
    if isinstance(exc, openai.APIStatusError):
        message = getattr(exc, "message", str(exc))
        return f"HTTP {exc.status_code}: {message}"[:500]
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return f"connection failed: {cause}"[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


def async_openai(endpoint: Endpoint, timeout_s: float | None = None) -> AsyncOpenAI:
    """The raw SDK client for ``endpoint`` (raises ValueError for a bad base URL)."""
    return AsyncOpenAI(
        base_url=validate_base_url(endpoint.base_url),
        api_key=resolve_api_key(endpoint),
        timeout=endpoint.timeout_s if timeout_s is None else timeout_s,
        max_retries=0,  # we retry ourselves, honouring Retry-After
    )


class OpenAIClient:
    """A retrying, concurrency-limited async client for one OpenAI-compatible endpoint."""

    def __init__(self, endpoint: Endpoint, retry: RetryPolicy | None = None) -> None:
        self.endpoint = endpoint
        self.retry = retry or RetryPolicy()
        self._client = async_openai(endpoint)
        self._limit = asyncio.Semaphore(max(1, endpoint.concurrency))
        self._jitter = random.Random(0)  # backoff jitter only; not a follow-up choice

    async def close(self) -> None:
        await self._client.close()

    async def complete(self, messages: Messages, params: dict[str, Any]) -> Completion:
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


@client_kind(OPENAI_KIND)
def openai_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> OpenAIClient:
    return OpenAIClient(endpoint, retry)


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
