"""Model clients behind one small protocol, one registered kind per way an endpoint is answered.

``make_client(endpoint)`` builds the client registered for ``endpoint.kind``; ``kind_of(endpoint)``
says what else the app needs of that kind (its label, whether it sends calls, its pre-flight). A
new kind is one module here that registers itself with ``@client_kind("name", ...)``, plus its
name in the import below (importing a kind's module registers it).
"""

from app.clients import batch, local_model, mock, openai_compatible  # noqa: F401
from app.clients.base import (
    DEFAULT_CALL_BUDGET_S,
    ClientFactory,
    Messages,
    ModelClient,
    RetryPolicy,
)
from app.clients.kinds import (
    EndpointKind,
    client_kind,
    client_kinds,
    endpoint_kind,
    kind_of,
    make_client,
    offered_kinds,
)

__all__ = [
    "DEFAULT_CALL_BUDGET_S",
    "ClientFactory",
    "EndpointKind",
    "Messages",
    "ModelClient",
    "RetryPolicy",
    "client_kind",
    "client_kinds",
    "endpoint_kind",
    "kind_of",
    "make_client",
    "offered_kinds",
]
