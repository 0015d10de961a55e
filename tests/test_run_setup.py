"""The run set-up shared by the CLI and the Probe page: same choices → same RunConfig, same
mistakes → same message; and RunConfig survives a trip through its dict (as stored with a run)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from app.cli.main import build_parser, main
from app.cli.plan import run_config_from_args
from app.engine.run_setup import (
    RunSetupError,
    plan_run,
    relation_ids_from_text,
    require_samples,
    samples_from_file,
    with_sampling,
)
from app.inputs.input_files import load_input_file
from app.ui.probe_form import ProbeChoices
from app.ui.probe_run import probe_run_config
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import EMBEDDED_KIND, Endpoint, Sample
from storage import Store

URL = "http://127.0.0.1:9/v1"
EMBEDDED = Endpoint(
    name="embedded", base_url="http://127.0.0.1:1/v1", model="m", kind=EMBEDDED_KIND
)


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "setup.db")
    yield store
    store.close()


@pytest.fixture
def inputs_file(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text("text,label\nI love this.,positive\nThe soup was cold.,negative\n")
    return path


def cli_config(store, *args: str) -> tuple[RunConfig, list[Sample]]:
    config, _task, samples = run_config_from_args(build_parser().parse_args(["run", *args]), store)
    return config, samples


def probe_choices(inputs_file, relation_ids, transformation=EMBEDDED, **overrides) -> ProbeChoices:
    """What the Probe form holds for the same choices (the file uploaded, default options)."""
    task = BUILTIN_TASKS[overrides.pop("task_id", "sentiment")]
    endpoint = Endpoint(name=f"fake-model @ {URL}", base_url=URL, model="fake-model")
    fields = {
        "endpoint": with_sampling(endpoint, temperature=0.0, max_tokens=256),
        "task": task,
        "relation_ids": tuple(relation_ids),
        "samples": tuple(load_input_file(inputs_file, list(task.fields))),
        "dataset": inputs_file.name,
        "repeats": 1,
        "seed": 0,
        "transformation_endpoint": transformation,
    }
    return ProbeChoices(**(fields | overrides))


def test_cli_and_probe_make_the_same_config(store, inputs_file) -> None:
    config, samples = cli_config(
        store, "--endpoint", URL, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity, char.leet", "--inputs", str(inputs_file),
    )  # fmt: skip
    choices = probe_choices(inputs_file, ["si.identity", "char.leet"])
    assert probe_run_config(store, choices) == config
    assert list(choices.samples) == samples
    # No LLM-prompted relation: no transformation endpoint, whatever the picker shows.
    assert config.transformation_endpoint is None
    assert config.relation_ids == ("si.identity", "char.leet")
    assert config.dataset == "reviews.csv"


def test_cli_and_probe_agree_on_the_transformation_endpoint(store, inputs_file) -> None:
    config, _ = cli_config(
        store, "--endpoint", URL, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity,sentence.paraphrase", "--inputs", str(inputs_file),
        "--transformation-endpoint", URL, "--transformation-model", "rewriter",
        "--repeats", "2", "--seed", "7",
    )  # fmt: skip
    rewriter = Endpoint(name=f"rewriter @ {URL}", base_url=URL, model="rewriter")
    choices = probe_choices(
        inputs_file, ["si.identity", "sentence.paraphrase"], rewriter, repeats=2, seed=7
    )
    assert probe_run_config(store, choices) == config
    assert config.transformation_endpoint == rewriter


@pytest.mark.parametrize(
    ("task_id", "relations", "message"),
    [
        ("nope", "si.identity", "unknown task 'nope'; known: math,"),
        ("sentiment", "si.identity,no.such", "unknown relation(s): no.such"),
        ("sentiment", " , ", "unknown relation(s): (none given)"),
    ],
)
def test_bad_choices_give_the_same_message_on_both_doors(
    store, inputs_file, capsys, task_id, relations, message
) -> None:
    code = main(
        ["run", "--endpoint", URL, "--model", "m", "--task", task_id, "--relations", relations,
         "--inputs", str(inputs_file), "--db", store.path]
    )  # fmt: skip
    assert code == 2
    cli_message = capsys.readouterr().err.strip().removeprefix("error: ")
    assert cli_message.startswith(message)
    # The page's task is one the form offered: here, one deleted since the form was filled.
    task = replace(BUILTIN_TASKS["sentiment"], id=task_id)
    choices = replace(probe_choices(inputs_file, relation_ids_from_text(relations)), task=task)
    with pytest.raises(RunSetupError) as raised:
        probe_run_config(store, choices)
    assert str(raised.value) == cli_message


def test_input_checks(tmp_path) -> None:
    task = BUILTIN_TASKS["sentiment"]
    with pytest.raises(RunSetupError, match="inputs file not found"):
        samples_from_file(tmp_path / "missing.csv", task)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(RunSetupError, match=r"empty\.txt: the file is empty"):
        samples_from_file(tmp_path / "empty.txt", task)
    with pytest.raises(RunSetupError, match="pasted: no inputs"):
        require_samples([], "pasted")


def test_plan_says_when_a_rewriter_is_needed(store) -> None:
    assert not plan_run(store, "sentiment", ["si.identity"]).needs_transformation_endpoint
    assert plan_run(store, "sentiment", ["sentence.paraphrase"]).needs_transformation_endpoint
    with pytest.raises(RunSetupError, match="repeats must be at least 1"):
        plan_run(store, "sentiment", ["si.identity"]).config(EMBEDDED, repeats=0)


def test_with_sampling_keeps_what_was_not_given() -> None:
    endpoint = Endpoint(name="e", base_url=URL, model="m", temperature=0.3, max_tokens=99)
    assert with_sampling(endpoint) == endpoint
    changed = with_sampling(endpoint, max_tokens=10, concurrency=2)
    assert (changed.temperature, changed.max_tokens, changed.concurrency) == (0.3, 10, 2)


@pytest.mark.parametrize("with_rewriter", [False, True])
def test_run_config_round_trips_through_its_dict(with_rewriter) -> None:
    config = RunConfig(
        endpoint=Endpoint(name="e", base_url=URL, model="m", seed=3, api_key_env="KEY"),
        task_id="qa",
        relation_ids=("si.identity", "ad.distractor"),
        repeats=3,
        seed=5,
        dataset="qa",
        transformation_endpoint=EMBEDDED if with_rewriter else None,
    )
    stored = json.loads(json.dumps(config.to_dict()))  # as a run's config is stored
    rebuilt = RunConfig.from_dict(stored)
    assert rebuilt == config
    assert rebuilt.run_id([Sample({"text": "a"})]) == config.run_id([Sample({"text": "a"})])
