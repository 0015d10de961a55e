"""The registry of endpoint kinds: what the rest of the app asks of a kind, filled by a decorator.

An endpoint's ``kind`` names how it is answered. Each kind registers, with ``@client_kind``, the
factory of its client and what the pages and the engine need to know of it: the label the
Endpoints page offers it under, whether a run sends it calls at all, and the pre-flight that
checks, before a run, that the endpoint will serve it. Code outside ``app.clients`` asks the kind
(``kind_of(endpoint).sends_calls``) instead of comparing kind names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.clients.base import ClientFactory, ModelClient, RetryPolicy
from core.types import OPENAI_KIND, Endpoint

# One line when the endpoint cannot serve a run (key, connection, model), else None.
Preflight = Callable[[Endpoint], str | None]


def nothing_to_check(endpoint: Endpoint) -> None:
    """The pre-flight of kinds that need none (in-process, or checked at their own start)."""
    return None


@dataclass(frozen=True)
class EndpointKind:
    """One kind of endpoint, as registered by the module of its client.

    ``label``: how the Endpoints page offers the kind to save an endpoint with; None for kinds
    saved elsewhere (the embedded model) or only in tests (the mock).
    ``answered_offline_by``: for a kind a run never sends calls to, what answers its calls
    instead. Such an endpoint stands in for the online endpoint of the same server and model:
    its answers are that endpoint's answers, so its run is that endpoint's run (same run id).
    """

    name: str
    factory: ClientFactory
    label: str | None = None
    answered_offline_by: str | None = None
    preflight: Preflight = nothing_to_check

    @property
    def sends_calls(self) -> bool:
        return self.answered_offline_by is None


_KINDS: dict[str, EndpointKind] = {}


def client_kind(
    name: str,
    *,
    label: str | None = None,
    answered_offline_by: str | None = None,
    preflight: Preflight = nothing_to_check,
) -> Callable[[ClientFactory], ClientFactory]:
    """Decorator: register ``factory(endpoint, retry) -> ModelClient`` as the client of the
    endpoint kind ``name``, with what else the app asks of that kind (see ``EndpointKind``)."""

    def register(factory: ClientFactory) -> ClientFactory:
        if name in _KINDS and _KINDS[name].factory is not factory:
            raise ValueError(f"endpoint kind {name!r} registered twice")
        _KINDS[name] = EndpointKind(name, factory, label, answered_offline_by, preflight)
        return factory

    return register


def client_kinds() -> tuple[str, ...]:
    """The registered endpoint kinds, sorted."""
    return tuple(sorted(_KINDS))


def _unknown_kind_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> ModelClient:
    known = ", ".join(client_kinds())
    raise ValueError(f"unknown endpoint kind {endpoint.kind!r} (known: {known})")


def endpoint_kind(name: str) -> EndpointKind:
    """The kind registered as ``name``. A name no module registered (an endpoint saved by a build
    with more kinds) still has one: it sends calls, needs no pre-flight, and its factory raises
    a readable ValueError, so such an endpoint fails where its client is made."""
    return _KINDS.get(name) or EndpointKind(name, _unknown_kind_client)


def kind_of(endpoint: Endpoint) -> EndpointKind:
    """The kind of ``endpoint`` (see ``endpoint_kind``)."""
    return endpoint_kind(endpoint.kind)


def offered_kinds() -> tuple[EndpointKind, ...]:
    """The kinds the Endpoints page offers (those with a label): a new endpoint's default kind
    first, then by name."""
    labelled = [kind for kind in _KINDS.values() if kind.label is not None]
    return tuple(sorted(labelled, key=lambda kind: (kind.name != OPENAI_KIND, kind.name)))


def make_client(endpoint: Endpoint, retry: RetryPolicy | None = None) -> ModelClient:
    """A client for ``endpoint``, built by the factory registered for its kind."""
    return kind_of(endpoint).factory(endpoint, retry)
