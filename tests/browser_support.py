"""What the real-browser tests share: the Chromium they drive and a dashboard server to drive."""

from __future__ import annotations

import re
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


# ---------------------------------------------------------------- what a stakeholder sees

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def raw_words() -> frozenset[str]:
    """Internal names a page must never show a reader: every snake_case key of the metric
    catalogue (``violation_rate``, ``relation_id``, …), the Triage label values
    (``fp_oracle``, …) and the counts' column names."""
    from app.analysis.catalogue.definitions import METRICS
    from core.types import Label

    keys = {key for key in METRICS if "_" in key}
    keys |= {label.value for label in Label if "_" in label.value}
    return frozenset(keys | {"n_fail", "n_pass", "n_skip", "n_error", "abs_delta"})


# A value left as Python's None in a table cell, after a label or alone on a line ("None of
# the …" in a sentence is a word, not a missing value).
_NONE_VALUE = re.compile(r"(?:^|[\t:·=(|])[ ]*None[ ]*(?:$|[\t,)·|])", re.M)


def raw_text_found(text: str) -> list[str]:
    """The raw keys and ``None`` values in a page's visible ``text``."""
    found = [word for word in sorted(raw_words()) if re.search(rf"\b{word}\b", text)]
    if _NONE_VALUE.search(text):
        found.append("None")
    return found


# Elements that stick out past the viewport's right edge with no ancestor that scrolls or
# clips them inside it (the page itself would be wider than the screen, or cut by it).
_OVERFLOW_PROBE = """
() => {
  const limit = window.innerWidth + 1;
  const contained = el => {
    for (let up = el.parentElement; up; up = up.parentElement) {
      const overflow = getComputedStyle(up).overflowX;
      if (['auto', 'scroll', 'hidden', 'clip'].includes(overflow)
          && up.getBoundingClientRect().right <= limit) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0 || box.right <= limit) continue;
    if (getComputedStyle(el).visibility === 'hidden' || contained(el)) continue;
    out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`
             + `[${el.getAttribute('data-testid') || ''}] right=${Math.round(box.right)}`);
  }
  const page = document.documentElement.scrollWidth;
  if (page > limit) out.push(`document scrollWidth=${page}`);
  return out;
}
"""


def overflowing(page) -> list[str]:
    """What sticks out past the viewport's right edge without a scroll container (empty when
    the page fits its width, or everything wider scrolls inside a box of its own)."""
    return page.evaluate(_OVERFLOW_PROBE)


# Each printed text of a heatmap: its ink (computed fill) and the point just left of it,
# inside its cell, where the cell's own colour shows (no glyph there).
_TEXT_PROBE = """
selector => [...document.querySelectorAll(selector)].map(t => {
  const box = t.getBoundingClientRect();
  return {text: t.textContent, fill: getComputedStyle(t).fill,
          x: Math.round(box.left - 3), y: Math.round(box.top + box.height / 2),
          w: box.width};
}).filter(t => t.w > 0 && t.text.trim())
"""


def low_contrast_texts(page, selector: str, least: float) -> list[str]:
    """The heatmap texts (``selector``) in view whose WCAG contrast against the colour around
    them, read from a screenshot, is below ``least``; and how many were checked."""
    import io

    from PIL import Image

    from app.analysis.heatmap_colours import contrast_ratio, parse_colour

    texts = page.evaluate(_TEXT_PROBE, selector)
    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    low, checked = [], 0
    for text in texts:
        if not (0 <= text["x"] < shot.width and 0 <= text["y"] < shot.height):
            continue  # scrolled out of view: read when it is scrolled in
        behind = shot.getpixel((text["x"], text["y"]))
        ratio = contrast_ratio(parse_colour(text["fill"]), behind)
        checked += 1
        if ratio < least:
            low.append(f"{text['text']!r}: {text['fill']} on rgb{behind} = {ratio:.2f}:1")
    assert checked, f"no heatmap text in view for {selector!r}"
    return low
