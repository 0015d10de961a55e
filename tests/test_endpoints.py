"""Endpoint helpers: key lookup (never stored), Retry-After, connection tests against the fake."""

from __future__ import annotations

import email.utils
import time

import pytest

from app.clients import kind_of
from app.clients.connection import test_connection
from app.clients.endpoint_settings import NO_KEY, resolve_api_key, validate_base_url
from app.clients.openai_compatible import retry_after_seconds
from core.types import Endpoint
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer


def preflight(endpoint: Endpoint) -> str | None:
    """A run's pre-flight: the one the endpoint's kind registered."""
    return kind_of(endpoint).preflight(endpoint)


def test_key_comes_from_env_then_secrets_file(tmp_path, monkeypatch):
    endpoint = Endpoint(name="e", base_url="http://x/v1", model="m", api_key_env="MS_TEST_KEY")
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('MS_TEST_KEY = "from-secrets"\n')
    monkeypatch.delenv("MS_TEST_KEY", raising=False)
    assert resolve_api_key(endpoint, secrets) == "from-secrets"
    monkeypatch.setenv("MS_TEST_KEY", "from-env")
    assert resolve_api_key(endpoint, secrets) == "from-env"
    assert resolve_api_key(Endpoint(name="n", base_url="http://x/v1", model="m")) == NO_KEY


def test_api_key_is_never_written_to_the_database(store, monkeypatch, fake_server, embeddings):
    from app.engine.runner import Runner
    from core.run_config import RunConfig
    from core.tasks import BUILTIN_TASKS
    from core.types import Sample

    monkeypatch.setenv("MS_SECRET_KEY", "sk-very-secret-123")
    endpoint = Endpoint(
        name="k", base_url=fake_server.base_url, model="fake-model", api_key_env="MS_SECRET_KEY"
    )
    store.save_endpoint(endpoint)
    Runner(store, embeddings).run_sync(
        RunConfig(endpoint, "sentiment", ("si.identity",)),
        BUILTIN_TASKS["sentiment"],
        [Sample({"text": "good"})],
    )
    store.close()
    raw = b"".join(p.read_bytes() for p in store_path_files(store.path))
    assert b"sk-very-secret-123" not in raw
    assert b"MS_SECRET_KEY" in raw  # only the variable's name is kept


def store_path_files(path):
    from pathlib import Path

    base = Path(path)
    return [p for p in (base, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def test_retry_after_seconds_and_http_date():
    assert retry_after_seconds({"retry-after": "2.5"}) == 2.5
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds({"retry-after": future}) <= 31
    assert retry_after_seconds({}) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [("", "empty"), ("ftp://host", "http"), ("http://a b", "space")],
)
def test_bad_base_urls_are_explained(url, message):
    with pytest.raises(ValueError, match=message):
        validate_base_url(url)


def test_connection_lists_models_and_chats(fake_endpoint):
    report = test_connection(fake_endpoint)
    assert report.ok and report.models == ("fake-model",) and report.sample_reply


def test_connection_names_a_wrong_model(fake_server):
    report = test_connection(Endpoint(name="w", base_url=fake_server.base_url, model="gpt-x"))
    assert not report.ok and "gpt-x" in report.message and "fake-model" in report.message


def test_connection_to_a_non_openai_server_is_a_message():
    with FakeOpenAIServer(FakeBehaviour(non_openai=True)) as server:
        report = test_connection(Endpoint(name="h", base_url=server.base_url, model="m"))
    assert not report.ok and report.message


def test_connection_to_nothing_is_a_message():
    report = test_connection(Endpoint(name="d", base_url="http://127.0.0.1:9/v1", model="m"))
    assert not report.ok and "connection" in report.message.lower()


# ------------------------------------------------------------------ pre-flight before a run


@pytest.mark.parametrize(
    ("behaviour", "model", "message"),
    [
        (FakeBehaviour(always_fault="401"), "fake-model", "refused the key — HTTP 401"),
        (FakeBehaviour(), "no-such-model", "model 'no-such-model' is not served"),
        (FakeBehaviour(non_openai=True), "fake-model", "not an OpenAI-compatible server"),
        (FakeBehaviour(lists_models=False, always_fault="malformed"), "fake-model",
         "does not answer chat completions"),
    ],
)  # fmt: skip
def test_preflight_stops_a_run_that_cannot_work(behaviour, model, message):
    """What would otherwise become a run of ERROR cases is one line before anything is sent."""
    with FakeOpenAIServer(behaviour) as server:
        problem = preflight(Endpoint(name="p", base_url=server.base_url, model=model))
    assert problem and message in problem, problem


def test_preflight_reports_a_refused_connection():
    with FakeOpenAIServer() as server:
        pass
    problem = preflight(Endpoint(name="p", base_url=server.base_url, model="fake-model"))
    assert problem and problem.startswith("cannot reach") and "connection refused" in problem


@pytest.mark.parametrize(
    "behaviour",
    [FakeBehaviour(), FakeBehaviour(lists_models=False), FakeBehaviour(always_fault="500")],
)
def test_preflight_lets_a_working_or_hiccuping_endpoint_run(behaviour):
    """No models list: one tiny chat decides. A 500 is a hiccup the run's retries handle."""
    with FakeOpenAIServer(behaviour) as server:
        endpoint = Endpoint(name="p", base_url=server.base_url, model="fake-model")
        assert preflight(endpoint) is None
