"""Model clients behind one small protocol, one factory per endpoint kind.

``make_client(endpoint)`` builds the client registered for ``endpoint.kind``. A new kind is one
module here that registers its factory with ``@client_kind("name")``, plus its name in the
import below (importing a kind's module registers it).
"""

from app.clients import batch, local_model, mock, openai_compatible  # noqa: F401
from app.clients.base import (
    DEFAULT_CALL_BUDGET_S,
    ClientFactory,
    Messages,
    ModelClient,
    RetryPolicy,
    client_kind,
    client_kinds,
    make_client,
)

__all__ = [
    "DEFAULT_CALL_BUDGET_S",
    "ClientFactory",
    "Messages",
    "ModelClient",
    "RetryPolicy",
    "client_kind",
    "client_kinds",
    "make_client",
]
