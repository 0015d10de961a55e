"""The CLI against the fake OpenAI server (in-process `main`, real HTTP)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from app.cli.main import main
from core.types import Verdict
from storage import Store
from tests.fake_openai import echo_sentiment


def _run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args) -> dict:
    """A command that must succeed, and its ``--json`` output."""
    code, out, err = _run(capsys, *args)
    assert code == 0, err
    return json.loads(out)


def _by_content(cases, key=("id",), leave_out=("created_at",)):
    """Stored cases as {key: every other column}, to compare two sets of cases case for case."""
    return {
        tuple(getattr(c, k) for k in key): {
            column: value for column, value in c.to_row().items() if column not in leave_out
        }
        for c in cases
    }


def test_run_20_inputs_3_relations_then_zero_calls(
    capsys, tmp_path, fake_server, inputs_file, monkeypatch
):
    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)
    db = tmp_path / "cli.db"
    args = (
        "run", "--endpoint", fake_server.base_url, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity,sentence.uppercase,char.leet", "--inputs", str(inputs_file),
        "--db", str(db), "--json",
    )  # fmt: skip
    code, out, err = _run(capsys, *args)
    assert code == 0, err
    summary = json.loads(out)
    assert "cases" in err  # progress on stderr
    cases = Store(db).cases_for([summary["run_id"]])
    assert len(cases) == summary["cases"] == 60
    assert summary["verdicts"] == dict(Counter(c.verdict.value for c in cases))
    assert summary["calls_made"] == fake_server.stats.chat_calls > 0
    # Checked against the fake model itself, not against the runner: each stored output is the
    # fake's answer to that case's own prompt, and the verdict is whether the two labels agree.
    sources = {}
    for case in cases:
        assert case.source_output == echo_sentiment([{"content": case.source_prompt}])
        assert case.followup_output == echo_sentiment([{"content": case.followup_prompt}])
        assert case.source_prompt.endswith(f"Text: {case.source_input['text']}\nSentiment:")
        assert case.followup_prompt.endswith(f"Text: {case.followup_input['text']}\nSentiment:")
        same = case.source_output == case.followup_output
        assert case.verdict == (Verdict.PASS if same else Verdict.FAIL), case
        sources.setdefault(case.relation_id, []).append(case)
    for case in sources["si.identity"]:
        assert case.followup_input == case.source_input
    for case in sources["sentence.uppercase"]:
        assert case.followup_input == {"text": case.source_input["text"].upper()}
    # "good" written in leet is no longer good to the fake model: those cases, and only those, fail
    leet_fails = [c for c in sources["char.leet"] if c.verdict == Verdict.FAIL]
    assert leet_fails and all("good" in c.source_input["text"] for c in leet_fails)
    assert summary["verdicts"]["FAIL"] == len(leet_fails)
    calls = fake_server.stats.chat_calls
    code, out, _ = _run(capsys, *args)
    again = json.loads(out)
    assert code == 0 and again["calls_made"] == 0 and again["cases"] == 60
    assert again["run_id"] == summary["run_id"] and again["verdicts"] == summary["verdicts"]
    assert fake_server.stats.chat_calls == calls
    rerun = Store(db).cases_for([summary["run_id"]])
    assert _by_content(rerun) == _by_content(cases)


def test_relations_json_lists_spec_fields(capsys):
    code, out, _ = _run(capsys, "relations", "--json")
    assert code == 0
    catalog = json.loads(out)
    ids = {r["id"] for r in catalog}
    assert {"si.identity", "si.academic", "rrb.word_reversal", "char.leet"} <= ids
    for entry in catalog:
        assert {"id", "name", "family", "kind", "output_relation", "tasks", "ref"} <= set(entry)


def test_transform_same_seed_same_bytes(capsys):
    outputs = []
    for _ in range(2):
        code, out, _ = _run(capsys, "transform", "char.random_replace", "--text",
                            "The quick brown fox jumps over the lazy dog.", "--seed", "3", "--json")  # fmt: skip
        assert code == 0
        outputs.append(json.loads(out)["followup"])
    assert outputs[0] == outputs[1] != "The quick brown fox jumps over the lazy dog."
    code, out, _ = _run(capsys, "transform", "char.random_replace", "--text",
                        "The quick brown fox jumps over the lazy dog.", "--seed", "4", "--json")  # fmt: skip
    assert json.loads(out)["followup"] != outputs[0]


def test_transform_rrb_gives_bare_transformed_text(capsys):
    code, out, _ = _run(capsys, "transform", "rrb.word_reversal", "--text", "Let x be 3.", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["transformed"] == "3. be x Let"
    assert "TRANSFORMED INPUT:" in payload["followup"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "--endpoint", "ftp://x", "--model", "m", "--task", "sentiment", "--relations", "si.identity", "--inputs", "{inputs}"), "http"),
        (("run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "nope", "--relations", "si.identity", "--inputs", "{inputs}"), "unknown task"),
        (("run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "sentiment", "--relations", "no.such", "--inputs", "{inputs}"), "unknown relation"),
        (("run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "qa", "--relations", "si.identity", "--inputs", "{inputs}"), "question"),
        (("run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "sentiment", "--relations", "si.identity", "--inputs", "/no/such/file.csv"), "not found"),
        (("transform", "no.such", "--text", "x"), "unknown relation"),
    ],
)  # fmt: skip
def test_bad_input_exits_non_zero_with_a_message(capsys, tmp_path, inputs_file, args, message):
    db = tmp_path / "bad.db"
    args = [a.replace("{inputs}", str(inputs_file)) for a in args] + ["--db", str(db)]
    code, _out, err = _run(capsys, *args)
    assert code == 2
    assert message in err.lower() and "Traceback" not in err
    if db.exists():
        assert Store(db).runs() == []  # nothing half-written


def test_report_export_import_round_trip(capsys, tmp_path, fake_server, inputs_file, monkeypatch):
    import csv
    import math

    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)
    db = tmp_path / "r.db"
    code, out, err = _run(
        capsys, "run", "--endpoint", fake_server.base_url, "--model", "fake-model",
        "--task", "sentiment", "--relations", "si.identity,sentence.uppercase,char.leet",
        "--inputs", str(inputs_file), "--db", str(db), "--json", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    code, out, _ = _run(capsys, "report", "--db", str(db), "--json")
    assert code == 0
    report = json.loads(out)
    cases = Store(db).cases_for()
    for row in report["rows"]:
        mine = [c for c in cases if c.relation_id == row["relation_id"]]
        n_pass = sum(c.verdict == "PASS" for c in mine)
        n_fail = sum(c.verdict == "FAIL" for c in mine)
        assert (row["pass"], row["fail"]) == (n_pass, n_fail)
        rate = n_fail / (n_pass + n_fail)
        assert math.isclose(row["violation_rate"], rate)
        assert row["ci_low"] <= rate <= row["ci_high"]

    csv_path = tmp_path / "cases.csv"
    code, out, _ = _run(
        capsys, "export", "--db", str(db), "--format", "csv", "--out", str(csv_path)
    )
    assert code == 0 and "wrote 60 cases" in out
    with csv_path.open() as handle:
        assert len(list(csv.DictReader(handle))) == 60
    zip_path = tmp_path / "logs.zip"
    code, _, _ = _run(
        capsys, "export", "--db", str(db), "--format", "llmorph", "--out", str(zip_path)
    )
    assert code == 0 and zip_path.exists()
    other = tmp_path / "imported.db"
    code, out, err = _run(
        capsys, "import", "--db", str(other), "--format", "llmorph", str(zip_path)
    )
    assert code == 0, err
    assert out.startswith("imported as run")
    imported = Store(other).cases_for()
    # Case for case by content: the import makes its own run and case ids; the prompts and the
    # oracle's details are not in LLMorph's format; everything else comes back as it was.
    identity = ("relation_id", "sample_id", "followup_index", "repeat_index")
    not_carried = ("id", "run_id", "created_at", "source_prompt", "followup_prompt", "details")
    original = _by_content(cases, identity, not_carried)
    assert len(imported) == len(original) == 60
    # char.leet turns "good" into something the fake model no longer reads as good: some cases
    # have two different outputs, so outputs put back the wrong way round would show
    assert any(c.source_output != c.followup_output for c in cases)
    assert _by_content(imported, identity, not_carried) == original
    html = tmp_path / "report.html"
    code, _, _ = _run(capsys, "export", "--db", str(db), "--format", "html", "--out", str(html))
    assert code == 0 and "<html" in html.read_text().lower()
    code, _, err = _run(capsys, "import", "--db", str(other), "--format", "llmorph", str(csv_path))
    assert code == 2 and "Traceback" not in err


# ------------------------------------------------------------------ errors, retries, pre-flight


def _run_args(server_url, inputs_file, db, *extra):
    return (
        "run", "--endpoint", server_url, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity,sentence.uppercase", "--inputs", str(inputs_file),
        "--db", str(db), "--quiet", *extra,
    )  # fmt: skip


def test_errored_cases_exit_3_and_a_rerun_resends_exactly_their_calls(
    capsys, tmp_path, inputs_file, bow
):
    """An outage that passes the pre-flight (every chat answers 500) leaves ERROR cases: the run
    exits 3 and says so first. Once the endpoint is back, the same command re-sends exactly the
    calls behind those cases and ends with none left; a third run sends nothing."""
    from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

    db = tmp_path / "e.db"
    behaviour = FakeBehaviour(always_fault="500")
    with FakeOpenAIServer(behaviour) as server:
        args = _run_args(server.base_url, inputs_file, db, "--retries", "0", "--json")
        code, out, err = _run(capsys, *args)
        first = json.loads(out)
        assert code == 3
        assert err.startswith("warning: every case (40) ended ERROR — 40× HTTP 500: boom")
        assert first["verdicts"] == {"ERROR": 40} and first["calls_made"] == 60
        behaviour.always_fault = None
        code, out, err = _run(capsys, *args)
        second = json.loads(out)
        assert code == 0, err
        assert second["run_id"] == first["run_id"] and second["retried_errors"] == 40
        assert "ERROR" not in second["verdicts"] and second["cases"] == 40
        # 20 sources, 20 identity follow-ups (a separate sample of the same prompt) and 20
        # upper-cased follow-ups: the 60 distinct calls that failed, each sent once more.
        assert second["calls_made"] == server.stats.chat_calls - 60 == 60
        code, out, _ = _run(capsys, *args)
        assert code == 0 and json.loads(out)["calls_made"] == 0


def test_an_endpoint_failing_preflight_stops_the_run_with_one_line(capsys, tmp_path, inputs_file):
    from tests.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        pass  # closed: connection refused
    db = tmp_path / "p.db"
    code, out, err = _run(capsys, *_run_args(server.base_url, inputs_file, db))
    assert code == 2 and out == ""
    assert err.startswith("error: cannot reach") and "connection refused" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert Store(db).runs() == []


def test_delete_run_removes_the_run_its_cases_and_labels(
    capsys, tmp_path, fake_server, inputs_file, bow
):
    db = tmp_path / "d.db"
    code, out, _ = _run(capsys, *_run_args(fake_server.base_url, inputs_file, db, "--json"))
    run_id = json.loads(out)["run_id"]
    store = Store(db)
    case = store.cases_for([run_id])[0]
    store.record_cases([dataclasses.replace(case, verdict=Verdict.FAIL)])  # labels need a FAIL
    store.add_label(case.id, "confirmed")
    code, out, _ = _run(capsys, "delete-run", run_id, "--db", str(db))
    assert code == 0 and out == f"deleted run {run_id} and its 40 cases (with their labels)\n"
    store = Store(db)
    assert store.runs() == [] and store.cases_for() == []
    assert store._query("SELECT count(*) AS n FROM labels")[0]["n"] == 0
    assert store.count_calls() > 0  # the call cache is shared and stays
    code, _, err = _run(capsys, "delete-run", run_id, "--db", str(db))
    assert code == 2 and "no run" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--timeout", "nan"), "--timeout"),
        (("--timeout", "0"), "--timeout"),
        (("--retries", "-1"), "--retries"),
        (("--stall-minutes", "0"), "--stall-minutes"),
    ],
)
def test_time_limit_flags_are_checked(capsys, tmp_path, inputs_file, extra, message):
    with pytest.raises(SystemExit) as exit_info:
        main(list(_run_args("http://127.0.0.1:9/v1", inputs_file, tmp_path / "t.db", *extra)))
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_timeout_and_retries_bound_a_hanging_endpoint(capsys, tmp_path, inputs_file, bow):
    """--timeout 0.2 --retries 1 against a server that hangs 3 s: each call gives up after two
    short attempts with a reason that says it timed out, instead of 5 × 60 s."""
    from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

    with FakeOpenAIServer(FakeBehaviour(always_fault="hang", hang_s=3.0)) as server:
        inputs = tmp_path / "one.csv"
        inputs.write_text("text\nThe food was good.\n")
        args = _run_args(server.base_url, inputs, tmp_path / "h.db", "--timeout", "0.2",
                         "--retries", "1", "--json")  # fmt: skip
        code, _out, err = _run(capsys, *args)
    assert code == 3
    assert "timed out after 0.2 s" in err and server.stats.chat_calls <= 6


class _RecordingEmbedder:
    """The fast embedder, recording when `run` starts and stops it."""

    def __init__(self, events: list[str]) -> None:
        from tests.conftest import BagOfWordsEmbedder

        self._inner = BagOfWordsEmbedder()
        self.name = self._inner.name
        self.events = events

    def load(self) -> None:
        self.events.append("embedder starts")

    def embed(self, texts):
        return self._inner.embed(texts)

    def stop(self) -> None:
        self.events.append("embedder stops")


def _record_run_steps(monkeypatch) -> list[str]:
    """Events of `run`: the embedder's start and stop, reading the inputs, the pre-flight."""
    from app.engine import run_setup, workspace

    events: list[str] = []
    embedder = _RecordingEmbedder(events)
    monkeypatch.setattr(workspace, "default_embedder", lambda: embedder)
    for name, event in (("samples_from_file", "inputs read"), ("endpoint_problem", "preflight")):
        original = getattr(run_setup, name)

        def recorded(*args, _original=original, _event=event, **kwargs):
            events.append(_event)
            return _original(*args, **kwargs)

        monkeypatch.setattr(run_setup, name, recorded)
    return events


def test_run_starts_the_embedder_before_anything_else_and_stops_it_at_the_end(
    capsys, tmp_path, fake_server, inputs_file, monkeypatch
):
    """Issue 11, whole-command overhead: loading MiniLM takes seconds in its own process. `run`
    starts it first, so the load overlaps reading the inputs, the pre-flight check and planning
    (before, it started only when the engine began, after all of them), and ends it when the
    run is done (no model left loading behind a rerun that embeds nothing)."""
    events = _record_run_steps(monkeypatch)
    code, _, err = _run(capsys, *_run_args(fake_server.base_url, inputs_file, tmp_path / "o.db"))
    assert code == 0, err
    # (The engine asks for the model again when it starts: a no-op for a process already loading.)
    assert events[:3] == ["embedder starts", "inputs read", "preflight"]
    assert events[-1] == "embedder stops" and events.count("embedder stops") == 1


def test_run_stops_the_embedder_when_it_refuses_its_input(capsys, tmp_path, monkeypatch):
    """A run refused after the embedder started (here: an endpoint that does not answer its
    pre-flight) still ends the embedder's process: a mistake leaves nothing loading."""
    events = _record_run_steps(monkeypatch)
    inputs = tmp_path / "in.txt"
    inputs.write_text("a good day\n")
    code, _, err = _run(
        capsys, *_run_args("http://127.0.0.1:9/v1", inputs, tmp_path / "r.db", "--retries", "0")
    )
    assert code == 2 and "nothing was run" in err
    assert events == ["embedder starts", "inputs read", "preflight", "embedder stops"]


def test_a_command_closes_its_database_when_it_ends(
    capsys, tmp_path, fake_server, inputs_file, bow
):
    """Issue 11, whole-command overhead: ``python -m app`` exits without collecting its objects
    (that took 0.2 s), so nothing may rely on the collector to close the database. Every command
    closes the stores it opened when it ends: the WAL is checkpointed into the database and its
    -wal/-shm files are gone, as after any clean close."""
    db = tmp_path / "closed.db"
    code, _, err = _run(capsys, *_run_args(fake_server.base_url, inputs_file, db))
    assert code == 0, err
    assert db.exists()
    assert not (tmp_path / "closed.db-wal").exists() and not (tmp_path / "closed.db-shm").exists()
    code, _, err = _run(capsys, "report", "--db", str(db))
    assert code == 0, err
    assert not (tmp_path / "closed.db-wal").exists()


def test_each_command_group_adds_its_commands_in_help_order():
    from app.cli.main import build_parser

    (commands,) = [a for a in build_parser()._actions if a.dest == "command"]
    assert list(commands.choices) == [
        "relations", "transform", "run", "delete-run", "report", "export", "import", "batch",
        "gate", "baseline", "shrink",
    ]  # fmt: skip
    (export_format,) = [a for a in commands.choices["export"]._actions if a.dest == "format"]
    assert export_format.choices == ["csv", "jsonl", "llmorph", "html"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--repeats", "0"], "--repeats must be at least 1"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--tpm", "0"], "--tpm must be at least 1"),
        (["--retries", "-1"], "--retries must be 0 or more"),
        (["--timeout", "3601"], "--timeout must be between 0 and 3600 seconds"),
        (["--stall-minutes", "0"], "--stall-minutes must be more than 0"),
    ],
)
def test_run_numbers_no_run_could_use_are_refused_as_argparse_refuses(
    capsys, tmp_path, option, message
):
    run = ["run", "--endpoint", "embedded", "--task", "sentiment", "--relations", "char.leet"]
    with pytest.raises(SystemExit) as stopped:
        main([*run, "--inputs", "in.csv", "--db", str(tmp_path / "m.db"), *option])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: morphscope [-h] [--verbose]")
    assert err.endswith(f"morphscope: error: {message}\n")
    assert not (tmp_path / "m.db").exists()
