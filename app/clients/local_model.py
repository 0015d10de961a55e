"""The embedded kind: the local model served by ``app.engine.model_server`` on 127.0.0.1.

The server speaks the OpenAI API, so its client is the OpenAI-compatible one; the endpoint
carries the server's current port (``EmbeddedServer.endpoint()``). Only the call-cache key and
the run id treat the kind apart, because that port changes with every start.
"""

from __future__ import annotations

from app.clients.base import RetryPolicy
from app.clients.kinds import client_kind
from app.clients.openai_compatible import OpenAIClient
from core.types import EMBEDDED_KIND, Endpoint


@client_kind(EMBEDDED_KIND)
def embedded_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> OpenAIClient:
    return OpenAIClient(endpoint, retry)
