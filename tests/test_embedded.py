"""Embedded server lifecycle: children outlive the starting thread but never their process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.engine.model_server import (
    _LAUNCHER,
    EmbeddedServer,
    ServerState,
    _die_with_parent,
    embedded_endpoint,
    server_env,
)

ROOT = Path(__file__).resolve().parents[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # a zombie is dead for our purposes
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().split()[2] != "Z"


def test_child_started_from_a_short_lived_thread_survives_it():
    # Regression: PR_SET_PDEATHSIG follows the forking *thread*; Streamlit script threads end
    # after every run, which used to kill the embedded server (exit code -15) right away.
    box = {}

    def start():
        box["process"] = _LAUNCHER.popen(["sleep", "30"], preexec_fn=_die_with_parent)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    time.sleep(0.5)
    process = box["process"]
    try:
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def test_child_dies_with_its_process_even_on_sigkill(tmp_path):
    script = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from app.engine.model_server import _LAUNCHER, _die_with_parent\n"
        "p = _LAUNCHER.popen(['sleep', '60'], preexec_fn=_die_with_parent)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child_pid = int(owner.stdout.readline())
    assert _alive(child_pid)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 5
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child_pid)


def test_missing_model_file_is_a_failed_state_not_an_exception(tmp_path, monkeypatch):
    import app.engine.model_server as embedded

    monkeypatch.setattr(embedded, "gguf_path", lambda: tmp_path / "missing.gguf")
    server = EmbeddedServer(tmp_path)
    status = server.ensure_started()
    assert status.state is ServerState.FAILED and "model file missing" in status.message


def test_embedded_endpoint_cache_identity_is_stable_across_ports():
    assert embedded_endpoint(1234).cache_base_url == embedded_endpoint(5678).cache_base_url
    assert embedded_endpoint(1234).kind == "embedded"


def test_server_env_drops_variables_that_would_override_its_arguments():
    """Regression: `make run PORT=8650` exported PORT, llama.cpp's server settings read it ahead
    of `--port`, and the embedded model bound the dashboard's own port and died."""
    env = server_env({"PORT": "8650", "host": "0.0.0.0", "Model": "/x.gguf", "N_CTX": "9",
                      "CONFIG_FILE": "c.json", "PATH": "/usr/bin", "HOME": "/root"})  # fmt: skip
    assert env == {"PATH": "/usr/bin", "HOME": "/root", "HF_HUB_OFFLINE": "1"}
