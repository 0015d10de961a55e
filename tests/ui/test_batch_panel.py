"""The Probe page's batch panel rendered alone (AppTest.from_function), and its import handler
called with bytes (AppTest cannot fill a file uploader).

Issue 13 item 4: "Export as batch" for the run the form describes (one download button per part
file), "Import batch results" (the runs judged from the answers and shown), a foreign file
refused with one line and nothing written, a partly answered run listed as waiting.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.batch.export import export_batch
from app.clients.mock import MockClient
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from app.inputs.datasets import DATASETS
from app.ui.batch_panel import cli_export_command, export_for_download, import_uploaded
from app.ui.probe_form import ProbeChoices
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import batch_output_line, chat_body
from tests.ui.panels import FAKE

SENTIMENT = BUILTIN_TASKS["sentiment"]
SAMPLES = (Sample({"text": "I love it."}), Sample({"text": "It broke twice."}))
RELATIONS = ("si.identity", "sentence.uppercase")
CHOICES = ProbeChoices(FAKE, SENTIMENT, RELATIONS, SAMPLES, "pasted", 1, 0, FAKE)


def model(messages) -> str:
    """A deterministic sentiment model: "love" is positive, anything else negative."""
    return "positive" if "love" in messages[-1]["content"].lower() else "negative"


def bow_runner(store: Store) -> Runner:
    return Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))


@pytest.fixture(autouse=True)
def _fast_runner(monkeypatch):
    """The panel's export and import build the workspace's runner: a bag-of-words embedder
    instead of MiniLM."""
    monkeypatch.setattr("app.engine.workspace.make_runner", bow_runner)


def result_lines(request_lines: list[str], *, skip: int = 0, responder=model) -> bytes:
    """The OpenAI Batch output for request lines, answered by ``responder`` (the first ``skip``
    requests left unanswered)."""
    out = []
    for line in request_lines[skip:]:
        request = json.loads(line)
        text = responder(request["body"]["messages"])
        out.append(batch_output_line(request["custom_id"], chat_body(text)))
    return "".join(json.dumps(line) + "\n" for line in out).encode()


def exported_lines(db_path: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """Export the CHOICES run into the database; returns its run id and request lines."""
    store = Store(db_path)
    config = RunConfig(FAKE, SENTIMENT.id, RELATIONS, dataset="pasted")
    export = export_batch(store, config, SENTIMENT, SAMPLES, tmp_path / "requests.jsonl",
                          runner_factory=bow_runner)  # fmt: skip
    store.close()
    lines = [line for path in export.files for line in path.read_text().splitlines()]
    return export.run_id, lines


def import_report(at) -> list[str]:
    """The import's plain-text report (the other code block is the export's command line)."""
    return [c.value for c in at.code if not c.value.startswith("morphscope ")]


def batch_panel(choices):
    from app.ui.batch_panel import render_batch_panel, render_pending_batches
    from app.ui.data import get_store

    store = get_store()
    render_batch_panel(store, choices, key="probe_batch")
    render_pending_batches(store, key="probe_batch")


def test_export_offers_the_request_file_with_its_line_count(db_path) -> None:
    at = AppTest.from_function(batch_panel, args=(CHOICES,)).run()
    assert not at.exception, at.exception
    at.button(key="probe_batch_export_button").click().run()
    assert not at.exception, at.exception
    (download,) = at.download_button
    run_id = RunConfig(FAKE, SENTIMENT.id, RELATIONS, dataset="pasted").run_id(list(SAMPLES))
    # 2 inputs × (source, identity follow-up — asked again —, uppercase follow-up).
    assert download.label == f"Download batch-{run_id}.jsonl (6 requests)"
    _, exported = at.session_state["probe_batch_export"]
    assert len(exported.files[0].data.decode().splitlines()) == 6
    store = Store(db_path)
    assert store.run(run_id).status == "awaiting_batch"
    assert len(store.batch_request_keys(run_id)) == 6
    text = " ".join(m.value for m in at.markdown)
    assert f"Run `{run_id}`: 4 cases planned, 6 request lines written, 0 calls" in text
    # The command line for big sweeps names the endpoint and model, never a key.
    (command,) = [c.value for c in at.code if "batch export" in c.value]
    assert "--endpoint http://127.0.0.1:9/v1 --model fake-model" in command
    assert "--relations si.identity,sentence.uppercase" in command
    # The waiting run is listed with what was exported.
    (pending,) = [d.value for d in at.dataframe if "requests exported" in d.value.columns]
    assert list(pending["run"]) == [run_id]
    assert list(pending["requests exported"]) == [6]
    assert list(pending["state"]) == ["awaiting batch"]


def test_the_embedded_model_is_not_offered_as_a_batch_engine(db_path) -> None:
    from dataclasses import replace

    from app.engine.model_server import embedded_endpoint

    choices = replace(CHOICES, endpoint=embedded_endpoint())
    at = AppTest.from_function(batch_panel, args=(choices,)).run()
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.key == "probe_batch_export_button"]
    assert "not a batch engine" in at.info[0].value


def test_import_of_answered_lines_finishes_the_run_and_shows_its_results(db_path, tmp_path) -> None:
    run_id, lines = exported_lines(db_path, tmp_path)
    outcome = import_uploaded(Store(db_path), [("results.jsonl", result_lines(lines))])
    assert outcome.error is None
    assert outcome.status == {run_id: "done"} and outcome.missing == {}
    assert outcome.new_answers == 6 and outcome.judged == [run_id]
    assert Store(db_path).run(run_id).status == "done"
    assert len(Store(db_path).cases_for([run_id])) == 4

    at = AppTest.from_function(batch_panel, args=(CHOICES,))
    at.session_state["probe_batch_import"] = outcome
    at.run()
    assert not at.exception, at.exception
    assert f"run {run_id}: done, 4 cases" in import_report(at)[0]
    assert at.success[0].value == f"Run `{run_id}` is done."
    (cases,) = [d.value for d in at.dataframe if "verdict" in d.value.columns]
    assert len(cases) == 4
    # A finished run waits for nothing: no notice.
    assert not [d for d in at.dataframe if "requests exported" in d.value.columns]

    # The same file again changes nothing, and says so.
    again = import_uploaded(Store(db_path), [("results.jsonl", result_lines(lines))])
    assert again.changed_nothing and again.status == {run_id: "done"}
    at.session_state["probe_batch_import"] = again
    at.run()
    assert at.info[0].value == "Nothing changed: these results were imported already."

    # Exporting the same form now writes nothing: the run is judged from the call cache.
    at.button(key="probe_batch_export_button").click().run()
    assert not at.exception, at.exception
    assert not at.download_button
    assert "Nothing to send" in " ".join(m.value for m in at.markdown)


def test_a_foreign_file_is_refused_in_one_line_and_nothing_is_written(db_path, tmp_path) -> None:
    run_id, lines = exported_lines(db_path, tmp_path)
    other = json.loads(result_lines(lines).splitlines()[0])
    other["custom_id"] = "0" * 64  # a call no export here asked for
    outcome = import_uploaded(Store(db_path), [("theirs.jsonl", json.dumps(other).encode())])
    assert outcome.error.startswith("theirs.jsonl: none of its 1 results answers a request")
    assert "/tmp" not in outcome.error  # named as uploaded, not by its temporary copy
    store = Store(db_path)
    assert store.run(run_id).status == "awaiting_batch"
    assert store.cases_for([run_id]) == []

    at = AppTest.from_function(batch_panel, args=(CHOICES,))
    at.session_state["probe_batch_import"] = outcome
    at.run()
    assert not at.exception, at.exception
    assert "theirs.jsonl" in at.error[0].value and not import_report(at)


def test_a_partly_answered_run_says_what_is_missing_and_stays_listed(db_path, tmp_path) -> None:
    run_id, lines = exported_lines(db_path, tmp_path)
    outcome = import_uploaded(Store(db_path), [("part.jsonl", result_lines(lines, skip=1))])
    assert outcome.status == {run_id: "partial"} and outcome.missing == {run_id: 1}
    at = AppTest.from_function(batch_panel, args=(CHOICES,))
    at.session_state["probe_batch_import"] = outcome
    at.run()
    assert not at.exception, at.exception
    (warning,) = [w.value for w in at.warning if run_id in w.value]
    assert "1 call(s) still missing" in warning
    (pending,) = [d.value for d in at.dataframe if "requests exported" in d.value.columns]
    assert list(pending["state"]) == ["partial"]
    (cases,) = [d.value for d in at.dataframe if "verdict" in d.value.columns]
    assert "ERROR" in set(cases["verdict"])  # the unanswered call's cases, until imported

    # The rest of the answers finish it.
    rest = import_uploaded(Store(db_path), [("all.jsonl", result_lines(lines))])
    assert rest.status == {run_id: "done"} and rest.new_answers == 1


def test_bad_bytes_are_named_and_the_good_lines_imported(db_path, tmp_path) -> None:
    run_id, lines = exported_lines(db_path, tmp_path)
    data = result_lines(lines) + b"\xff\xfe garbage\n"
    outcome = import_uploaded(Store(db_path), [("results.jsonl", data)])
    assert outcome.warnings == [
        "results.jsonl: line 7 is not UTF-8 text (byte "
        f"{len(result_lines(lines))}); its lines with bad bytes are skipped, the others imported"
    ]
    assert outcome.status == {run_id: "done"}
    assert any("1 lines are not result lines" in line for line in outcome.lines)


def test_an_upload_over_the_size_limit_is_refused(db_path, tmp_path) -> None:
    run_id, lines = exported_lines(db_path, tmp_path)
    data = result_lines(lines)
    outcome = import_uploaded(Store(db_path), [("big.jsonl", data)], max_bytes=len(data) - 1)
    assert "more than a browser upload may" in outcome.error
    assert "morphscope batch import" in outcome.error
    assert Store(db_path).run(run_id).status == "awaiting_batch"


def test_the_command_line_quotes_its_arguments_and_names_no_key() -> None:
    endpoint = Endpoint("hosted", "https://api.example.com/v1", "gpt x", api_key_env="MY_KEY")
    choices = ProbeChoices(endpoint, SENTIMENT, RELATIONS, SAMPLES, "sentiment", 2, 7, FAKE)
    command = cli_export_command(choices, "/data/my db.sqlite", needs_transformation=True)
    assert command.startswith("morphscope batch export ")
    assert "--model 'gpt x'" in command and "--db '/data/my db.sqlite'" in command
    assert "--repeats 2 --seed 7" in command
    assert f"--inputs {DATASETS['sentiment'].path}" in command  # the demo dataset's file
    assert "--transformation-endpoint http://127.0.0.1:9/v1" in command
    assert "MY_KEY" not in command and "api-key" not in command
    # Without an LLM-prompted relation the run has no transformation endpoint (nor its run id).
    assert "--transformation" not in cli_export_command(choices, "x.db")


def test_the_mock_client_answers_what_the_panel_exports(db_path, tmp_path) -> None:
    """The exported run imported is the online run: same cases and verdicts (issue 13's first
    "Must show", here through the panel's handler)."""
    run_id, lines = exported_lines(db_path, tmp_path)
    import_uploaded(Store(db_path), [("results.jsonl", result_lines(lines))])
    online = Store(tmp_path / "online.db")
    runner = bow_runner(online)
    runner.client_factory = MockClient(model).factory
    config = RunConfig(FAKE, SENTIMENT.id, RELATIONS, dataset="pasted")
    summary = runner.run_sync(config, SENTIMENT, SAMPLES)
    assert summary.run_id == run_id

    def verdicts(store):
        return sorted((c.id, c.verdict, c.source_output, c.followup_output)
                      for c in store.cases_for([run_id]))  # fmt: skip

    assert verdicts(Store(db_path)) == verdicts(online)


def rewriter(messages) -> str:
    """Answers a rewrite request with a paraphrase that keeps the sentiment."""
    return "Honestly, I really love it." if "love" in messages[-1]["content"] else "It broke."


def test_llm_prompted_relations_export_their_rewrites_first(db_path) -> None:
    """Two stages: the rewrites first (and the panel says so), then, once their results are
    imported, the model's calls."""
    choices = ProbeChoices(FAKE, SENTIMENT, ("sentence.paraphrase",), SAMPLES, "pasted", 1, 0, FAKE)
    at = AppTest.from_function(batch_panel, args=(choices,)).run()
    at.button(key="probe_batch_export_button").click().run()
    assert not at.exception, at.exception
    assert "**Stage 1 of 2**" in " ".join(m.value for m in at.markdown)
    _, stage1 = at.session_state["probe_batch_export"]
    assert stage1.stage == "rewrites" and stage1.requests == 6  # 2 inputs × 3 candidates
    lines = stage1.files[0].data.decode().splitlines()
    outcome = import_uploaded(
        Store(db_path), [("rewrites.jsonl", result_lines(lines, responder=rewriter))]
    )
    assert outcome.rewrites_answered == [stage1.run_id]
    at.session_state["probe_batch_import"] = outcome
    at.run()
    assert not at.exception, at.exception
    assert any("stage 1 (the rewrites) is answered" in i.value for i in at.info)
    assert not [d for d in at.dataframe if "verdict" in d.value.columns]  # no cases yet

    at.button(key="probe_batch_export_button").click().run()
    _, stage2 = at.session_state["probe_batch_export"]
    assert stage2.stage == "calls" and stage2.run_id == stage1.run_id
    assert stage2.requests == 4  # 2 sources, 2 paraphrased follow-ups
    assert "Stage 1 of 2" not in " ".join(m.value for m in at.markdown)


def test_an_export_too_big_for_a_browser_points_to_the_command_line(db_path) -> None:
    """Past the download limit the files are written and the run stored, but no download is
    offered: the panel says to use the command line instead."""
    config = RunConfig(FAKE, SENTIMENT.id, RELATIONS, dataset="pasted")
    exported = export_for_download(
        Store(db_path), config, SENTIMENT, SAMPLES, runner_factory=bow_runner, max_download_bytes=1
    )
    assert exported.too_big and exported.files == ()
    assert exported.requests == 6 and exported.file_names == (f"batch-{exported.run_id}.jsonl",)

    at = AppTest.from_function(batch_panel, args=(CHOICES,))
    at.session_state["probe_batch_export"] = (CHOICES.fingerprint, exported)
    at.run()
    assert not at.exception, at.exception
    assert not at.download_button
    (warning,) = [w.value for w in at.warning if "too big for a browser download" in w.value]
    assert "command line below" in warning


# ---------------------------------------------------------------- refused whole (issue 20)


def test_a_request_file_or_a_conflict_is_refused_as_the_cli_refuses_it(db_path, tmp_path) -> None:
    """Issue 20 items 16 and 18 in the browser: the request file uploaded as results, and two
    uploads answering one request differently, are refused in one line naming the uploads;
    nothing is written."""
    run_id, lines = exported_lines(db_path, tmp_path)
    requests = "".join(line + "\n" for line in lines).encode()
    outcome = import_uploaded(Store(db_path), [("requests.jsonl", requests)])
    assert outcome.error.startswith(
        "requests.jsonl: this is a request file; import the results file"
    )

    answers = result_lines(lines)
    first = json.loads(answers.splitlines()[0])
    other = batch_output_line(first["custom_id"], chat_body("neutral"))
    conflict = import_uploaded(
        Store(db_path), [("a.jsonl", answers), ("b.jsonl", json.dumps(other).encode())]
    )
    assert conflict.error.startswith("a.jsonl: line 1 and b.jsonl line 1 answer the same request")
    store = Store(db_path)
    assert store.count_calls() == 0 and store.run(run_id).status == "awaiting_batch"

    at = AppTest.from_function(batch_panel, args=(CHOICES,))
    at.session_state["probe_batch_import"] = outcome
    at.run()
    assert not at.exception, at.exception
    (error,) = at.error
    assert "this is a request file" in error.value and not import_report(at)


def test_an_export_that_cannot_be_written_says_why_and_stores_nothing(db_path, monkeypatch) -> None:
    """Issue 20 item 19 in the browser: the request file cannot be written (here the server's
    temporary folder refuses it) — one error line saying "permission denied", no run stored,
    no traceback."""
    import errno
    import pathlib

    real_open = pathlib.Path.open

    def refuse_batch_files(self, mode="r", *args, **kwargs):
        if self.parent.name.startswith("morphscope-batch-") and "w" in mode:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", refuse_batch_files)
    at = AppTest.from_function(batch_panel, args=(CHOICES,)).run()
    at.button(key="probe_batch_export_button").click().run()
    assert not at.exception, at.exception
    (error,) = at.error
    run_id = RunConfig(FAKE, SENTIMENT.id, RELATIONS, dataset="pasted").run_id(list(SAMPLES))
    assert error.value.startswith(f"Cannot export: cannot write batch-{run_id}.jsonl: permission")
    assert "/tmp" not in error.value
    assert not at.download_button and Store(db_path).runs() == []


def test_a_probe_run_started_after_an_import_clears_the_imports_results(db_path, tmp_path):
    """Issue 28 item 3: an import's results table stayed above the next run's results."""
    run_id, lines = exported_lines(db_path, tmp_path)
    outcome = import_uploaded(Store(db_path), [("results.jsonl", result_lines(lines))])
    at = AppTest.from_function(batch_panel, args=(CHOICES,))
    at.session_state["probe_batch_import"] = outcome
    at.session_state["latest_results_panel"] = "probe_batch"  # the import claimed the results
    at.run()
    assert [d for d in at.dataframe if "verdict" in d.value.columns]
    at.session_state["latest_results_panel"] = "probe"  # a probe run started since
    at.run()
    assert not at.exception, at.exception
    assert not [d for d in at.dataframe if "verdict" in d.value.columns]
    assert not [s for s in at.subheader if s.value == f"Batch run {run_id}"]
