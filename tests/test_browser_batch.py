"""Batch mode in a real browser (Debian Chromium + Playwright): on the Probe page, export the
form's run as a batch, download the request file, answer it as a batch engine would (the fake
server's answers, in the OpenAI Batch output format), upload the results and see the run done.

Nothing is sent to a model: the saved endpoint listens nowhere. Screenshots are kept under
``test-artifacts/batch/`` (git-ignored).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from core.types import Endpoint
from storage import Store
from tests.browser_support import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    ROOT,
    assert_no_traceback,
    free_port,
    screenshot,
    serve_dashboard,
)
from tests.fake_openai import batch_output_line, chat_body, echo_sentiment

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed"),
]
ARTIFACTS = ROOT / "test-artifacts" / "batch"


@pytest.fixture
def dashboard(tmp_path):
    """The app on a fresh database holding one endpoint that nothing listens on."""
    db = tmp_path / "batch.db"
    store = Store(db)
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    store.save_endpoint(Endpoint(name="batch-engine", base_url=base_url, model="fake-model"))
    store.close()
    env = {**os.environ, "MORPHSCOPE_DB": str(db), "MORPHSCOPE_AUTOSTART": "0"}
    with (tmp_path / "streamlit.log").open("w") as log, serve_dashboard(env, log) as url:
        yield url, db


def answer(requests: Path, results: Path) -> int:
    """Answer every request line with the fake server's answer (OpenAI Batch output lines)."""
    lines = requests.read_text(encoding="utf-8").splitlines()
    with results.open("w", encoding="utf-8") as out:
        for line in lines:
            request = json.loads(line)
            text = echo_sentiment(request["body"]["messages"])
            out.write(json.dumps(batch_output_line(request["custom_id"], chat_body(text))) + "\n")
    return len(lines)


def _shot(page, name: str) -> None:
    screenshot(page, ARTIFACTS, name)


def test_export_download_answer_upload_and_the_run_is_done(dashboard, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url, db = dashboard
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = browser.new_context(
            viewport={"width": 1280, "height": 900}, accept_downloads=True
        )
        page = context.new_page()
        page.goto(f"{url}/?probe_endpoint=batch-engine")
        expect(page.get_by_role("heading", name="Probe")).to_be_visible(timeout=60_000)
        page.get_by_text("Batch mode: export as batch, import batch results").click()
        page.get_by_role("button", name="Export as batch").click()
        download_button = page.get_by_role("button", name=re.compile(r"^Download batch-"))
        expect(download_button).to_be_visible(timeout=120_000)
        assert_no_traceback(page, "Probe after the export")
        _shot(page, "01-exported")
        with page.expect_download() as download_info:
            download_button.click()
        requests = tmp_path / download_info.value.suggested_filename
        download_info.value.save_as(requests)
        (run,) = Store(db).runs()
        assert run.status == "awaiting_batch"
        assert run.id in requests.name

        results = tmp_path / "results.jsonl"
        written = answer(requests, results)
        assert written > 0
        page.get_by_role("tab", name="Import batch results").click()
        page.locator("input[type=file]").set_input_files(str(results))
        expect(page.get_by_text("results.jsonl")).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Import batch results").click()
        expect(page.get_by_text(f"Run {run.id} is done.")).to_be_visible(timeout=120_000)
        expect(page.get_by_text(f"Batch run {run.id}")).to_be_visible()
        assert_no_traceback(page, "Probe after the import")
        _shot(page, "02-imported")
        browser.close()
    (run,) = Store(db).runs()
    assert run.status == "done" and run.n_cases == run.n_planned > 0
