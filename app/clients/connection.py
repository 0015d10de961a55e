"""The connection test of the Endpoints page: can this endpoint be reached, does it serve the
model, does a tiny chat come back? Every failure becomes one readable message.

A run's pre-flight is the kind's own (``kind_of(endpoint).preflight``); this test works for any
kind that speaks the OpenAI API, the embedded model included.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from app.clients.base import RetryPolicy
from app.clients.endpoint_settings import validate_base_url
from app.clients.kinds import make_client
from app.clients.openai_compatible import describe_error, list_models
from core.types import Endpoint


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


def test_connection(endpoint: Endpoint, try_chat: bool = True) -> ConnectionReport:
    """List the server's models and send a tiny chat; every failure becomes a readable message."""
    return asyncio.run(_test_connection(endpoint, try_chat))


test_connection.__test__ = False  # not a pytest test despite the name
