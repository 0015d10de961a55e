"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It is a real server because respx cannot intercept the openai client (its own HTTP stack).
Behaviour is configurable: how to answer, added latency, and injected faults, all counted so
tests can assert how many calls really reached the server. Faults come at random
(``fault_rate``), as a script for the next chat calls (``scripted_faults``) or on every call
(``always_fault``); the kinds are in ``FAULT_KINDS``. ``max_concurrent`` gives it a hard capacity:
a chat call beyond that many at once gets a 429. The server can also be stopped and started again
on the same port (a dead endpoint that comes back). Unit tests of the runner use the in-process
mock client (``app.clients.mock``) instead.

It also answers OpenAI's Files + Batches API from memory (see ``FakeBatchStore``): upload a
request file, create a batch, and each poll of the batch moves it one step on, from
``validating`` through ``in_progress`` (with ``request_counts``) to ``completed`` with an output
file (and an error file when some lines failed), so a test sees a whole batch in a few polls.
Every line is answered exactly as ``/v1/chat/completions`` would answer it.
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import itertools
import json
import random
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

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


def distinct_reasoning(messages: list[dict[str, str]]) -> str:
    """A worked answer in four numbered steps and a final line, distinct for each prompt (its
    numbers come from the prompt's hash): the free-text load, where every answer is embedded."""
    import hashlib

    seed = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:12], 16)
    a, b, c = 2 + seed % 97, 2 + (seed >> 8) % 89, 2 + (seed >> 16) % 83
    return (
        f"Step 1: Read the problem: there are {a} boxes with {b} apples in each box.\n"
        f"Step 2: Multiply to count the apples: {a} × {b} = {a * b} apples in all.\n"
        f"Step 3: Take away the {c} apples that were sold in the morning: {a * b - c}.\n"
        f"Step 4: Check the result by adding back: {a * b - c} + {c} = {a * b}, as expected.\n"
        f"Final answer: {a * b - c}"
    )


RESPONDERS = {"sentiment": echo_sentiment, "reasoning": distinct_reasoning}


def batch_output_line(custom_id: str, body: dict, status: int = 200) -> dict:
    """One line of an OpenAI Batch output (or error) file: the request's answer."""
    return {
        "id": f"batch_req_{custom_id}",
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": f"req_{custom_id}", "body": body},
        "error": None,
    }


def batch_error_line(custom_id: str, code: str, message: str) -> dict:
    """One line of an OpenAI Batch error file for a request that got no response."""
    return {
        "id": f"batch_req_{custom_id}",
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def chat_body(text: str, model: str = "fake-model") -> dict:
    """A minimal chat.completion body answering ``text``."""
    return {
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


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
    # The Files + Batches API. batch_api=False: those paths answer batch_api_missing_status, as
    # on servers that only serve chat (llama.cpp answers 404; some proxies 405).
    batch_api: bool = True
    batch_api_missing_status: int = 404
    batch_steps: int = 2  # polls a batch spends in_progress (counts growing) before finalizing
    batch_end: str = "completed"  # or "expired" (half done) or "failed" (at the first poll)
    batch_failing_ids: frozenset[str] = frozenset()  # custom_ids answered with a 500 line
    batch_faults: list[str] = field(default_factory=list)  # for the next Files/Batches calls


@dataclass
class FakeServerStats:
    chat_calls: int = 0
    faults: int = 0
    model_listings: int = 0
    over_capacity: int = 0  # chat calls refused by max_concurrent
    active: int = 0  # chat calls being answered now
    peak_active: int = 0
    prompts: list[str] = field(default_factory=list)
    batch_calls: int = 0  # requests to the Files + Batches API, faults included
    batch_polls: int = 0  # GET /v1/batches/{id} that reached a batch
    lock: threading.Lock = field(default_factory=threading.Lock)


# How often a serving loop checks whether it was asked to stop (seconds).
SHUTDOWN_POLL_S = 0.02

BATCH_ENDPOINT = "/v1/chat/completions"
TERMINAL_BATCH_STATES = ("completed", "failed", "expired", "cancelled")
# files, files/{id}, files/{id}/content, batches, batches/{id}, batches/{id}/cancel
_BATCH_PATH = re.compile(r"/(files|batches)(?:/([^/]+))?(?:/(content|cancel))?$")

Answer = Callable[[dict], tuple[int, dict]]


def chat_completion(model: str | None, text: str) -> dict:
    """The body of a successful ``/v1/chat/completions`` answer with ``text``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }


class BatchApiError(Exception):
    """A Files/Batches request the server refuses: HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class _FakeBatch:
    obj: dict  # the batch object as the API shows it
    requests: list[dict]  # the input lines, parsed
    validation_errors: list[dict]
    polls: int = 0
    cancel_requested: bool = False


class FakeBatchStore:
    """Files and batches held in memory; each retrieve of a batch moves it one step on.

    Object shapes follow OpenAI's File and Batch objects (``id``, ``object``, ``status``,
    ``request_counts {total, completed, failed}``, ``output_file_id``, ``error_file_id``,
    ``errors {object, data: [{code, line, message, param}]}``) and its output line format
    (``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``).
    """

    def __init__(self, behaviour: FakeBehaviour, answer: Answer) -> None:
        self.behaviour = behaviour
        self._answer = answer
        self._files: dict[str, tuple[dict, bytes]] = {}
        self._batches: dict[str, _FakeBatch] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # ---- files
    def upload(self, filename: str, purpose: str, content: bytes) -> dict:
        if purpose not in ("batch", "batch_output"):
            raise BatchApiError(400, f"purpose {purpose!r} is not supported here")
        with self._lock:
            return self._add_file(filename, purpose, content)

    def _add_file(self, filename: str, purpose: str, content: bytes) -> dict:
        file_id = f"file-fake{next(self._ids)}"
        obj = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self._files[file_id] = (obj, content)
        return obj

    def file(self, file_id: str) -> tuple[dict, bytes]:
        with self._lock:
            if file_id not in self._files:
                raise BatchApiError(404, f"No such File object: {file_id}")
            return self._files[file_id]

    # ---- batches
    def create(self, request: dict) -> dict:
        file_id = request.get("input_file_id")
        endpoint = request.get("endpoint")
        if request.get("completion_window") != "24h":
            raise BatchApiError(400, "completion_window must be '24h'")
        if endpoint != BATCH_ENDPOINT:
            raise BatchApiError(400, f"endpoint {endpoint!r} is not supported here")
        with self._lock:
            if file_id not in self._files:
                raise BatchApiError(404, f"No such File object: {file_id}")
            file_obj, content = self._files[file_id]
            if file_obj["purpose"] != "batch":
                raise BatchApiError(400, f"file {file_id} was not uploaded with purpose 'batch'")
            requests, errors = _parse_batch_input(content, endpoint)
            batch_id = f"batch_fake{next(self._ids)}"
            obj = {
                "id": batch_id,
                "object": "batch",
                "endpoint": endpoint,
                "errors": None,
                "input_file_id": file_id,
                "completion_window": "24h",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "expires_at": int(time.time()) + 24 * 3600,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": request.get("metadata"),
            }
            self._batches[batch_id] = _FakeBatch(obj, requests, errors)
            return dict(obj)

    def retrieve(self, batch_id: str) -> dict:
        with self._lock:
            batch = self._batch(batch_id)
            if batch.obj["status"] not in TERMINAL_BATCH_STATES:
                batch.polls += 1
                self._advance(batch)
            return dict(batch.obj)

    def cancel(self, batch_id: str) -> dict:
        with self._lock:
            batch = self._batch(batch_id)
            status = batch.obj["status"]
            if status in TERMINAL_BATCH_STATES:
                raise BatchApiError(409, f"Cannot cancel a batch with status '{status}'.")
            batch.cancel_requested = True
            batch.obj.update(status="cancelling", cancelling_at=int(time.time()))
            return dict(batch.obj)

    def list_batches(self) -> dict:
        with self._lock:
            data = [dict(b.obj) for b in self._batches.values()]
        return {"object": "list", "data": data, "has_more": False}

    def _batch(self, batch_id: str) -> _FakeBatch:
        if batch_id not in self._batches:
            raise BatchApiError(404, f"No such Batch object: {batch_id}")
        return self._batches[batch_id]

    def _advance(self, batch: _FakeBatch) -> None:
        """One poll's worth of progress: validating → in_progress … → finalizing → the end."""
        total = len(batch.requests)
        steps = max(1, self.behaviour.batch_steps)
        now = int(time.time())
        if batch.cancel_requested:
            done = total * min(batch.polls - 1, steps) // (steps + 1)  # as far as it had got
            self._finish(batch, "cancelled", done=done)
        elif batch.validation_errors or (batch.polls == 1 and self.behaviour.batch_end == "failed"):
            errors = batch.validation_errors or [
                {"code": "server_error", "line": None, "message": "the batch failed", "param": None}
            ]
            batch.obj.update(
                status="failed", failed_at=now, errors={"object": "list", "data": errors}
            )
        elif batch.polls <= steps:
            done = total * batch.polls // (steps + 1)
            batch.obj.update(
                status="in_progress", in_progress_at=batch.obj.get("in_progress_at") or now
            )
            batch.obj["request_counts"] = self._counts(batch.requests[:done], total)
        elif self.behaviour.batch_end == "expired":
            self._finish(batch, "expired", done=total // 2)
        elif batch.polls == steps + 1:
            batch.obj.update(status="finalizing", finalizing_at=now)
            batch.obj["request_counts"] = self._counts(batch.requests, total)
        else:
            self._finish(batch, "completed", done=total)

    def _counts(self, answered: list[dict], total: int) -> dict:
        failed = sum(1 for line in answered if self._result_line(line)["response"]["status_code"] != 200)  # fmt: skip
        return {"total": total, "completed": len(answered) - failed, "failed": failed}

    def _result_line(self, line: dict) -> dict:
        """The output line for one request, as the endpoint answers it (or a scripted 500)."""
        custom_id = line["custom_id"]
        if custom_id in self.behaviour.batch_failing_ids:
            status, body = 500, {"error": {"message": "boom", "type": "server_error"}}
        else:
            status, body = self._answer(line["body"])
        return batch_output_line(custom_id, body, status)

    def _finish(self, batch: _FakeBatch, status: str, done: int) -> None:
        """End the batch: lines answered go to the output file (200) or the error file (other
        statuses); lines never run (expired, cancelled) go to the error file with a code."""
        output: list[dict] = []
        failed: list[dict] = []
        for line in batch.requests[:done]:
            result = self._result_line(line)
            (output if result["response"]["status_code"] == 200 else failed).append(result)
        never_run = f"batch_{status}"  # batch_expired / batch_cancelled, as OpenAI names them
        for line in batch.requests[done:]:
            message = f"This request was not run: the batch was {status}."
            failed.append(batch_error_line(line["custom_id"], never_run, message))
        batch_id = batch.obj["id"]
        if output:
            batch.obj["output_file_id"] = self._add_file(
                f"{batch_id}_output.jsonl", "batch_output", _jsonl(output)
            )["id"]
        if failed:
            batch.obj["error_file_id"] = self._add_file(
                f"{batch_id}_error.jsonl", "batch_output", _jsonl(failed)
            )["id"]
        batch.obj.update(status=status, **{f"{status}_at": int(time.time())})
        batch.obj["request_counts"] = {
            "total": len(batch.requests),
            "completed": len(output),
            "failed": len(failed),
        }


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _parse_batch_input(content: bytes, endpoint: str) -> tuple[list[dict], list[dict]]:
    """The request lines of an input file, and the validation errors that fail the batch."""
    requests: list[dict] = []
    errors: list[dict] = []
    seen: set[str] = set()

    def error(code: str, line: int, message: str) -> None:
        errors.append({"code": code, "line": line, "message": message, "param": None})

    for number, raw in enumerate(content.decode("utf-8", "replace").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            error("invalid_json_line", number, f"line {number} is not valid JSON")
            continue
        if not isinstance(line, dict) or not line.get("custom_id") or "body" not in line:
            error("missing_required_parameter", number, "custom_id and body are required")
        elif line.get("url") != endpoint or line.get("method") != "POST":
            error("mismatched_endpoint", number, f"each line must POST to {endpoint}")
        elif line["custom_id"] in seen:
            error("duplicate_custom_id", number, f"custom_id {line['custom_id']!r} is repeated")
        else:
            seen.add(line["custom_id"])
            requests.append(line)
    if not requests and not errors:
        error("empty_file", 0, "the input file has no requests")
    return requests, errors


def _multipart_fields(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name → (filename, bytes)."""
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body, policy=email.policy.HTTP
    )
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


class FakeOpenAIServer:
    def __init__(self, behaviour: FakeBehaviour | None = None, port: int = 0) -> None:
        self.behaviour = behaviour or FakeBehaviour()
        self.stats = FakeServerStats()
        self._rng = random.Random(self.behaviour.fault_seed)
        self.batches = FakeBatchStore(self.behaviour, self.answer)
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

            def _batch_api(self, method: str, raw: bytes) -> bool:
                """Answer a Files/Batches request; False when the path is not one of them."""
                match = _BATCH_PATH.search(urlsplit(self.path).path.rstrip("/"))
                if not match:
                    return False
                behaviour = server.behaviour
                with server.stats.lock:
                    server.stats.batch_calls += 1
                    fault = behaviour.batch_faults.pop(0) if behaviour.batch_faults else None
                if fault and self._fault(fault):
                    return True
                if not behaviour.batch_api:
                    status = behaviour.batch_api_missing_status
                    self._send(status, {"error": {"message": "not found" if status == 404 else "method not allowed"}})  # fmt: skip
                    return True
                try:
                    self._batch_request(method, raw, *match.groups())
                except BatchApiError as exc:
                    self._send(exc.status, {"error": {"message": exc.message, "type": "invalid_request_error"}})  # fmt: skip
                return True

            def _batch_request(
                self, method: str, raw: bytes, kind: str, item: str | None, action: str | None
            ) -> None:
                batches = server.batches
                if kind == "files" and method == "POST" and item is None:
                    fields = _multipart_fields(self.headers.get("Content-Type", ""), raw)
                    filename, content = fields.get("file", (None, b""))
                    purpose = fields.get("purpose", (None, b""))[1].decode()
                    self._send(200, batches.upload(filename or "upload.jsonl", purpose, content))
                elif kind == "files" and method == "GET" and item and action == "content":
                    self._send_raw(200, batches.file(item)[1], "application/octet-stream")
                elif kind == "files" and method == "GET" and item and action is None:
                    self._send(200, batches.file(item)[0])
                elif kind == "batches" and method == "POST" and item is None:
                    self._send(200, batches.create(json.loads(raw or b"{}")))
                elif kind == "batches" and method == "GET" and item is None:
                    self._send(200, batches.list_batches())
                elif kind == "batches" and method == "GET" and item and action is None:
                    with server.stats.lock:
                        server.stats.batch_polls += 1
                    self._send(200, batches.retrieve(item))
                elif kind == "batches" and method == "POST" and item and action == "cancel":
                    self._send(200, batches.cancel(item))
                else:
                    raise BatchApiError(404, "not found")

            def _send_raw(
                self, code: int, data: bytes, content_type: str = "application/json"
            ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
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
                if self._batch_api("GET", b""):
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
                raw = self.rfile.read(length)
                if behaviour.non_openai:
                    self._send(200, "<html><body>Hello, not an API</body></html>")
                    return
                if self._batch_api("POST", raw):  # before parsing: an upload is multipart
                    return
                request = json.loads(raw or b"{}")
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
                self._send(200, chat_completion(request.get("model"), text))

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
        self.thread = self._serving_thread()

    def answer(self, request: dict) -> tuple[int, dict]:
        """What ``/v1/chat/completions`` answers to ``request`` (status, body), without faults or
        latency: how a batch's lines are answered."""
        model = request.get("model")
        if model not in self.behaviour.models:
            return 404, {"error": {"message": f"model {model} not found"}}
        return 200, chat_completion(model, self.behaviour.responder(request.get("messages", [])))

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
        self.thread = self._serving_thread()
        self.thread.start()

    def _serving_thread(self) -> threading.Thread:
        # A short poll: ``stop`` waits for the loop's next poll, up to 0.5 s by default, which
        # every test using this server paid on its way out.
        return threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True
        )

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class FakeServerProcess:
    """The fake server in a process of its own, as a real server would be (no shared GIL):
    ``with FakeServerProcess("--latency", "0.1") as server: server.base_url`` (the arguments of
    ``python -m tests.fake_openai``)."""

    def __init__(self, *args: str) -> None:
        self.args = args

    def __enter__(self) -> FakeServerProcess:
        import subprocess
        import sys
        from pathlib import Path

        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_openai", *self.args],
            cwd=Path(__file__).resolve().parents[1],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.process.stdout.readline().strip()
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def main() -> None:
    """Serve in its own process (benchmarks): prints the base URL, then serves until killed."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--responder", choices=sorted(RESPONDERS), default="sentiment")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--always-fault", choices=FAULT_KINDS)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--max-concurrent", type=int, help="429 beyond this many calls at once")
    parser.add_argument("--no-batch-api", action="store_true", help="404 on /v1/files, /v1/batches")
    parser.add_argument(
        "--batch-steps", type=int, default=2, help="polls a batch stays in_progress"
    )
    args = parser.parse_args()
    behaviour = FakeBehaviour(
        responder=RESPONDERS[args.responder],
        latency_s=args.latency,
        fault_rate=args.fault_rate,
        always_fault=args.always_fault,
        max_concurrent=args.max_concurrent,
        batch_api=not args.no_batch_api,
        batch_steps=args.batch_steps,
    )
    with FakeOpenAIServer(behaviour, port=args.port) as srv:
        print(srv.base_url, flush=True)
        srv.thread.join()


if __name__ == "__main__":
    main()
