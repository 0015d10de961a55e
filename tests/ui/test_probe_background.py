"""Probe runs live beyond a page: they work in a background thread, a Cancel stops the sending
between cases and reads "cancelled" at once, and a cancelled run can be resumed.

Before, the run worked inside the script thread: a click could only stop it at its next
progress update, the run went on sending for tens of seconds, and the previous run's results
stayed on the page."""

from __future__ import annotations

import functools

from streamlit.testing.v1 import AppTest

from app.engine import background
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

SAMPLES = [Sample({"text": f"Item {i} was good."}) for i in range(40)]


def _fast_runner(store: Store) -> Runner:
    return Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))


def _slow_config(server: FakeOpenAIServer) -> RunConfig:
    # One call at a time, each 0.1 s: 40 cases take seconds, so a cancel lands mid-run.
    endpoint = Endpoint(name="slow", base_url=server.base_url, model="fake-model", concurrency=1)
    return RunConfig(endpoint, "sentiment", ("si.identity",))


def test_cancel_stops_a_background_run_between_cases_and_keeps_finished_ones(db_path) -> None:
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.1)) as server:
        job = background.start_run(
            str(db_path), _slow_config(server), BUILTIN_TASKS["sentiment"], SAMPLES, _fast_runner
        )
        assert background.active_job(str(db_path)) is job
        while job.progress.done < 2 and job.running:
            job.wait(0.05)
        job.request_cancel()
        assert job.wait(30)
        calls_at_end = server.stats.chat_calls
    assert job.summary is not None and job.summary.status == "cancelled"
    assert job.error == ""
    # Stopped well before the 80 calls of the whole run; what finished is stored.
    assert calls_at_end < 40
    store = Store(db_path)
    assert store.run(job.run_id).status == "cancelled"
    assert 0 < len(store.cases_for([job.run_id])) < len(SAMPLES)
    assert background.active_job(str(db_path)) is None


def test_a_failing_run_reports_one_line_not_a_traceback(db_path) -> None:
    def broken_runner(store: Store) -> Runner:
        raise RuntimeError("no embedder\nsecond line")

    job = background.start_run(
        str(db_path),
        RunConfig(Endpoint(name="x", base_url="http://127.0.0.1:9/v1", model="m"), "sentiment",
                  ("si.identity",)),
        BUILTIN_TASKS["sentiment"], SAMPLES[:1], broken_runner,
    )  # fmt: skip
    assert job.wait(30)
    assert job.summary is None
    assert job.error == "RuntimeError: no embedder second line"


def _watch_panel():
    from app.ui.data import get_store
    from app.ui.probe_results import render_latest_results
    from app.ui.probe_run import render_active_run, render_interrupted_notice

    store = get_store()
    render_active_run(store, key="probe")
    render_interrupted_notice(store, key="probe")
    render_latest_results(store, key="probe")


def test_the_page_reads_cancelled_at_once_and_offers_resume(db_path, monkeypatch) -> None:
    from app.ui import probe_run

    monkeypatch.setattr(
        probe_run, "make_runner", functools.partial(
            probe_run.make_runner, embedder_factory=BagOfWordsEmbedder
        ),
    )  # fmt: skip
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.1)) as server:
        job = background.start_run(
            str(db_path), _slow_config(server), BUILTIN_TASKS["sentiment"], SAMPLES, _fast_runner
        )
        while job.progress.done < 1 and job.running:
            job.wait(0.05)
        job.request_cancel()  # what the Cancel button's click does before the rerun
        # The session that started the run (and whose Cancel was clicked) watches it end.
        at = AppTest.from_function(_watch_panel)
        at.session_state["probe_job"] = job.id
        at.session_state["probe_job_owner"] = job.id
        at.run(timeout=60)
        assert not at.exception, at.exception
        warnings = [w.value for w in at.warning]
        assert warnings[0].startswith(f"Run `{job.run_id}` cancelled")
        assert any(f"Run `{job.run_id}` was cancelled after" in w for w in warnings)
        assert "Cancel run" not in [b.label for b in at.button]  # nothing left to cancel
        assert background.get_job(job.id) is None  # collected: the registry forgets it
        # Resume finishes the same run; its results are shown.
        at.button(key=f"probe_resume_{job.run_id}").click().run(timeout=120)
        assert not at.exception, at.exception
    store = Store(db_path)
    assert store.run(job.run_id).status == "done"
    assert len(store.cases_for([job.run_id])) == len(SAMPLES)
    assert any(f"Run `{job.run_id}` — {len(SAMPLES)} cases" in m.value for m in at.markdown)


def test_a_session_that_only_watched_a_run_leaves_it_to_the_one_that_started_it(db_path) -> None:
    """Another tab (or a reload) that watched a run to its end must not take it from the
    session that started it: that session still collects its summary afterwards."""
    with FakeOpenAIServer(FakeBehaviour(latency_s=0.5)) as server:
        job = background.start_run(
            str(db_path), _slow_config(server), BUILTIN_TASKS["sentiment"], SAMPLES[:2],
            _fast_runner,
        )  # fmt: skip
        watcher = AppTest.from_function(_watch_panel).run(timeout=60)
        assert not watcher.exception, watcher.exception
        assert job.wait(30)
    # The watcher found the run going and saw it end.
    assert any(f"Run `{job.run_id}` — 2 cases" in m.value for m in watcher.markdown)
    assert background.get_job(job.id) is job
    owner = AppTest.from_function(_watch_panel)
    owner.session_state["probe_job"] = job.id
    owner.session_state["probe_job_owner"] = job.id
    owner.run(timeout=60)
    assert any(f"Run `{job.run_id}` — 2 cases" in m.value for m in owner.markdown)
    assert background.get_job(job.id) is None
