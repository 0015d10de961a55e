"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It is a real server because respx cannot intercept the openai client (its own HTTP stack).
Behaviour is configurable: how to answer, added latency, and injected faults, all counted so
tests can assert how many calls really reached the server. Faults come at random
(``fault_rate``), as a script for the next chat calls (``scripted_faults``) or on every call
(``always_fault``); the kinds are in ``FAULT_KINDS``. ``max_concurrent`` gives it a hard capacity:
a chat call beyond that many at once gets a 429. The server can also be stopped and started again
on the same port (a dead endpoint that comes back). Unit tests of the runner use the in-process
mock client (``app.clients.mock``) instead.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Responder = Callable[[list[dict[str, str]]], str]

# What a fault does to one chat call:
FAULT_KINDS = (
    "429",  # 429 with Retry-After: retry_after_s
    "429-bare",  # 429 without Retry-After
    "500",
    "hang",  # sleeps hang_s, then answers (past the client's timeout: a timeout)
    "reset",  # starts a 200 answer and resets the connection halfway through the body
    "malformed",  # 200 with a body that is not valid JSON
    "empty",  # 200 with "choices": []
    "401",
)


def echo_sentiment(messages: list[dict[str, str]]) -> str:
    """A tiny deterministic 'model': positive if the prompt's last line mentions good things."""
    text = messages[-1]["content"].lower()
    if "score" in text and "scale" in text:
        return "0.9" if "good" in text or "love" in text else "0.2"
    return "positive" if ("good" in text or "love" in text or "great" in text) else "negative"


@dataclass
class FakeBehaviour:
    responder: Responder = echo_sentiment
    latency_s: float = 0.0
    fault_rate: float = 0.0  # share of chat calls that fail (429 / 500 / hang), seeded
    retry_after_s: float = 0.0
    hang_s: float = 0.0  # how long a "timeout" fault sleeps
    fault_seed: int = 0
    non_openai: bool = False  # answer HTML instead of JSON
    models: tuple[str, ...] = ("fake-model",)
    scripted_faults: list[str] = field(default_factory=list)  # for the next chat calls, in order
    always_fault: str | None = None  # every chat call (and the models list for "401")
    lists_models: bool = True  # False: /v1/models answers 404, as on some servers
    # At most this many chat calls at once; beyond it, 429 with Retry-After: retry_after_s.
    max_concurrent: int | None = None


@dataclass
class FakeServerStats:
    chat_calls: int = 0
    faults: int = 0
    model_listings: int = 0
    over_capacity: int = 0  # chat calls refused by max_concurrent
    active: int = 0  # chat calls being answered now
    peak_active: int = 0
    prompts: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeOpenAIServer:
    def __init__(self, behaviour: FakeBehaviour | None = None, port: int = 0) -> None:
        self.behaviour = behaviour or FakeBehaviour()
        self.stats = FakeServerStats()
        self._rng = random.Random(self.behaviour.fault_seed)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _send(self, code: int, body: dict | str, headers: dict | None = None) -> None:
                payload = body if isinstance(body, str) else json.dumps(body)
                data = payload.encode()
                self.send_response(code)
                ctype = "text/html" if isinstance(body, str) else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _reset(self) -> None:
                """Promise a body, send half of it, and drop the connection with a reset."""
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "400")
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(b'{"id": "chatcmpl-test", "choices": [')
                    self.wfile.flush()
                    linger = struct.pack("ii", 1, 0)  # close with RST, not FIN
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.connection.close()
                self.close_connection = True

            def _fault(self, kind: str) -> bool:
                """Answer with fault ``kind``; False for "hang" (the call then goes on)."""
                behaviour = server.behaviour
                if kind == "429":
                    headers = {"Retry-After": f"{behaviour.retry_after_s:g}"}
                    self._send(429, {"error": {"message": "slow down"}}, headers)
                elif kind == "429-bare":
                    self._send(429, {"error": {"message": "slow down"}})
                elif kind == "500":
                    self._send(500, {"error": {"message": "boom"}})
                elif kind == "401":
                    self._send(401, {"error": {"message": "invalid api key"}})
                elif kind == "reset":
                    self._reset()
                elif kind == "malformed":
                    self._send_raw(200, b'{"id": "chatcmpl-test", "choices": [{"index": 0,')
                elif kind == "empty":
                    self._send(200, {"id": "chatcmpl-test", "object": "chat.completion",
                                     "created": 0, "model": "x", "choices": []})  # fmt: skip
                elif kind == "hang":
                    time.sleep(behaviour.hang_s)
                    return False
                else:
                    raise ValueError(f"unknown fault {kind!r}")
                return True

            def _send_raw(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def do_GET(self) -> None:
                behaviour = server.behaviour
                if behaviour.always_fault == "401":
                    self._fault("401")
                    return
                if behaviour.non_openai:
                    self._send(200, "<html><body>Hello, not an API</body></html>")
                    return
                if self.path.rstrip("/").endswith("/stats"):  # for benchmarks in another process
                    self._send(200, server.counts())
                    return
                if self.path.rstrip("/").endswith("/models") and behaviour.lists_models:
                    with server.stats.lock:
                        server.stats.model_listings += 1
                    data = [
                        {"id": m, "object": "model", "owned_by": "test"} for m in behaviour.models
                    ]
                    self._send(200, {"object": "list", "data": data})
                    return
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                behaviour = server.behaviour
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                if behaviour.non_openai:
                    self._send(200, "<html><body>Hello, not an API</body></html>")
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if request.get("model") not in behaviour.models:
                    self._send(
                        404, {"error": {"message": f"model {request.get('model')} not found"}}
                    )
                    return
                with server.stats.lock:
                    server.stats.chat_calls += 1
                    if behaviour.scripted_faults:
                        kind = behaviour.scripted_faults.pop(0)
                    elif behaviour.always_fault:
                        kind = behaviour.always_fault
                    else:
                        fault = server._rng.random() < behaviour.fault_rate
                        kind = server._rng.choice(["429", "500", "hang"]) if fault else None
                    if kind:
                        server.stats.faults += 1
                if kind and self._fault(kind):
                    return
                if not server._admit():
                    headers = {"Retry-After": f"{behaviour.retry_after_s:g}"}
                    self._send(429, {"error": {"message": "too many concurrent calls"}}, headers)
                    return
                try:
                    if behaviour.latency_s:
                        time.sleep(behaviour.latency_s)
                    messages = request.get("messages", [])
                    with server.stats.lock:
                        server.stats.prompts.append(messages[-1]["content"] if messages else "")
                finally:
                    server._leave()
                text = behaviour.responder(messages)
                self._send(
                    200,
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": request.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
                    },
                )

        class Server(ThreadingHTTPServer):
            # The stdlib default backlog (5) drops concurrent connects and stalls clients ~1 s.
            request_queue_size = 256

        class ReusableServer(Server):
            allow_reuse_address = True

        self._server_class = ReusableServer
        self.httpd = (ReusableServer if port else Server)(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self._handler = Handler
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _admit(self) -> bool:
        """Count a chat call as being answered, unless max_concurrent are already."""
        limit = self.behaviour.max_concurrent
        with self.stats.lock:
            if limit is not None and self.stats.active >= limit:
                self.stats.over_capacity += 1
                return False
            self.stats.active += 1
            self.stats.peak_active = max(self.stats.peak_active, self.stats.active)
            return True

    def _leave(self) -> None:
        # Before the answer is written: the client may send its next call as soon as it reads
        # this one, and that call must find the place free.
        with self.stats.lock:
            self.stats.active -= 1

    def counts(self) -> dict[str, int]:
        """The call counters (not the prompts), e.g. for ``GET /v1/stats``."""
        with self.stats.lock:
            return {
                "chat_calls": self.stats.chat_calls,
                "faults": self.stats.faults,
                "over_capacity": self.stats.over_capacity,
                "peak_active": self.stats.peak_active,
            }

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Stop serving and close the port: connections are refused until ``start``."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def start(self) -> None:
        """Serve again on the same port (after ``stop``)."""
        self.httpd = self._server_class(("127.0.0.1", self.port), self._handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    """Serve in its own process (benchmarks): prints the base URL, then serves until killed."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--always-fault", choices=FAULT_KINDS)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--max-concurrent", type=int, help="429 beyond this many calls at once")
    args = parser.parse_args()
    behaviour = FakeBehaviour(
        latency_s=args.latency,
        fault_rate=args.fault_rate,
        always_fault=args.always_fault,
        max_concurrent=args.max_concurrent,
    )
    with FakeOpenAIServer(behaviour, port=args.port) as srv:
        print(srv.base_url, flush=True)
        srv.thread.join()


if __name__ == "__main__":
    main()
