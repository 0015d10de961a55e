"""Probe's reliability panels: the pre-flight error box, Resume of a killed run, Delete with
confirmation; and the endpoint form's time limits."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app.ui.probe_form import ProbeChoices
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.triage_data import make_case, save_runs
from tests.ui.panels import FAKE, run_panel


def _results_panels():
    from app.ui.data import get_store
    from app.ui.probe_results import render_latest_results
    from app.ui.probe_run import render_interrupted_notice

    store = get_store()
    render_interrupted_notice(store, key="probe")
    render_latest_results(store, key="probe")


def _new_endpoint_panel():
    from app.ui.data import get_store
    from app.ui.endpoints_view import render_new_endpoint

    render_new_endpoint(get_store())


def test_a_dead_endpoint_is_reported_before_anything_runs(db_path) -> None:
    """The pre-flight check: a refused connection is one error box, not a run of ERRORs."""
    choices = ProbeChoices(
        FAKE, BUILTIN_TASKS["sentiment"], ("si.identity",), (Sample({"text": "Hi."}),),
        "pasted", 1, 0, FAKE,
    )  # fmt: skip
    at = AppTest.from_function(run_panel, args=(choices,)).run()
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    assert at.error[0].value.startswith("Not run: cannot reach")
    assert "connection refused" in at.error[0].value
    assert Store(db_path).runs() == []


def _killed_run(db_path, server) -> str:
    """A run stopped after its first case, then left "running" by a process that is gone."""
    import threading

    from app.engine.embedder import EmbeddingCache
    from app.engine.runner import Runner
    from core.run_config import RunConfig
    from tests.conftest import BagOfWordsEmbedder

    store = Store(db_path)
    endpoint = Endpoint(name="fake", base_url=server.base_url, model="fake-model", concurrency=1)
    samples = [Sample({"text": f"Item {i} was good."}) for i in range(4)]
    cancel = threading.Event()
    runner = Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))
    summary = runner.run_sync(
        RunConfig(endpoint, "sentiment", ("si.identity",)), BUILTIN_TASKS["sentiment"], samples,
        progress=lambda p: p.done and cancel.set(), cancel=cancel,
    )  # fmt: skip
    store._db.execute(
        "UPDATE runs SET status = 'running', owner = 'gone:999999999', "
        "heartbeat_at = '2020-01-01T00:00:00+00:00' WHERE id = ?",
        [summary.run_id],
    )
    store._db.conn.commit()
    store.close()
    return summary.run_id


def test_a_killed_run_reads_interrupted_and_resume_finishes_it(db_path, monkeypatch) -> None:
    import functools

    from app.ui import probe_run
    from tests.conftest import BagOfWordsEmbedder
    from tests.fake_openai import FakeOpenAIServer

    fast = functools.partial(probe_run.make_runner, embedder_factory=BagOfWordsEmbedder)
    monkeypatch.setattr(probe_run, "make_runner", fast)
    with FakeOpenAIServer() as server:
        run_id = _killed_run(db_path, server)
        at = AppTest.from_function(_results_panels).run()
        assert not at.exception, at.exception
        assert f"Run `{run_id}` was interrupted" in at.warning[0].value
        at.button(key=f"probe_resume_{run_id}").click().run(timeout=60)
        assert not at.exception, at.exception
    run = Store(db_path).run(run_id)
    assert run.status == "done"
    assert len(Store(db_path).cases_for([run_id])) == 4


def test_delete_asks_first_then_removes_the_run(db_path) -> None:
    store = Store(db_path)
    save_runs(store, [make_case("a1", index=1), make_case("a2", index=2, verdict="PASS")])
    store.finish_run("run-a", "interrupted")
    store.close()
    at = AppTest.from_function(_results_panels).run()
    at.button(key="probe_manage_delete_run-a").click().run()
    assert "Delete run `run-a` with its 2 cases" in at.warning[-1].value
    assert Store(db_path).run("run-a") is not None  # not yet: it asks first
    at.button(key="probe_manage_delete_no_run-a").click().run()
    assert Store(db_path).run("run-a") is not None
    at.button(key="probe_manage_delete_run-a").click().run()
    at.button(key="probe_manage_delete_yes_run-a").click().run()
    assert not at.exception, at.exception
    assert Store(db_path).runs() == []


def test_the_endpoint_form_saves_timeout_and_retries(db_path) -> None:
    at = AppTest.from_function(_new_endpoint_panel).run()
    by_label = {widget.label: widget for widget in at.text_input}
    by_label["Name"].input("slow")
    by_label["Base URL"].input("http://127.0.0.1:8000/v1")
    by_label["Model"].input("m")
    numbers = {widget.label: widget for widget in at.number_input}
    numbers["Timeout (s)"].set_value(20.0)
    numbers["Retries"].set_value(1)
    next(b for b in at.button if b.label == "Save endpoint").click().run()
    assert not at.exception, at.exception
    # Nothing listens on port 8000 here: the form asks before saving an endpoint it cannot reach.
    next(b for b in at.button if b.label == "Save anyway").click().run()
    saved = Store(db_path).endpoint("slow")
    assert (saved.timeout_s, saved.retries) == (20.0, 1)


def test_the_summary_counts_resent_errors_instead_of_saying_nothing_was_sent() -> None:
    """A rerun that re-sent errored cases (all answered from the cache here) no longer says
    "already stored: 0 model calls"; a run of ERRORs is announced above its results."""
    from app.engine.progress import RunSummary
    from app.ui.probe_results import error_notice, summary_line

    resent = RunSummary("r1", "done", 4, 2, 0, 2, {"PASS": 4}, 0.1, retried_errors=2)
    assert "2 errored case(s) sent again" in summary_line(resent)
    assert "already stored" not in summary_line(resent)
    failed = RunSummary(
        "r2",
        "done",
        3,
        3,
        3,
        0,
        {"ERROR": 3},
        0.1,
        error_kinds={"HTTP 500: ![x](http://h/a.png)": 3},
    )
    notice = error_notice(failed)
    assert notice.startswith("Every case \\(3\\) ended ERROR")  # Markdown-escaped
    assert "![" not in notice and "\\!\\[x\\]" in notice  # server text shown as text
