"""The model-client protocol and the registry of client factories, keyed by endpoint kind.

A client turns chat messages into a ``Completion``. Errors are data: ``complete`` never raises
for a failed call; it returns a ``Completion`` whose ``error`` says what happened. Built-in kinds
register through the same door (``client_kind``) as any new one.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from app.clients.limiter import LiveLoad
from core.types import Completion, Endpoint

MAX_BACKOFF_S = 30.0

Messages = list[dict[str, str]]


@runtime_checkable
class ModelClient(Protocol):
    """Talks to one endpoint. Create it inside the event loop that will use it; close it after."""

    async def complete(self, messages: Messages, params: dict[str, Any]) -> Completion:
        """One chat completion; failures come back as ``Completion(text=None, error=...)``."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


# The most one call may take, all attempts and waits together, unless a policy says otherwise.
DEFAULT_CALL_BUDGET_S = 120.0


@dataclass
class RetryPolicy:
    """How often a client retries a retryable failure, with exponential backoff and jitter.

    ``total_s`` bounds one call: every attempt, backoff and Retry-After wait together. A call
    that would run past it gives up with the last error instead of waiting.
    """

    max_retries: int = 4
    base_delay_s: float = 0.5
    total_s: float = DEFAULT_CALL_BUDGET_S

    def backoff(self, attempt: int, rng: random.Random) -> float:
        return min(MAX_BACKOFF_S, self.base_delay_s * (2**attempt)) * (0.5 + rng.random() / 2)


def live_load(client: ModelClient) -> LiveLoad | None:
    """The client's live concurrency and calls/s, for clients that adapt (else None)."""
    report = getattr(client, "live_load", None)
    return report() if callable(report) else None


ClientFactory = Callable[[Endpoint, RetryPolicy | None], ModelClient]

_FACTORIES: dict[str, ClientFactory] = {}


def client_kind(kind: str) -> Callable[[ClientFactory], ClientFactory]:
    """Decorator: register ``factory(endpoint, retry) -> ModelClient`` for endpoints of ``kind``."""

    def register(factory: ClientFactory) -> ClientFactory:
        if kind in _FACTORIES and _FACTORIES[kind] is not factory:
            raise ValueError(f"endpoint kind {kind!r} registered twice")
        _FACTORIES[kind] = factory
        return factory

    return register


def client_kinds() -> tuple[str, ...]:
    """The registered endpoint kinds, sorted."""
    return tuple(sorted(_FACTORIES))


def make_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> ModelClient:
    """A client for ``endpoint``, built by the factory registered for its kind."""
    try:
        factory = _FACTORIES[endpoint.kind]
    except KeyError:
        known = ", ".join(client_kinds())
        raise ValueError(f"unknown endpoint kind {endpoint.kind!r} (known: {known})") from None
    return factory(endpoint, retry)
