"""An in-process mock model (kind ``mock``) for unit tests of the runner: no server, no network.

Answers come from a script: a mapping from prompt (the last message's content) to an answer, or a
function of the messages. An answer may be text, a ``Completion``, or an exception, which comes
back as an error ``Completion`` like a failed call would. The client records every call, can add
latency, and counts how many calls were in flight at once.

    mock = MockClient({"Is this good?": "positive"}, default="negative")
    Runner(store, embeddings, client_factory=mock.factory)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.clients.base import Messages, RetryPolicy
from app.clients.kinds import client_kind
from core.types import Completion, Endpoint

Answer = str | Completion | BaseException
Responder = Callable[[Messages], Answer]

MOCK_KIND = "mock"


@dataclass(frozen=True)
class MockCall:
    """One call the mock received."""

    messages: Messages
    params: dict[str, Any]

    @property
    def prompt(self) -> str:
        return self.messages[-1]["content"] if self.messages else ""


def echo(messages: Messages) -> str:
    """The default script: answer with the prompt itself."""
    return messages[-1]["content"] if messages else ""


class MockClient:
    """A scripted ``ModelClient``. One instance may serve many endpoints (see ``factory``)."""

    def __init__(
        self,
        script: Mapping[str, Answer] | Responder = echo,
        *,
        default: Answer | None = None,
        latency_s: float = 0.0,
        concurrency: int | None = None,
    ) -> None:
        self.script = script
        self.default = default
        self.latency_s = latency_s
        self._limit = asyncio.Semaphore(concurrency) if concurrency else None
        self.calls: list[MockCall] = []
        self.endpoints: list[Endpoint] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = 0

    def factory(self, endpoint: Endpoint, retry: RetryPolicy | None = None) -> MockClient:
        """A ``ClientFactory`` that hands out this very client (so its record is shared)."""
        self.endpoints.append(endpoint)
        return self

    @property
    def prompts(self) -> list[str]:
        return [call.prompt for call in self.calls]

    async def complete(self, messages: Messages, params: dict[str, Any]) -> Completion:
        self.calls.append(MockCall([dict(m) for m in messages], dict(params)))
        if self._limit is None:
            return await self._answer(messages)
        async with self._limit:
            return await self._answer(messages)

    async def close(self) -> None:
        self.closed += 1

    async def _answer(self, messages: Messages) -> Completion:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            try:
                answer = self._scripted(messages)
            except Exception as exc:  # a responder that raises is a failed call, as data
                answer = exc
        finally:
            self.in_flight -= 1
        if isinstance(answer, Completion):
            return answer
        if isinstance(answer, BaseException):
            return Completion(text=None, error=f"{type(answer).__name__}: {answer}")
        return Completion(text=answer, latency_ms=self.latency_s * 1000)

    def _scripted(self, messages: Messages) -> Answer:
        if callable(self.script):
            return self.script(messages)
        prompt = messages[-1]["content"] if messages else ""
        if prompt in self.script:
            return self.script[prompt]
        if self.default is not None:
            return self.default
        return LookupError(f"the mock has no answer for {prompt[:80]!r}")


@client_kind(MOCK_KIND)
def mock_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> MockClient:
    """An echoing mock, for endpoints saved with kind ``mock`` (demos, smoke tests)."""
    return MockClient()
