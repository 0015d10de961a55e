"""What the real-browser tests share: the Chromium they drive and a dashboard server to drive."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_dashboard(
    env: dict[str, str], output: IO | int = subprocess.DEVNULL, script: Path | None = None
) -> Iterator[str]:
    """The dashboard in its own process on a free port (its URL), stopped afterwards: started
    as `make run` does (``python -m app.ui.serve``), or a plain ``streamlit run script``."""
    port = free_port()
    launcher = ["-m", "app.ui.serve"] if script is None else ["-m", "streamlit", "run", str(script)]
    process = subprocess.Popen(
        [sys.executable, *launcher,
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the dashboard did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


# What a page shows when a script run failed (the Python error text Streamlit renders).
TRACEBACK_MARKERS = ("Traceback (most recent call last)", "TypeError:", "KeyError:")


def screenshot(page, folder: Path, name: str) -> None:
    """A full-page screenshot ``folder/name.png`` (kept as a test artifact)."""
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def assert_no_traceback(page, where: str) -> None:
    """Fail when the page shows a Python error (``where`` names the step)."""
    body = page.inner_text("body")
    for marker in TRACEBACK_MARKERS:
        assert marker not in body, f"{where} shows {marker!r}"
