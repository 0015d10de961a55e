"""The demo stays reachable: started from Analysis on a database that already has runs, it runs in
a background thread (module-level registry), and Stop ends it. Regression for "Run the demo" only
appearing while the database had zero runs."""

from __future__ import annotations

import threading

import pytest
from streamlit.testing.v1 import AppTest

from app.engine.demo import DEMO_JOBS, DemoPart, DemoState
from core.types import Endpoint
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import APP, open_page
from tests.test_analysis_queries import seed_dataset

PAGE = "pages/analysis.py"
MOCK = Endpoint(name="demo-mock", base_url="http://127.0.0.1:9/v1", model="mock", kind="mock")
SMALL_PARTS = (DemoPart("Sentiment labels", "sentiment", "sentiment", 3, ("si.identity",)),)


@pytest.fixture(autouse=True)
def _fast_demo(monkeypatch):
    """The in-process mock model and the bag-of-words embedder instead of SmolLM2 and MiniLM."""
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)
    monkeypatch.setattr("app.engine.demo.default_embedder", BagOfWordsEmbedder)
    monkeypatch.setattr("app.engine.demo.embedded_endpoint", lambda: MOCK)
    monkeypatch.setattr("app.engine.demo.DEMO_PARTS", SMALL_PARTS)
    yield
    for job in list(DEMO_JOBS._jobs.values()):
        job.stop()
        job.join(30)


def _seeded(path) -> int:
    store = Store(path)
    seed_dataset(store)
    n_runs = len(store.runs())
    store.close()
    return n_runs


def _button(at, key):
    buttons = list(at.button) + list(at.sidebar.button)
    matches = [b for b in buttons if b.key == key]
    assert matches, f"no button {key!r}; buttons: {[b.key for b in buttons]}"
    return matches[0]


def test_demo_starts_from_analysis_on_a_db_with_runs(app_db):
    runs_before = _seeded(app_db)
    at = open_page(PAGE)
    assert not at.exception
    _button(at, "analysis_demo").click().run()
    assert not at.exception
    status = DEMO_JOBS.wait(str(app_db), timeout_s=60)
    assert status.state is DemoState.FINISHED, status.message
    store = Store(app_db)
    runs = store.runs()
    store.close()
    assert len(runs) == runs_before + 1
    assert {r.task_id for r in runs} >= {"sentiment"}
    at.run()
    assert not at.exception
    assert any("Demo finished" in s.value and "temperature 0.7" in s.value for s in at.success)
    # issue 28 item 8: no "Open Analysis" link on Analysis itself
    assert [link.proto.label for link in at.get("page_link")] == []


def _first_load() -> AppTest:
    # AppTest keeps the sidebar's elements only for the entrypoint's first page (a switch_page
    # run reports an empty sidebar block), so the sidebar is checked on the first load.
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    return at


def test_the_sidebar_offers_the_demo_and_shows_its_progress(app_db):
    _seeded(app_db)
    at = _first_load()
    assert not at.exception
    assert _button(at, "sb_demo")
    model_ready = threading.Event()
    DEMO_JOBS.start(str(app_db), endpoint_source=lambda: model_ready.wait(30) and MOCK)
    at = _first_load()
    assert not at.exception
    assert _button(at, "sb_demo_stop")
    assert any("Demo" in m.value for m in at.sidebar.markdown)
    model_ready.set()
    assert DEMO_JOBS.wait(str(app_db), timeout_s=60).state is DemoState.FINISHED
    # The outcome is said once: "Demo finished: …", never "Demo: Demo finished: …".
    captions = [c.value for c in _first_load().sidebar.caption]
    assert any(c.startswith("Demo finished: ") for c in captions), captions


def test_stop_ends_the_demo_and_its_status_says_so(app_db):
    model_ready = threading.Event()

    def slow_model() -> Endpoint:
        model_ready.wait(30)  # the embedded model still starting
        return MOCK

    job = DEMO_JOBS.start(str(app_db), endpoint_source=slow_model, parts=SMALL_PARTS)
    assert job.status().active
    at = open_page(PAGE)
    assert not at.exception
    _button(at, "analysis_demo_stop").click().run()
    assert not at.exception
    model_ready.set()
    status = DEMO_JOBS.wait(str(app_db), timeout_s=30)
    assert status.state is DemoState.STOPPED
    assert status.runs == 0
    at.run()
    assert any(i.value.startswith("Demo stopped: 0 runs, 0 cases kept") for i in at.info)


def test_progress_is_overall_across_the_parts(app_db):
    """The bar covers the whole demo: it never goes back when the next part starts, and ends at
    100 % with one run per part."""
    parts = (
        DemoPart("Sentiment labels", "sentiment", "sentiment", 2, ("si.identity",)),
        DemoPart("Sentiment again", "sentiment", "sentiment", 2, ("si.identity",), repeats=1),
    )
    seen: list[tuple[float, str]] = []
    job = DEMO_JOBS.start(str(app_db), parts=parts)
    while job.status().active:
        status = job.status()
        seen.append((status.fraction, status.message))
        threading.Event().wait(0.01)
    final = job.status()
    assert final.state is DemoState.FINISHED and final.fraction == 1.0
    assert final.runs == 2
    fractions = [fraction for fraction, _ in seen]
    assert fractions == sorted(fractions)
