"""Chat calls over HTTP: one ``httpx2.AsyncClient`` (one keep-alive pool) per endpoint.

httpx2 is the HTTP client under the ``openai`` SDK, used here without the SDK's request options
and pydantic response models: the body is sent as JSON bytes and the answer read with
``json.loads``. It brings what an endpoint needs: keep-alive (an idle connection the server has
closed is dropped before it is reused), HTTP/2 to ``https://`` endpoints that offer it in the TLS
handshake when the ``h2`` package is installed, the system's trust store or ``SSL_CERT_FILE`` /
``SSL_CERT_DIR``, and an environment proxy (``HTTPS_PROXY``/``HTTP_PROXY``, ``NO_PROXY``).

Why not a leaner hand-written path: ``bench/bench_engine.py`` (1,000 distinct calls, concurrency
24, 100 ms server latency, 3 rounds, medians; both paths in the same run, on a 2-core machine
shared with other work) measured, as multiples of a bare ``AsyncOpenAI`` client's calls/s:

    load average   whole ``python -m app run``      engine (``Runner``)
                   httpx2   hand-written            httpx2   hand-written
    3-5            0.94×    1.21×                   1.08×    1.37×
    4-5            1.38×    1.50×                   1.30×    1.93×
    17             0.67×    0.73×                   0.73×    0.99×

"hand-written": an HTTP/1.1 path on httpcore2 with its own keep-alive pool. Hand-written code was
to stay only if the library left the command below 0.85× the bare client; at a sane load httpx2
clears that bar, so the library is used. (At a load average of 17 on 2 cores both fell below
it, the hand-written path less far.)

Errors are httpx2's exceptions (``TimeoutException``, ``NetworkError``, ``ProtocolError``); an
HTTP error status is a normal ``ChatReply``: the caller decides what it means.
"""

from __future__ import annotations

import importlib.util
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import httpx2

# How long an idle keep-alive connection is kept (servers commonly close theirs after 5-75 s).
KEEPALIVE_S = 30.0
# Idle connections kept per endpoint; more are opened while more calls run at once (the
# client's concurrency limiter, not the pool, bounds how many).
MAX_IDLE_CONNECTIONS = 64
# HTTP/2 needs the optional ``h2`` package; without it httpx2 stays on HTTP/1.1.
HTTP2_AVAILABLE = importlib.util.find_spec("h2") is not None
# Same-server 307/308 redirects followed per call (e.g. a path moved behind a proxy).
MAX_REDIRECTS = 3


@dataclass(frozen=True)
class ChatReply:
    """One HTTP answer: the status, the headers (lower-case names) and the whole body."""

    status: int
    headers: dict[str, str]
    body: bytes


def same_server_redirect(url: str, reply: ChatReply) -> str | None:
    """Where a method-keeping redirect (307/308) to the same scheme, host and port points.

    Other redirects are not followed: the caller names where they point, so that the user fixes
    the base URL rather than have every call take a detour (or send its key to another host).
    """
    location = reply.headers.get("location")
    if reply.status not in (307, 308) or not location:
        return None
    target = urllib.parse.urljoin(url, location)
    there, here = urllib.parse.urlsplit(target), urllib.parse.urlsplit(url)
    if (there.scheme, there.hostname, there.port) != (here.scheme, here.hostname, here.port):
        return None
    return target


def needs_tls(base_url: str) -> bool:
    """Whether a client for ``base_url`` may ever speak TLS, and so needs the CA bundle: an
    ``https://`` endpoint, or any proxy from the environment (which may be reached over TLS).

    Loading the bundle costs 0.2-0.6 s per client, paid at the start of every run; a plain-http
    endpoint (a local llama.cpp server, the embedded model) never speaks TLS, because only
    same-scheme redirects are followed.
    """
    return urllib.parse.urlsplit(base_url).scheme != "http" or bool(urllib.request.getproxies())


class ChatHTTP:
    """POSTs chat bodies to ``{base_url}/chat/completions`` over one pool (create in the loop
    that uses it; close it after); GETs other paths of the API (the models list) on it too.

    No timeout of its own: the chat client bounds a whole attempt with one ``asyncio.timeout``.
    """

    def __init__(self, base_url: str, api_key: str | None) -> None:
        self._base_url = base_url.rstrip("/")
        self._chat_url = f"{self._base_url}/chat/completions"
        headers = {"Accept": "application/json", "User-Agent": "morphscope"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx2.AsyncClient(
            headers=headers,
            timeout=None,
            http2=HTTP2_AVAILABLE,
            verify=needs_tls(base_url),
            limits=httpx2.Limits(
                max_connections=None,
                max_keepalive_connections=MAX_IDLE_CONNECTIONS,
                keepalive_expiry=KEEPALIVE_S,
            ),
        )

    async def post(self, body: dict[str, Any]) -> ChatReply:
        """Send one chat body; the whole answer, whatever its status.

        A 307/308 redirect to the same server is followed (the SDK followed redirects too);
        any other redirect comes back as it is, for the caller to name its Location.
        """
        content = json.dumps(body, ensure_ascii=False).encode()
        return await self._send("POST", self._chat_url, content)

    async def get(self, path: str) -> ChatReply:
        """GET ``{base_url}/{path}`` (e.g. ``models``) on the same pool; the whole answer."""
        return await self._send("GET", f"{self._base_url}/{path.lstrip('/')}", None)

    async def _send(self, method: str, url: str, content: bytes | None) -> ChatReply:
        headers = {"Content-Type": "application/json"} if content is not None else None
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._request(method, url, content, headers)
            reply = ChatReply(
                response.status_code,
                {name.lower(): value for name, value in response.headers.items()},
                response.content,
            )
            target = same_server_redirect(url, reply)
            if target is None:
                break
            url = target
        return reply

    async def _request(
        self, method: str, url: str, content: bytes | None, headers: dict[str, str] | None
    ) -> httpx2.Response:
        """One request, sent again at once if a kept-alive connection turns out closed.

        The pool drops an idle connection the server has closed, but only if it has already
        seen the close: a server that closes just as a connection is taken from the pool ends
        the request with no answer at all ("Server disconnected without sending a response").
        Nothing was answered, so the request is sent once more on a fresh connection instead of
        spending one of the call's own retries (and failing a call that has none).
        """
        try:
            return await self._client.request(method, url, content=content, headers=headers)
        except (httpx2.TransportError, BrokenPipeError, ConnectionResetError) as exc:
            if not _closed_before_answering(exc):
                raise
        return await self._client.request(method, url, content=content, headers=headers)

    async def close(self) -> None:
        await self._client.aclose()


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first (an exception group's first
    member stands for the group's cause): the HTTP stack wraps a failure in several layers."""
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
    return chain


def _closed_before_answering(exc: BaseException) -> bool:
    """Whether the server closed the connection before any of its answer arrived: the error,
    or one it was raised from, is a reset or broken pipe, or a disconnect with no response."""
    return any(
        isinstance(layer, httpx2.WriteError | BrokenPipeError | ConnectionResetError)
        or "without sending a response" in str(layer).lower()
        for layer in exception_chain(exc)
    )
