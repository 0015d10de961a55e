"""Batch mode through the entrypoint: the Probe page exports the form's run as a batch, and
Analysis and Triage show an imported run like any other — and are not broken by a run still
awaiting its batch results (a run with no cases yet)."""

from __future__ import annotations

import pytest

from app.batch.export import export_batch
from app.ui.analysis_tabs import TABS
from app.ui.batch_panel import import_uploaded
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import open_page
from tests.ui.test_batch_panel import bow_runner, result_lines

ENDPOINT = Endpoint(name="fake", base_url="http://127.0.0.1:9/v1", model="fake-model")
SENTIMENT = BUILTIN_TASKS["sentiment"]


@pytest.fixture(autouse=True)
def _fast_embedders(monkeypatch):
    """The runner and Analysis's severity proxies: the bag-of-words stand-in for MiniLM."""
    monkeypatch.setattr("app.engine.workspace.make_runner", bow_runner)
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


def errors(at) -> list[str]:
    return [e.value for e in at.error]


def test_probe_page_exports_the_forms_run_as_a_batch(app_db) -> None:
    store = Store(app_db)
    store.save_endpoint(ENDPOINT)
    store.close()
    at = open_page("pages/probe.py")
    assert not at.exception, at.exception
    at.selectbox(key="probe_endpoint").select("fake").run()
    at.multiselect(key="probe_relations_sentiment").set_value(["sentence.uppercase"])
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input("I love this.\nThe service was bad.\n").run()
    at.button(key="probe_batch_export_button").click().run()
    assert not at.exception, at.exception
    assert not errors(at)
    (download,) = at.download_button
    assert download.label.endswith("(4 requests)")  # 2 sources, 2 uppercase follow-ups
    (run,) = Store(app_db).runs()
    assert run.status == "awaiting_batch" and run.n_cases == 0
    assert run.id in download.label
    notice = [i.value for i in at.info if "wait for batch results" in i.value]
    assert notice == ["1 run(s) wait for batch results: import them under **Batch mode** "
                      "(Import batch results) once the batch engine has answered."]  # fmt: skip
    # Nothing was sent: the endpoint listens nowhere, and no case was judged.
    assert Store(app_db).cases_for() == []


def _export(store: Store, tmp_path, texts: tuple[str, ...], name: str) -> tuple[str, list[str]]:
    samples = [Sample({"text": text}) for text in texts]
    config = RunConfig(ENDPOINT, SENTIMENT.id, ("si.identity", "sentence.uppercase"))
    export = export_batch(
        store, config, SENTIMENT, samples, tmp_path / f"{name}.jsonl", runner_factory=bow_runner
    )
    return export.run_id, [line for p in export.files for line in p.read_text().splitlines()]


def seed_batch_runs(path, tmp_path) -> tuple[str, str]:
    """One run exported and imported (done), one exported and still awaiting its results."""
    store = Store(path)
    done, lines = _export(store, tmp_path, ("I love it.", "It broke twice."), "done")
    outcome = import_uploaded(store, [("results.jsonl", result_lines(lines))])
    assert outcome.status == {done: "done"}
    waiting, _ = _export(store, tmp_path, ("Fine enough.",), "waiting")
    store.close()
    return done, waiting


def test_analysis_shows_an_imported_run_and_survives_one_awaiting_batch(app_db, tmp_path):
    done, waiting = seed_batch_runs(app_db, tmp_path)
    at = open_page("pages/analysis.py")
    assert not at.exception, at.exception
    assert not errors(at)
    labels = at.multiselect(key="analysis_runs").options
    # Listed like any run; the one without results says so.
    assert [label for label in labels if label.endswith(f"· {done[:6]}")]
    assert [label for label in labels if label.endswith(f"{waiting[:6]} · awaiting batch results")]
    assert {m.label: m.value for m in at.metric}["Cases"] == "4"
    assert len(at.get("vega_lite_chart")) == 1  # the imported run's heatmap
    at.multiselect(key="analysis_runs").set_value([done]).run()
    assert not at.exception, at.exception
    assert len(at.get("vega_lite_chart")) == 1
    for name in TABS:  # every tab with the awaiting run in the database
        at.session_state["analysis_tab"] = name
        at.run()
        assert not at.exception, (name, at.exception)
        assert not errors(at), (name, errors(at))


def test_analysis_and_triage_with_only_a_run_awaiting_batch(app_db, tmp_path):
    """A run with no cases yet (exported, not answered) is not a reason for a traceback."""
    store = Store(app_db)
    _export(store, tmp_path, ("Fine enough.",), "waiting")
    store.close()
    for page in ("pages/analysis.py", "pages/triage.py", "pages/probe.py"):
        at = open_page(page)
        assert not at.exception, (page, at.exception)
        assert not errors(at), (page, errors(at))


def test_triage_opens_with_an_imported_run_and_one_awaiting_batch(app_db, tmp_path):
    seed_batch_runs(app_db, tmp_path)
    at = open_page("pages/triage.py")
    assert not at.exception, at.exception
    assert not errors(at)


def test_a_batch_endpoint_is_exported_not_run(app_db) -> None:
    """Issue 13: an endpoint saved as answered by batch files has no "Run probe" (a note points
    to batch mode instead), and "Export as batch" writes its requests."""
    store = Store(app_db)
    store.save_endpoint(
        Endpoint(name="bulk", base_url="http://127.0.0.1:9/v1", model="m", kind="batch")
    )
    store.close()
    at = open_page("pages/probe.py")
    at.selectbox(key="probe_endpoint").select("bulk").run()
    at.multiselect(key="probe_relations_sentiment").set_value(["sentence.uppercase"])
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input("I love this.\nThe service was bad.\n").run()
    # No "Run probe" for it: nothing is ever sent to a batch endpoint from here.
    assert not [b for b in at.button if b.label == "Run probe"]
    assert any("is answered by batch files" in i.value for i in at.info)
    assert not at.exception, at.exception
    at.button(key="probe_batch_export_button").click().run()
    assert not at.exception, at.exception
    (download,) = at.download_button
    assert download.label.endswith("(4 requests)")
