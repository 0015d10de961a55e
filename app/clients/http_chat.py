"""The lean HTTP path for chat calls: one keep-alive connection pool per endpoint.

The ``openai`` SDK spends about 2 ms of CPU per call on the event loop (request options,
pydantic response models, httpx's client layers, anyio's cancel scopes on every read and write).
At concurrency 24 against a 100 ms endpoint that CPU, not the endpoint, bounds a run. This module
sends the same POST with ``httpcore2`` (the transport under the SDK's httpx) directly, over
asyncio streams, and parses the answer with ``json.loads``; ``bench/bench_call_path.py`` measures
each layer against the SDK.

- ``https://`` endpoints: httpcore2's pool, HTTP/2 when the server offers it in the TLS
  handshake (ALPN) and the ``h2`` package is installed, else HTTP/1.1 with keep-alive.
- ``http://`` endpoints (local servers: vLLM, llama.cpp, Ollama): HTTP/1.1 with keep-alive in a
  small pool of our own. Plain-text HTTP/2 (h2c) is not attempted: local servers rarely offer it
  and it needs an upgrade round trip; the pool's check-out is cheaper than httpcore2's.
- An environment proxy (``HTTPS_PROXY``/``HTTP_PROXY``, ``NO_PROXY``) is honoured, as the SDK did.

Errors are httpcore2's exceptions (``TimeoutException``, ``NetworkError``, ``ProtocolError``);
an HTTP error status is a normal ``ChatReply``: the caller decides what it means.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import httpcore2
from httpcore2 import AsyncNetworkBackend, AsyncNetworkStream

# How long an idle keep-alive connection is kept (servers commonly close theirs after 5-75 s;
# a connection the server already closed is noticed and dropped before it is used).
KEEPALIVE_S = 30.0
# Idle connections kept per endpoint; more are opened while more calls run at once.
MAX_IDLE_CONNECTIONS = 64
# HTTP/2 needs the optional ``h2`` package; without it httpcore2 stays on HTTP/1.1.
HTTP2_AVAILABLE = importlib.util.find_spec("h2") is not None
# Same-server 307/308 redirects followed per call (e.g. a path moved behind a proxy).
MAX_REDIRECTS = 3
# StreamReader buffer: a whole chat answer usually fits in one read.
_READ_LIMIT = 2**20


@dataclass(frozen=True)
class ChatReply:
    """One HTTP answer: the status, the headers (lower-case names) and the whole body."""

    status: int
    headers: dict[str, str]
    body: bytes


def _reraise(exc: BaseException, timeout: type[Exception], other: type[Exception]) -> None:
    if isinstance(exc, TimeoutError):
        raise timeout(str(exc) or "timed out") from exc
    raise other(str(exc)) from exc


class AsyncioStream(AsyncNetworkStream):
    """A connection on asyncio's streams, raising httpcore2's exceptions.

    Phase timeouts (connect, read, write) are applied only when given: the chat client bounds a
    whole attempt with one ``asyncio.timeout`` instead of arming a timer per read and write.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            if timeout is None:
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except (TimeoutError, OSError) as exc:
            _reraise(exc, httpcore2.ReadTimeout, httpcore2.ReadError)
            raise  # unreachable: for the type checker

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            if timeout is None:
                await self._writer.drain()
            else:
                async with asyncio.timeout(timeout):
                    await self._writer.drain()
        except (TimeoutError, OSError) as exc:
            _reraise(exc, httpcore2.WriteTimeout, httpcore2.WriteError)

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except (TimeoutError, OSError) as exc:  # ssl.SSLError is an OSError
            self._writer.close()
            _reraise(exc, httpcore2.ConnectTimeout, httpcore2.ConnectError)
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":  # httpcore2 reads the ALPN choice (h2 or http/1.1) from it
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":
            # An idle keep-alive connection with something to read was closed by the server.
            return self._reader.at_eof() or self._writer.is_closing()
        return None


class RequestBufferingStream(AsyncioStream):
    """For HTTP/1.1 only, where a request is always written whole before its answer is read:
    the request's writes (its headers, then its body) are held and sent together at its first
    read, as one send instead of two."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self._held: list[bytes] = []

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._held.append(buffer)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            held, self._held = b"".join(self._held), []
            await super().write(held, timeout)
        return await super().read(max_bytes, timeout)


class AsyncioBackend(AsyncNetworkBackend):
    """httpcore2's network backend on plain asyncio (its default goes through anyio).

    ``buffer_requests``: connections send each request in one piece (HTTP/1.1 only).
    """

    def __init__(self, *, buffer_requests: bool = False) -> None:
        self._stream_class = RequestBufferingStream if buffer_requests else AsyncioStream

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, limit=_READ_LIMIT, local_addr=local
                )
        except (TimeoutError, OSError) as exc:
            _reraise(exc, httpcore2.ConnectTimeout, httpcore2.ConnectError)
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return self._stream_class(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Transport(Protocol):
    async def exchange(self, request: httpcore2.Request) -> httpcore2.Response:
        """Send ``request``; the answer with its whole body read."""
        ...

    async def aclose(self) -> None: ...


class _SharedPool:
    """httpcore2's own pool (HTTP/2 streams share a connection), read to the end per call."""

    def __init__(self, pool: httpcore2.AsyncConnectionPool) -> None:
        self._pool = pool

    async def exchange(self, request: httpcore2.Request) -> httpcore2.Response:
        response = await self._pool.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def aclose(self) -> None:
        await self._pool.aclose()


# How a reused keep-alive connection that the server closed fails: no answer at all.
_STALE_CONNECTION = (httpcore2.RemoteProtocolError, httpcore2.ReadError, httpcore2.WriteError)


class KeepAlivePool:
    """HTTP/1.1 connections to one origin, each lent to one request at a time.

    The caller's concurrency limiter bounds how many are open at once, so the pool has no limit
    of its own and never queues: it lends an idle connection or opens one.
    """

    def __init__(self, origin: httpcore2.Origin, backend: AsyncNetworkBackend) -> None:
        self._origin = origin
        self._host = origin.host.decode("ascii")
        self._backend = backend
        self._idle: list[httpcore2.AsyncHTTP11Connection] = []

    async def _lend(self, request: httpcore2.Request) -> httpcore2.AsyncHTTP11Connection | None:
        """An idle kept-alive connection, or None when there is none to reuse."""
        while self._idle:
            connection = self._idle.pop()
            if connection.is_available() and not connection.has_expired():
                return connection
            await connection.aclose()  # expired, or closed by the server while idle
        return None

    async def _connect(self, request: httpcore2.Request) -> httpcore2.AsyncHTTP11Connection:
        # Connected here rather than by httpcore2's AsyncHTTPConnection: that layer's lock and
        # tracing cost CPU on every call, and plain HTTP needs none of its protocol choice.
        connect_timeout = request.extensions.get("timeout", {}).get("connect")
        stream = await self._backend.connect_tcp(self._host, self._origin.port, connect_timeout)
        return httpcore2.AsyncHTTP11Connection(self._origin, stream, keepalive_expiry=KEEPALIVE_S)

    async def exchange(self, request: httpcore2.Request) -> httpcore2.Response:
        """Send ``request`` and read the whole answer (the connection is back in the pool).

        A kept-alive connection that the server closed just as it was reused (its idle timeout
        ran out) fails without an answer; the request then goes once more, on a new connection
        (at most once per call; a new connection's failure is the caller's to retry).
        """
        reused = await self._lend(request)
        if reused is not None:
            try:
                return await self._send(reused, request)
            except _STALE_CONNECTION:
                pass  # sent once more below, on a new connection
        return await self._send(await self._connect(request), request)

    async def _send(
        self, connection: httpcore2.AsyncHTTP11Connection, request: httpcore2.Request
    ) -> httpcore2.Response:
        try:
            response = await connection.handle_async_request(request)
            try:
                await response.aread()
            finally:
                await response.aclose()
        except BaseException:
            await connection.aclose()
            raise
        if connection.is_available() and len(self._idle) < MAX_IDLE_CONNECTIONS:
            self._idle.append(connection)
        else:  # e.g. the server said "Connection: close", or answered HTTP/1.0
            await connection.aclose()
        return response

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()


def _environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _transport(url: httpcore2.URL, text_url: str, backend: AsyncNetworkBackend) -> _Transport:
    # One TLS context per endpoint (httpcore2 would build one per connection): the system's
    # trust store, or SSL_CERT_FILE / SSL_CERT_DIR, as the SDK's httpx used.
    ssl_context = httpcore2.default_ssl_context() if url.scheme == b"https" else None
    proxy = _environment_proxy(text_url)
    if proxy is not None:
        parts = urllib.parse.urlsplit(proxy)
        auth = None
        if parts.username:
            auth = (
                urllib.parse.unquote(parts.username),
                urllib.parse.unquote(parts.password or ""),
            )
        bare = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
        return _SharedPool(
            httpcore2.AsyncHTTPProxy(
                proxy_url=bare.geturl(),
                proxy_auth=auth,
                ssl_context=ssl_context,
                max_connections=None,
                keepalive_expiry=KEEPALIVE_S,
                http2=HTTP2_AVAILABLE,
                network_backend=backend,
            )
        )
    if url.scheme == b"https":
        return _SharedPool(
            httpcore2.AsyncConnectionPool(
                ssl_context=ssl_context,
                max_connections=None,
                max_keepalive_connections=MAX_IDLE_CONNECTIONS,
                keepalive_expiry=KEEPALIVE_S,
                http2=HTTP2_AVAILABLE,
                network_backend=backend,
            )
        )
    return KeepAlivePool(url.origin, AsyncioBackend(buffer_requests=True))


def _same_server_redirect(url: httpcore2.URL, reply: ChatReply) -> httpcore2.URL | None:
    """Where a method-keeping redirect (307/308) to the same scheme, host and port points."""
    location = reply.headers.get("location")
    if reply.status not in (307, 308) or not location:
        return None
    host = url.host.decode()
    host = f"[{host}]" if ":" in host else host
    current = f"{url.scheme.decode()}://{host}:{url.port or ''}{url.target.decode()}"
    target = urllib.parse.urlsplit(urllib.parse.urljoin(current, location))
    here = urllib.parse.urlsplit(current)
    if (target.scheme, target.hostname, target.port) != (here.scheme, here.hostname, here.port):
        return None
    path = target.path + (f"?{target.query}" if target.query else "")
    return httpcore2.URL(scheme=url.scheme, host=url.host, port=url.port, target=path.encode())


class ChatHTTP:
    """POSTs chat bodies to ``{base_url}/chat/completions`` over one pool (create in the loop
    that uses it; close it after); GETs other paths of the API (the models list) on it too."""

    def __init__(self, base_url: str, api_key: str | None) -> None:
        self._base_url = base_url.rstrip("/")
        text_url = f"{self._base_url}/chat/completions"
        self._url = httpcore2.URL(text_url)
        host = self._url.host
        if b":" in host:  # an IPv6 address is bracketed in the Host header
            host = b"[" + host + b"]"
        default_port = {b"http": 80, b"https": 443}[self._url.scheme]
        if self._url.port not in (None, default_port):
            host += b":%d" % self._url.port
        # Built once: only the length changes from call to call.
        self._headers = [
            (b"Host", host),
            (b"Accept", b"application/json"),
            (b"Content-Type", b"application/json"),
            (b"User-Agent", b"morphscope"),
        ]
        if api_key:
            self._headers.append((b"Authorization", b"Bearer " + api_key.encode("latin-1")))
        self._transport = _transport(self._url, text_url, AsyncioBackend())

    async def post(self, body: dict[str, Any]) -> ChatReply:
        """Send one chat body; the whole answer, whatever its status.

        A 307/308 redirect to the same server is followed (the SDK followed redirects too);
        any other redirect comes back as it is, for the caller to name its Location.
        """
        content = json.dumps(body, ensure_ascii=False).encode()
        headers = [*self._headers, (b"Content-Length", str(len(content)).encode())]
        return await self._send(b"POST", self._url, headers, content)

    async def get(self, path: str) -> ChatReply:
        """GET ``{base_url}/{path}`` (e.g. ``models``) on the same pool; the whole answer."""
        url = httpcore2.URL(f"{self._base_url}/{path.lstrip('/')}")
        headers = [(name, value) for name, value in self._headers if name != b"Content-Type"]
        return await self._send(b"GET", url, headers, b"")

    async def _send(
        self, method: bytes, url: httpcore2.URL, headers: list[tuple[bytes, bytes]], content: bytes
    ) -> ChatReply:
        for _ in range(MAX_REDIRECTS + 1):
            request = httpcore2.Request(method, url, headers=headers, content=content)
            response = await self._transport.exchange(request)
            reply = ChatReply(
                response.status,
                {
                    name.decode("latin-1").lower(): value.decode("latin-1")
                    for name, value in response.headers
                },
                response.content,
            )
            target = _same_server_redirect(url, reply)
            if target is None:
                break
            url = target
        return reply

    async def close(self) -> None:
        await self._transport.aclose()
