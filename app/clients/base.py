"""The model-client protocol, the retry policy clients share, and the shape of a client factory.

A client turns chat messages into a ``Completion``. Errors are data: ``complete`` never raises
for a failed call; it returns a ``Completion`` whose ``error`` says what happened. Factories are
registered per endpoint kind in ``app.clients.kinds``.
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
