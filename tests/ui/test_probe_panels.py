"""Probe and Endpoints panels rendered alone (AppTest.from_function)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.tasks import BUILTIN_TASKS
from app.ui.probe_view import ProbeChoices
from core.types import Endpoint, Sample
from storage import Store
from tests.triage_data import make_case, save_runs

FAKE = Endpoint(name="fake", base_url="http://127.0.0.1:9/v1", model="fake-model")


@pytest.fixture
def db_path(tmp_path, monkeypatch):
    path = tmp_path / "panels.db"
    monkeypatch.setenv("MORPHSCOPE_DB", str(path))
    return path


def _run_panel(choices):
    from app.ui.data import get_store
    from app.ui.probe_view import render_run

    render_run(get_store(), choices, key="probe")


def test_run_panel_waits_for_choices_and_reports_a_bad_one(db_path) -> None:
    empty = ProbeChoices(FAKE, BUILTIN_TASKS["sentiment"], (), (), None, 1, 0, FAKE)
    at = AppTest.from_function(_run_panel, args=(empty,)).run()
    assert not at.exception, at.exception
    assert at.button(key="probe_run").disabled
    assert at.info[0].value.startswith("Choose at least one relation")

    # A relation deleted since the form was filled: the run set-up's message, nothing run.
    stale = ProbeChoices(
        FAKE, BUILTIN_TASKS["sentiment"], ("custom.gone",), (Sample({"text": "Hi."}),),
        "pasted", 1, 0, FAKE,
    )  # fmt: skip
    at = AppTest.from_function(_run_panel, args=(stale,)).run()
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    assert at.error[0].value == "Cannot run: unknown relation(s): custom.gone"
    assert Store(db_path).runs() == []


def _results_panels():
    from app.ui.data import get_store
    from app.ui.probe_view import render_interrupted_notice, render_latest_results

    store = get_store()
    render_interrupted_notice(store, key="probe")
    render_latest_results(store, key="probe")


def test_an_interrupted_run_is_announced_and_its_cases_shown(db_path) -> None:
    store = Store(db_path)
    save_runs(store, [make_case("a1", index=1), make_case("a2", index=2, verdict="PASS")])
    store.finish_run("run-a", "interrupted")
    store.close()
    at = AppTest.from_function(_results_panels).run()
    assert not at.exception, at.exception
    assert "Run `run-a` was interrupted" in at.warning[0].value
    assert at.session_state["probe_run_id"] == "run-a"
    assert list(at.dataframe[0].value["verdict"]) == ["FAIL", "PASS"]
    at.multiselect(key="probe_results_verdicts").set_value(["PASS"]).run()
    assert list(at.dataframe[0].value["verdict"]) == ["PASS"]


def _new_endpoint_panel():
    from app.ui.data import get_store
    from app.ui.endpoints_view import render_new_endpoint

    render_new_endpoint(get_store())


def test_new_endpoint_panel_refuses_a_name_in_use(db_path) -> None:
    store = Store(db_path)
    store.save_endpoint(FAKE)
    store.close()
    at = AppTest.from_function(_new_endpoint_panel).run()
    by_label = {widget.label: widget for widget in at.text_input}
    by_label["Name"].input("fake")
    by_label["Base URL"].input("http://127.0.0.1:8000/v1")
    by_label["Model"].input("other")
    next(b for b in at.button if b.label == "Save endpoint").click().run()
    assert not at.exception, at.exception
    assert at.error[0].value == "An endpoint named 'fake' exists already; edit it above."
    assert Store(db_path).endpoint("fake").model == "fake-model"
