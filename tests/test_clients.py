"""Model clients: the registry of endpoint kinds, the mock client, and kind-stable ids."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.clients import (
    ModelClient,
    RetryPolicy,
    client_kind,
    client_kinds,
    endpoint_kind,
    kind_of,
    make_client,
    offered_kinds,
)
from app.clients.mock import MockClient
from app.clients.openai_compatible import OpenAIClient
from app.engine.model_server import embedded_endpoint
from core.identity import call_key
from core.run_config import RunConfig
from core.types import Completion, Endpoint, Sample
from storage import Store
from tests.fake_openai import SHUTDOWN_POLL_S

OPENAI = Endpoint(
    name="n", base_url="http://127.0.0.1:8000/v1/", model="m", api_key_env="K", seed=3
)
EMBEDDED = embedded_endpoint(port=41234)
SAMPLES = [Sample({"text": "good"}), Sample({"text": "bad"})]
MESSAGES = [{"role": "user", "content": "hi"}]


# ------------------------------------------------------------ ids do not move with the kind


def test_run_ids_are_the_ones_computed_before_endpoints_had_a_kind():
    """Regression: replacing ``Endpoint.embedded`` by a kind must not change any run id (a
    changed id would orphan every stored run from its resume and its cache)."""
    assert RunConfig(OPENAI, "sentiment", ("si.identity",)).run_id(SAMPLES) == "e71591346396"
    config = RunConfig(EMBEDDED, "sentiment", ("si.identity", "char.typo"))
    assert config.run_id(SAMPLES) == "371c015da70d"
    mixed = RunConfig(OPENAI, "sentiment", ("si.identity",), transformation_endpoint=EMBEDDED)
    assert mixed.run_id(SAMPLES) == "c088cfc4a447"


def test_call_keys_are_the_ones_computed_before_endpoints_had_a_kind():
    openai_key = call_key(
        OPENAI.cache_base_url, OPENAI.model, OPENAI.sampling_params(), MESSAGES, 0
    )
    assert openai_key == "cfb96075fd277524a533045f863d45296663cd0ba372bb2eba86259bb5298724"
    embedded_key = call_key(
        EMBEDDED.cache_base_url, EMBEDDED.model, EMBEDDED.sampling_params(), MESSAGES, 1
    )
    assert embedded_key == "497e87883ded83b92693b48d84f910dba755109c653165e45e9d21c4349873c9"


def test_stored_run_config_keeps_the_embedded_flag_shape():
    mixed = RunConfig(OPENAI, "sentiment", ("si.identity",), transformation_endpoint=EMBEDDED)
    data = mixed.to_dict()
    assert list(data["endpoint"])[-1] == "embedded" and data["endpoint"]["embedded"] is False
    assert data["transformation_endpoint"]["embedded"] is True
    assert "kind" not in json.dumps(data)


@pytest.mark.parametrize(
    "endpoint",
    [OPENAI, EMBEDDED, Endpoint(name="b", base_url="http://x/v1", model="m", kind="batch")],
)
def test_endpoint_dict_round_trips(endpoint):
    assert Endpoint.from_dict(json.loads(json.dumps(endpoint.to_dict()))) == endpoint


def test_a_new_kind_is_named_in_the_dict_and_in_the_run_id():
    # Not "batch": a batch endpoint's run is the run of the endpoint it stands for (test_batch).
    other = Endpoint(name="b", base_url="http://x/v1", model="m", kind="other")
    plain = Endpoint(name="b", base_url="http://x/v1", model="m")
    assert other.to_dict()["kind"] == "other" and not other.embedded
    assert RunConfig(other, "sentiment", ("si.identity",)).run_id(SAMPLES) != RunConfig(
        plain, "sentiment", ("si.identity",)
    ).run_id(SAMPLES)


def test_embedded_endpoints_share_one_cache_url_whatever_the_port():
    assert EMBEDDED.embedded and EMBEDDED.cache_base_url == "embedded://local"
    assert embedded_endpoint(port=5).cache_base_url == "embedded://local"
    assert not OPENAI.embedded and OPENAI.cache_base_url == "http://127.0.0.1:8000/v1"


# ------------------------------------------------------------ stored endpoints


def test_stored_endpoints_keep_their_kind(store):
    mock = Endpoint(name="m", base_url="http://x/v1", model="m", kind="mock", temperature=0.3)
    for endpoint in (OPENAI, EMBEDDED, mock):
        store.save_endpoint(endpoint)
        assert store.endpoint(endpoint.name) == endpoint


def test_endpoints_saved_before_kinds_load_with_their_kind(tmp_path):
    """Regression: rows written before the ``kind`` column get it from the ``embedded`` flag."""
    path = tmp_path / "old.db"
    old = Store(path)
    # Back to the schema before the kind migration, then rows as the older build wrote them.
    old._db.execute("ALTER TABLE endpoints DROP COLUMN kind")
    old._db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm004_endpoint_kind'")
    for name, flag in (("local", 1), ("remote", 0)):
        old._db["endpoints"].insert(
            {"name": name, "base_url": "http://127.0.0.1:1/v1", "model": "m", "params": "{}",
             "embedded": flag, "created_at": "2026-01-01T00:00:00+00:00"}
        )  # fmt: skip
    old.close()
    store = Store(path)
    try:
        assert store.endpoint("local").kind == "embedded" and store.endpoint("local").embedded
        assert store.endpoint("remote").kind == "openai"
    finally:
        store.close()


# ------------------------------------------------------------ the registry


def test_builtin_kinds_are_registered():
    assert {"openai", "embedded", "mock"} <= set(client_kinds())


def test_make_client_picks_the_factory_of_the_endpoints_kind():
    async def build() -> list[ModelClient]:
        clients = [make_client(e) for e in (OPENAI, EMBEDDED)]
        clients.append(make_client(Endpoint(name="x", base_url="mock://", model="m", kind="mock")))
        for client in clients:
            await client.close()
        return clients

    openai_client, embedded_client, mock_client = asyncio.run(build())
    assert isinstance(openai_client, OpenAIClient) and isinstance(embedded_client, OpenAIClient)
    assert isinstance(mock_client, MockClient)
    assert all(isinstance(c, ModelClient) for c in (openai_client, mock_client))


def test_an_unknown_kind_is_a_readable_error():
    with pytest.raises(ValueError, match=r"unknown endpoint kind 'nope'.*openai"):
        make_client(Endpoint(name="x", base_url="http://x/v1", model="m", kind="nope"))


def test_a_kind_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="registered twice"):
        client_kind("openai")(lambda endpoint, retry: MockClient())


def test_the_endpoints_page_offers_online_calls_first_then_batch_files():
    assert [(kind.name, kind.label) for kind in offered_kinds()] == [
        ("openai", "Online calls (OpenAI-compatible API)"),
        ("batch", "Batch files (OpenAI Batch API, vLLM's offline runner)"),
    ]


def test_only_the_batch_kind_sends_no_calls_and_says_what_answers_it():
    batch = endpoint_kind("batch")
    assert not batch.sends_calls and "`batch export`" in batch.answered_offline_by
    assert all(endpoint_kind(name).sends_calls for name in ("openai", "embedded", "mock"))


def test_only_the_openai_kind_has_a_pre_flight():
    """The embedded model is checked as it starts, a mock needs none, and a batch endpoint is
    never sent calls: their pre-flight passes without contacting anything."""
    dead = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    for name in ("embedded", "mock", "batch", "other"):
        assert endpoint_kind(name).preflight(Endpoint(name="x", kind=name, **dead)) is None
    problem = kind_of(Endpoint(name="x", **dead)).preflight(Endpoint(name="x", **dead))
    assert problem is not None and problem.startswith("cannot reach")


def test_a_kind_no_module_registered_sends_calls_and_fails_where_its_client_is_made():
    unknown = endpoint_kind("from-a-newer-build")
    assert unknown.sends_calls and unknown.label is None
    with pytest.raises(ValueError, match="unknown endpoint kind 'from-a-newer-build'"):
        make_client(Endpoint(name="x", base_url="http://x/v1", model="m", kind=unknown.name))


def test_the_openai_client_gets_the_runners_retry_policy():
    async def build() -> OpenAIClient:
        client = make_client(OPENAI, RetryPolicy(max_retries=1, base_delay_s=0.0))
        await client.close()
        return client

    client = asyncio.run(build())
    assert client.retry == RetryPolicy(max_retries=1, base_delay_s=0.0)


# ------------------------------------------------------------ the mock client


def _ask(client: MockClient, *prompts: str) -> list[Completion]:
    async def ask() -> list[Completion]:
        return await asyncio.gather(
            *(
                client.complete([{"role": "user", "content": p}], {"temperature": 0})
                for p in prompts
            )
        )

    return asyncio.run(ask())


def test_mock_answers_from_its_script_and_records_calls():
    mock = MockClient({"a": "one", "b": Completion(text="two", usage={"prompt_tokens": 1})})
    one, two, missing = _ask(mock, "a", "b", "c")
    assert one.text == "one" and two.usage == {"prompt_tokens": 1}
    assert not missing.ok and "no answer" in missing.error
    assert mock.prompts == ["a", "b", "c"] and mock.calls[0].params == {"temperature": 0}


def test_mock_errors_are_completions_not_exceptions():
    def responder(messages):
        if "boom" in messages[-1]["content"]:
            raise ConnectionError("refused")
        return "fine"

    scripted = MockClient({"x": TimeoutError("took too long")}, default="ok")
    assert [c.error for c in _ask(scripted, "x", "y")] == ["TimeoutError: took too long", None]
    assert [c.error for c in _ask(MockClient(responder), "boom", "calm")] == [
        "ConnectionError: refused",
        None,
    ]


def test_mock_echoes_by_default_and_counts_concurrency():
    mock = MockClient(latency_s=0.02, concurrency=2)
    answers = _ask(mock, *[f"p{i}" for i in range(6)])
    assert [a.text for a in answers] == [f"p{i}" for i in range(6)]
    assert mock.max_in_flight == 2 and mock.in_flight == 0
    unlimited = MockClient(latency_s=0.02)
    _ask(unlimited, *[f"p{i}" for i in range(6)])
    assert unlimited.max_in_flight == 6


# ------------------------------------------------------------ the call path (kind openai)


class RecordingHTTP11Server:
    """An HTTP/1.1 keep-alive chat server that records each request and counts connections.

    ``answers`` scripts the next replies as (status, headers, body); by default a chat answer.
    With ``tls`` (a cert and key file), it serves HTTPS.
    """

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        import socket
        import ssl
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[dict] = []
        self.connections = 0
        self.answers: list[tuple[int, dict[str, str], bytes]] = []
        # Close each connection after its answer without saying so (a keep-alive timeout that
        # runs out just as the client reuses the connection).
        self.drop_idle = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive

            def log_message(self, *args) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                owner.connections += 1

            def do_GET(self) -> None:
                owner.requests.append({"path": self.path, "headers": dict(self.headers)})
                self._answer(MODELS_ANSWER)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
                )
                self._answer(CHAT_ANSWER)

            def _answer(self, default: tuple[int, dict[str, str], bytes]) -> None:
                status, headers, data = owner.answers.pop(0) if owner.answers else default
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if owner.drop_idle:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            request_queue_size = 128
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.base_url = f"{scheme}://127.0.0.1:{self.server.server_port}/v1"
        # A short poll, so that close() (shutdown) does not wait up to 0.5 s for the loop.
        serve = {"poll_interval": SHUTDOWN_POLL_S}
        threading.Thread(target=self.server.serve_forever, kwargs=serve, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


MODELS_ANSWER = (200, {}, json.dumps({"object": "list", "data": [{"id": "m"}]}).encode())
CHAT_ANSWER = (
    200,
    {},
    json.dumps(
        {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "positive"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        }
    ).encode(),
)


@pytest.fixture
def http11():
    server = RecordingHTTP11Server()
    yield server
    server.close()


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (made with the openssl command)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


def _calls(endpoint: Endpoint, *prompts: str, retry: RetryPolicy | None = None, params=None):
    """Send each prompt once, in order, through one client; the completions."""

    async def run() -> list[Completion]:
        client = OpenAIClient(endpoint, retry or RetryPolicy(max_retries=0))
        try:
            return [
                await client.complete([{"role": "user", "content": p}], params or {})
                for p in prompts
            ]
        finally:
            await client.close()

    return asyncio.run(run())


def _calls_at_once(endpoint: Endpoint, count: int) -> list[Completion]:
    """``count`` prompts sent together through one client (its concurrency bounds them)."""

    async def run() -> list[Completion]:
        client = OpenAIClient(endpoint, RetryPolicy(max_retries=0))
        try:
            messages = [[{"role": "user", "content": f"p{i}"}] for i in range(count)]
            return await asyncio.gather(*(client.complete(m, {}) for m in messages))
        finally:
            await client.close()

    return asyncio.run(run())


def test_a_call_posts_model_messages_and_params_to_chat_completions(http11):
    endpoint = Endpoint(name="h", base_url=http11.base_url + "/", model="m")
    (completion,) = _calls(endpoint, "hi", params={"temperature": 0.0, "max_tokens": 4})
    assert completion.ok and completion.text == "positive"
    assert completion.usage == {"prompt_tokens": 5, "completion_tokens": 1}
    (request,) = http11.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.0,
        "max_tokens": 4,
    }
    assert request["headers"]["Content-Type"] == "application/json"


def test_the_key_is_sent_only_when_one_is_set(http11, monkeypatch, tmp_path):
    """No key configured: no Authorization header at all (the SDK sent "Bearer not-needed")."""
    monkeypatch.chdir(tmp_path)  # no .streamlit/secrets.toml here
    monkeypatch.delenv("MORPHSCOPE_TEST_KEY", raising=False)
    keyless = Endpoint(name="h", base_url=http11.base_url, model="m")
    with_env = Endpoint(
        name="h", base_url=http11.base_url, model="m", api_key_env="MORPHSCOPE_TEST_KEY"
    )
    _calls(keyless, "a")
    _calls(with_env, "b")  # the variable is not set: no key either
    monkeypatch.setenv("MORPHSCOPE_TEST_KEY", "sk-test")
    _calls(with_env, "c")
    auth = [request["headers"].get("Authorization") for request in http11.requests]
    assert auth == [None, None, "Bearer sk-test"]


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_the_models_list_is_a_get_with_the_key_on_the_calls_path(
    scheme, monkeypatch, tmp_path, tls_files
):
    """``list_models`` (the connection test and the pre-flight): GET {base}/models with the key,
    on the same HTTP path as the calls."""
    from app.clients.openai_compatible import ChatStatusError, list_models

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MORPHSCOPE_TEST_KEY", "sk-test")
    monkeypatch.setenv("SSL_CERT_FILE", tls_files[0])
    server = RecordingHTTP11Server(tls=tls_files if scheme == "https" else None)
    try:
        endpoint = Endpoint(
            name="h", base_url=server.base_url, model="m", api_key_env="MORPHSCOPE_TEST_KEY"
        )
        assert asyncio.run(list_models(endpoint, 5.0)) == ("m",)
        server.answers = [(401, {}, b'{"error": {"message": "bad key"}}')]
        with pytest.raises(ChatStatusError) as refused:
            asyncio.run(list_models(endpoint, 5.0))
    finally:
        server.close()
    assert (refused.value.status_code, refused.value.message) == (401, "bad key")
    first = server.requests[0]
    assert first["path"] == "/v1/models"
    assert first["headers"]["Authorization"] == "Bearer sk-test"
    assert "Content-Type" not in first["headers"] and "body" not in first


def test_calls_reuse_one_keep_alive_connection(http11):
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m")
    completions = _calls(endpoint, *[f"p{i}" for i in range(5)])
    assert all(c.ok for c in completions)
    assert len(http11.requests) == 5 and http11.connections == 1


def test_a_kept_alive_connection_the_server_closed_is_not_a_failed_call(http11):
    """Regression: a reused connection that the server had closed failed the call ("Server
    disconnected without sending a response"); the pool drops an idle connection the server
    has closed before it reuses one, so no retry of the call's own is spent."""
    http11.drop_idle = True
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m")
    completions = _calls(endpoint, *[f"p{i}" for i in range(4)])  # max_retries=0
    assert [c.error for c in completions] == [None] * 4
    assert http11.connections >= 4 and len(http11.requests) == 4


def test_concurrent_calls_open_at_most_concurrency_connections(http11):
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m", concurrency=3)
    assert all(c.ok for c in _calls_at_once(endpoint, 12))
    assert len(http11.requests) == 12 and http11.connections <= 3


@pytest.mark.parametrize(
    ("status", "headers", "body", "error"),
    [
        (400, {}, b'{"error": {"message": "max_tokens is too large"}}',
         "HTTP 400: max_tokens is too large"),
        (404, {}, b'{"error": "model \'m\' not found"}', "HTTP 404: model 'm' not found"),
        (422, {}, b'{"error": {"message": "1 error:\\n  bad input\\n  File x"}}',
         "HTTP 422: 1 error: bad input File x"),
        (422, {}, b'{"detail": "bad field"}', 'HTTP 422: {"detail": "bad field"}'),
        (403, {"Content-Type": "text/plain"}, b"forbidden here\nmore", "HTTP 403: forbidden here"),
        (401, {"Content-Type": "text/html"}, b"<html><body>no</body></html>",
         "HTTP 401: Unauthorized"),
        (400, {}, b"", "HTTP 400: Bad Request"),
    ],
)  # fmt: skip
def test_an_error_status_says_the_servers_message(http11, status, headers, body, error):
    """OpenAI-style ``error.message`` (also a bare ``error`` string, as Ollama sends), else a
    plain-text first line, else the status's name; a permanent status is not retried."""
    http11.answers = [(status, headers, body)]
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m")
    (completion,) = _calls(endpoint, "x", retry=RetryPolicy(max_retries=3, base_delay_s=0.01))
    assert completion.error == error
    assert len(http11.requests) == 1


@pytest.mark.parametrize("retry_after", ["0", "Thu, 01 Jan 2015 00:00:00 GMT"])
def test_retry_after_is_honoured_in_seconds_and_as_a_date(http11, retry_after):
    """A 429's Retry-After replaces the backoff: with a 30 s backoff (100 s base, capped) and a
    5 s budget, only the server's "retry now" (0 s, or a date already past) lets the retry
    happen."""
    http11.answers = [(429, {"Retry-After": retry_after}, b'{"error": {"message": "slow"}}')]
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m", timeout_s=2)
    retry = RetryPolicy(max_retries=2, base_delay_s=100.0, total_s=5.0)
    (completion,) = _calls(endpoint, "x", retry=retry)
    assert completion.ok and len(http11.requests) == 2


def test_without_retry_after_the_backoff_respects_the_budget(http11):
    http11.answers = [(503, {}, b'{"error": {"message": "busy"}}')]
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m", timeout_s=2)
    retry = RetryPolicy(max_retries=2, base_delay_s=100.0, total_s=5.0)
    (completion,) = _calls(endpoint, "x", retry=retry)
    assert completion.error == "HTTP 503: busy (after 1 attempt; 5 s time limit per call)"


def test_an_https_endpoint_is_served_over_tls(tls_files, monkeypatch):
    """TLS, trusting SSL_CERT_FILE as the SDK's httpx does."""
    monkeypatch.setenv("SSL_CERT_FILE", tls_files[0])
    server = RecordingHTTP11Server(tls=tls_files)
    try:
        endpoint = Endpoint(name="h", base_url=server.base_url, model="m")
        completions = _calls(endpoint, "a", "b")
    finally:
        server.close()
    assert [c.text for c in completions] == ["positive", "positive"]
    assert server.connections == 1  # kept alive over TLS too


def test_an_untrusted_certificate_is_a_connection_failure(tls_files, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server = RecordingHTTP11Server(tls=tls_files)
    try:
        endpoint = Endpoint(name="h", base_url=server.base_url, model="m")
        (completion,) = _calls(endpoint, "a")
    finally:
        server.close()
    assert completion.error.startswith("connection failed: ") and "CERTIFICATE" in completion.error


class H2ChatServer:
    """A TLS server that speaks only HTTP/2 (ALPN "h2") and answers every stream with a chat
    answer: a client that did not negotiate HTTP/2 gets nothing it can read."""

    def __init__(self, tls: tuple[str, str]) -> None:
        import socket
        import ssl
        import threading

        self.streams = 0
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        context.set_alpn_protocols(["h2"])
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._context = context
        self.base_url = f"https://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock) -> None:
        import h2.config
        import h2.connection
        import h2.events

        try:
            tls = self._context.wrap_socket(sock, server_side=True)
        except OSError:
            return
        if tls.selected_alpn_protocol() != "h2":
            tls.close()
            return
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        tls.sendall(conn.data_to_send())
        while data := tls.recv(65536):
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if isinstance(event, h2.events.StreamEnded):
                    self.streams += 1
                    body = CHAT_ANSWER[2]
                    headers = [(":status", "200"), ("content-type", "application/json"),
                               ("content-length", str(len(body)))]  # fmt: skip
                    conn.send_headers(event.stream_id, headers)
                    conn.send_data(event.stream_id, body, end_stream=True)
            tls.sendall(conn.data_to_send())
        tls.close()

    def close(self) -> None:
        self._listener.close()


def test_an_https_endpoint_that_offers_http2_gets_it(tls_files, monkeypatch):
    pytest.importorskip("h2")
    monkeypatch.setenv("SSL_CERT_FILE", tls_files[0])
    server = H2ChatServer(tls_files)
    try:
        endpoint = Endpoint(name="h", base_url=server.base_url, model="m", concurrency=4)
        completions = _calls_at_once(endpoint, 6)
    finally:
        server.close()
    assert [c.text for c in completions] == ["positive"] * 6, completions[0].error
    assert server.streams == 6


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"[1, 2]", "not an OpenAI-compatible response (no choices)"),
        (b'{"choices": []}', "not an OpenAI-compatible response (no choices)"),
        (b'{"choices": [{"index": 0}]}', "the response has no message content"),
        (b'{"choices": [{"message": {"content": null}}]}', "the response has no message content"),
    ],
)
def test_a_body_of_another_shape_is_an_error_completion(body, error):
    from app.clients.openai_compatible import completion_from_body

    assert completion_from_body(body, 1.0).error == error


def test_usage_keeps_only_integer_token_counts():
    from app.clients.openai_compatible import completion_from_body

    body = b'{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 3, "completion_tokens": true, "total_tokens": 4}}'
    completion = completion_from_body(body, 12.5)
    assert completion.text == "ok" and completion.latency_ms == 12.5
    assert completion.usage == {"prompt_tokens": 3}


def test_no_proxy_names_the_hosts_that_are_called_directly(http11, monkeypatch):
    """NO_PROXY exempts a host from HTTP_PROXY (here a proxy that refuses every connection,
    named without a scheme): the call goes straight to the endpoint."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("HTTP_PROXY", "127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m")
    (completion,) = _calls(endpoint, "x")
    assert completion.ok, completion.error
    (request,) = http11.requests
    assert request["path"] == "/v1/chat/completions"


def test_calls_go_through_the_environments_proxy(http11, monkeypatch):
    """HTTP_PROXY names a forward proxy (here the recording server): the chat call is sent to
    it with the endpoint's absolute URL, as the SDK's httpx did."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("HTTP_PROXY", http11.base_url.removesuffix("/v1"))
    endpoint = Endpoint(name="h", base_url="http://api.example.invalid/v1", model="m")
    (completion,) = _calls(endpoint, "x")
    assert completion.ok, completion.error
    (request,) = http11.requests
    assert request["path"] == "http://api.example.invalid/v1/chat/completions"


def test_the_call_path_does_not_import_the_openai_sdk():
    """Regression: building a client and its module no longer pull in ``openai`` (its import
    and its per-call request building cost more CPU than the rest of the engine)."""
    import subprocess
    import sys

    code = (
        "import sys, asyncio\n"
        "from app.clients import make_client\n"
        "from core.types import Endpoint\n"
        "async def main():\n"
        "    client = make_client(Endpoint(name='n', base_url='http://127.0.0.1:9/v1', model='m'))\n"
        "    await client.close()\n"
        "asyncio.run(main())\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_connection_test_and_the_pre_flight_do_not_import_the_openai_sdk():
    """Both list the models on the calls' own HTTP path: a run's start does not pay the SDK's
    import. Against a refused port, each still answers with its one-line message."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from app.clients import kind_of\n"
        "from app.clients.connection import test_connection\n"
        "from core.types import Endpoint\n"
        "endpoint = Endpoint(name='n', base_url='http://127.0.0.1:9/v1', model='m')\n"
        "print(kind_of(endpoint).preflight(endpoint))\n"
        "print(test_connection(endpoint).message)\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    problem, message, imported = out.stdout.strip().splitlines()
    assert problem.startswith("cannot reach http://127.0.0.1:9/v1 (m) — connection failed")
    assert message.startswith("listing models failed — connection failed")
    assert imported == "False"


# ------------------------------------------------------------ the call cache's lookups


def _cache_run(store, client, prompts, write_through=True):
    from app.engine.calls import CallCache
    from app.engine.progress import Progress

    endpoint = Endpoint(name="c", base_url="mock://", model="m", kind="mock")

    async def run():
        calls = CallCache(store, client, endpoint, Progress(0), write_through=write_through)
        results = await asyncio.gather(
            *(calls.complete([{"role": "user", "content": p}], 0) for p in prompts)
        )
        return calls, results

    return asyncio.run(run())


def test_a_runs_cache_lookups_are_one_query_not_one_per_call(store, monkeypatch):
    """Regression: every call looked its key up in SQLite on the event loop; the calls a run
    starts together are now looked up in one batched query (here 6 calls: 1 lookup)."""
    _cache_run(store, MockClient({}, default="first"), ["a", "b", "c"])  # cached now
    lookups: list[int] = []
    batch = store.cached_calls
    monkeypatch.setattr(
        store, "cached_calls", lambda keys: lookups.append(len(keys)) or batch(keys)
    )
    client = MockClient({}, default="second")
    calls, results = _cache_run(store, client, ["a", "b", "c", "d", "e", "e"])
    assert lookups == [5]  # "e" twice is one call
    assert [r.text for r in results] == ["first"] * 3 + ["second"] * 3
    assert [r.cached for r in results] == [True, True, True, False, False, False]
    assert client.prompts == ["d", "e"]
    assert calls.progress.cache_hits == 3 and calls.progress.calls_made == 2


def test_a_failed_cache_lookup_is_an_error_completion_not_a_crash(store, monkeypatch):
    def broken(keys):
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(store, "cached_calls", broken)
    _, results = _cache_run(store, MockClient({}, default="x"), ["a", "b"])
    assert [r.error for r in results] == ["RuntimeError: disk I/O error"] * 2


def test_cached_calls_finds_stored_answers_across_query_chunks(store):
    """More keys than one query's chunk (500): every stored answer is found, misses left out."""
    _cache_run(store, MockClient(), [f"p{i}" for i in range(3)])
    from app.engine.calls import CallCache
    from app.engine.progress import Progress

    endpoint = Endpoint(name="c", base_url="mock://", model="m", kind="mock")
    calls = CallCache(store, MockClient(), endpoint, Progress(0))
    stored = [
        call_key(
            endpoint.cache_base_url, endpoint.model, calls.params,
            [{"role": "user", "content": f"p{i}"}], 0,
        )
        for i in range(3)
    ]  # fmt: skip
    keys = [f"missing-{i}" for i in range(600)] + stored
    found = store.cached_calls(keys)
    assert set(found) == set(stored) and [found[k].text for k in stored] == ["p0", "p1", "p2"]
    assert all(c.cached for c in found.values())


def test_a_same_server_307_is_followed_and_other_redirects_are_named(http11):
    """The SDK followed redirects: a method-keeping 307/308 on the same server still is (the
    POST and its body go to the new path); a 301, or one to another server, is an error that
    names where it points."""
    http11.answers = [(307, {"Location": "/v2/chat/completions"}, b"")]
    endpoint = Endpoint(name="h", base_url=http11.base_url, model="m")
    (completion,) = _calls(endpoint, "x")
    assert completion.ok and [r["path"] for r in http11.requests] == [
        "/v1/chat/completions",
        "/v2/chat/completions",
    ]
    assert http11.requests[1]["body"]["messages"] == [{"role": "user", "content": "x"}]
    http11.answers = [
        (301, {"Location": "https://elsewhere.example/v1/chat/completions"}, b""),
        (308, {"Location": "https://elsewhere.example/v1/chat/completions"}, b""),
    ]
    moved, elsewhere = _calls(endpoint, "y", "z")
    assert moved.error == (
        "HTTP 301: the endpoint redirects to https://elsewhere.example/v1/chat/completions; "
        "use that as the base URL"
    )
    assert elsewhere.error.startswith("HTTP 308: the endpoint redirects to https://elsewhere")


def test_only_a_client_that_may_speak_tls_loads_the_ca_bundle(monkeypatch):
    """A plain-http endpoint never speaks TLS (redirects keep the scheme), so its client skips
    the CA bundle; an https endpoint, or any environment proxy, keeps verification on."""
    from app.clients.http_chat import needs_tls

    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert needs_tls("http://127.0.0.1:8080/v1") is False
    assert needs_tls("https://api.example/v1") is True
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")
    assert needs_tls("http://127.0.0.1:8080/v1") is True
