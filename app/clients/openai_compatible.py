"""The OpenAI-compatible chat client (kind ``openai``): retries with backoff and Retry-After.

Works against any server speaking ``/v1/chat/completions`` (OpenAI, vLLM, llama.cpp, Ollama).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from typing import Any

import openai
from openai import AsyncOpenAI

from app.clients.base import MAX_BACKOFF_S, Messages, RetryPolicy, client_kind
from app.clients.limiter import AdaptiveLimiter, LiveLoad, estimate_tokens
from app.endpoints import resolve_api_key, validate_base_url
from core.types import OPENAI_KIND, Completion, Endpoint

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# Statuses that mean "too many calls": the adaptive window shrinks.
OVERLOAD_STATUS = {429, 503}


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


def describe_error(exc: BaseException, timeout_s: float | None = None) -> str:
    """A short, specific message for a failed call (HTTP status, timeout, connection)."""
    if isinstance(exc, openai.APIStatusError):
        message = str(getattr(exc, "message", exc))
        # The SDK prefixes "Error code: 401 - "; the status is said once already.
        message = message.removeprefix(f"Error code: {exc.status_code} - ")
        return f"HTTP {exc.status_code}: {message}"[:500]
    if isinstance(exc, openai.APITimeoutError):
        return f"timed out after {timeout_s:g} s" if timeout_s else "timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {root_cause(exc)}"[:500]
    if isinstance(exc, json.JSONDecodeError):
        return f"not an OpenAI-compatible response: the body is not valid JSON ({exc})"[:500]
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return f"not an OpenAI-compatible response: {root_cause(exc)}"[:500]
    return root_cause(exc)[:500]


_PLAIN_CAUSES = {
    ConnectionRefusedError: "connection refused",
    ConnectionResetError: "connection reset by the server",
    ConnectionAbortedError: "connection aborted",
    TimeoutError: "timed out",
}


def root_cause(exc: BaseException) -> str:
    """The innermost cause of ``exc`` as readable text, never empty.

    The HTTP stack wraps the real failure (refused, reset, DNS) in layers, sometimes in an
    exception group, and some layers have an empty message: the innermost one with something to
    say is the useful one.
    """
    seen: set[int] = set()
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        if isinstance(current, BaseExceptionGroup) and current.exceptions:
            current = current.exceptions[0]
        else:
            current = current.__cause__ or current.__context__
    # json's scanner leaves a StopIteration behind its JSONDecodeError: an implementation detail.
    chain = [layer for layer in chain if not isinstance(layer, StopIteration)] or chain
    for layer in reversed(chain):
        for kind, text in _PLAIN_CAUSES.items():
            if isinstance(layer, kind):
                return text
        message = str(layer).strip()
        if message and not isinstance(layer, BaseExceptionGroup):
            return message if len(chain) == 1 else f"{message} ({type(layer).__name__})"
    return type(chain[-1]).__name__


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
        self.retry = retry or RetryPolicy(max_retries=endpoint.retries)
        self._client = async_openai(endpoint)
        self._limit = AdaptiveLimiter(
            endpoint.concurrency, rpm_limit=endpoint.rpm_limit, tpm_limit=endpoint.tpm_limit
        )
        self._jitter = random.Random(0)  # backoff jitter only; not a follow-up choice

    async def close(self) -> None:
        await self._client.close()

    def live_load(self) -> LiveLoad:
        """The adaptive concurrency and calls/s right now."""
        return self._limit.live_load()

    async def complete(self, messages: Messages, params: dict[str, Any]) -> Completion:
        attempt = 0
        # One full attempt always fits, even when the endpoint's timeout exceeds the budget.
        budget_s = max(self.retry.total_s, self.endpoint.timeout_s)
        deadline = time.monotonic() + budget_s
        tokens = estimate_tokens(messages, params.get("max_tokens", 0)) if self._limit.tokens else 0
        while True:
            wait: float | None = None
            async with self._limit.slot(tokens) as slot:
                # Time spent queueing for a slot is not the server's fault: the budget and the
                # attempt's timeout count from here.
                if attempt == 0:
                    deadline = time.monotonic() + budget_s
                attempt_timeout = max(
                    0.1, min(self.endpoint.timeout_s, deadline - time.monotonic())
                )
                started = time.perf_counter()
                try:
                    response = await self._client.chat.completions.create(
                        model=self.endpoint.model,
                        messages=messages,
                        timeout=attempt_timeout,
                        **params,
                    )
                    latency_ms = (time.perf_counter() - started) * 1000
                    completion = _completion_from(response, latency_ms)
                    slot.answered(sum(completion.usage.values()) if completion.usage else None)
                    return completion
                except openai.APIStatusError as exc:
                    if exc.status_code not in RETRYABLE_STATUS:
                        return Completion(text=None, error=describe_error(exc))
                    wait = retry_after_seconds(exc.response.headers)
                    if exc.status_code in OVERLOAD_STATUS:
                        slot.overloaded(wait)
                    error = describe_error(exc)
                except openai.APITimeoutError as exc:
                    slot.timed_out()
                    error = describe_error(exc, attempt_timeout)
                except openai.APIConnectionError as exc:
                    error = describe_error(exc, attempt_timeout)
                except Exception as exc:  # e.g. a non-OpenAI server's body, malformed JSON
                    return Completion(text=None, error=describe_error(exc))
            attempts = f"after {attempt + 1} attempt{'s' if attempt else ''}"
            if attempt >= self.retry.max_retries:
                return Completion(text=None, error=f"{error} ({attempts})")
            delay = wait if wait is not None else self.retry.backoff(attempt, self._jitter)
            delay = min(delay, MAX_BACKOFF_S)
            if time.monotonic() + delay >= deadline:
                budget = f"{budget_s:g} s time limit per call"
                return Completion(text=None, error=f"{error} ({attempts}; {budget})")
            await asyncio.sleep(delay)
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
