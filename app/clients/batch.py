"""The batch kind: answers come from batch result files, never from the network.

A run against a batch endpoint is planned with ``batch export`` and judged by ``batch import``;
its client only ever answers "not yet". The call cache answers every call that a result file
filled before a call reaches the client, so a call the client sees is one with no answer yet —
or one whose result line was an error, which ``errors`` (keyed by ``request_identity``) holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.clients.base import Messages, RetryPolicy
from app.clients.kinds import client_kind
from core.types import BATCH_KIND, Completion, Endpoint, content_hash

NOT_ANSWERED = "not answered in the batch results yet"


def request_identity(model: str, params: dict[str, Any], messages: Messages) -> str:
    """What a client can tell of a call (no repeat index, no base URL): the key of ``errors``."""
    return content_hash({"model": model, "params": params, "messages": messages})


class BatchClient:
    """A ``ModelClient`` that never sends: every call it sees is unanswered (or failed)."""

    def __init__(self, endpoint: Endpoint, errors: Mapping[str, str] | None = None) -> None:
        self.endpoint = endpoint
        self.errors = dict(errors or {})
        self.unanswered: list[Messages] = []  # what was asked and had no answer, in order
        self.unanswered_params: list[dict[str, Any]] = []  # the parameters of each of those

    async def complete(self, messages: Messages, params: dict[str, Any]) -> Completion:
        error = self.errors.get(request_identity(self.endpoint.model, params, messages))
        if error is None:
            self.unanswered.append([dict(m) for m in messages])
            self.unanswered_params.append(dict(params))
        return Completion(text=None, error=error or NOT_ANSWERED)

    async def close(self) -> None:
        return None


@client_kind(
    BATCH_KIND,
    label="Batch files (OpenAI Batch API, vLLM's offline runner)",
    answered_offline_by="batch files (use `batch export`, then `batch import`)",
)
def batch_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> BatchClient:
    return BatchClient(endpoint)
