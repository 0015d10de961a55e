"""Model clients: the registry of endpoint kinds, the mock client, and kind-stable ids."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.clients import ModelClient, RetryPolicy, client_kind, client_kinds, make_client
from app.clients.mock import MockClient
from app.clients.openai_compatible import OpenAIClient
from app.embedded import embedded_endpoint
from app.runner import RunConfig
from core.types import Completion, Endpoint, Sample
from storage import Store

OPENAI = Endpoint(
    name="n", base_url="http://127.0.0.1:8000/v1/", model="m", api_key_env="K", seed=3
)
EMBEDDED = embedded_endpoint(port=41234)
SAMPLES = [Sample({"text": "good"}), Sample({"text": "bad"})]
MESSAGES = [{"role": "user", "content": "hi"}]


# ------------------------------------------------------------ ids do not move with the kind


def test_run_ids_are_the_ones_computed_before_endpoints_had_a_kind():
    """Regression: replacing ``Endpoint.embedded`` by a kind must not change any run id (a
    changed id would orphan every stored run from its resume and its cache)."""
    assert RunConfig(OPENAI, "sentiment", ("si.identity",)).run_id(SAMPLES) == "e71591346396"
    config = RunConfig(EMBEDDED, "sentiment", ("si.identity", "char.typo"))
    assert config.run_id(SAMPLES) == "371c015da70d"
    mixed = RunConfig(OPENAI, "sentiment", ("si.identity",), transformation_endpoint=EMBEDDED)
    assert mixed.run_id(SAMPLES) == "c088cfc4a447"


def test_call_keys_are_the_ones_computed_before_endpoints_had_a_kind():
    openai_key = Store.call_key(
        OPENAI.cache_base_url, OPENAI.model, OPENAI.sampling_params(), MESSAGES, 0
    )
    assert openai_key == "cfb96075fd277524a533045f863d45296663cd0ba372bb2eba86259bb5298724"
    embedded_key = Store.call_key(
        EMBEDDED.cache_base_url, EMBEDDED.model, EMBEDDED.sampling_params(), MESSAGES, 1
    )
    assert embedded_key == "497e87883ded83b92693b48d84f910dba755109c653165e45e9d21c4349873c9"


def test_stored_run_config_keeps_the_embedded_flag_shape():
    mixed = RunConfig(OPENAI, "sentiment", ("si.identity",), transformation_endpoint=EMBEDDED)
    data = mixed.to_dict()
    assert list(data["endpoint"])[-1] == "embedded" and data["endpoint"]["embedded"] is False
    assert data["transformation_endpoint"]["embedded"] is True
    assert "kind" not in json.dumps(data)


@pytest.mark.parametrize(
    "endpoint",
    [OPENAI, EMBEDDED, Endpoint(name="b", base_url="http://x/v1", model="m", kind="batch")],
)
def test_endpoint_dict_round_trips(endpoint):
    assert Endpoint.from_dict(json.loads(json.dumps(endpoint.to_dict()))) == endpoint


def test_a_new_kind_is_named_in_the_dict_and_in_the_run_id():
    # Not "batch": a batch endpoint's run is the run of the endpoint it stands for (test_batch).
    other = Endpoint(name="b", base_url="http://x/v1", model="m", kind="other")
    plain = Endpoint(name="b", base_url="http://x/v1", model="m")
    assert other.to_dict()["kind"] == "other" and not other.embedded
    assert RunConfig(other, "sentiment", ("si.identity",)).run_id(SAMPLES) != RunConfig(
        plain, "sentiment", ("si.identity",)
    ).run_id(SAMPLES)


def test_embedded_endpoints_share_one_cache_url_whatever_the_port():
    assert EMBEDDED.embedded and EMBEDDED.cache_base_url == "embedded://local"
    assert embedded_endpoint(port=5).cache_base_url == "embedded://local"
    assert not OPENAI.embedded and OPENAI.cache_base_url == "http://127.0.0.1:8000/v1"


# ------------------------------------------------------------ stored endpoints


def test_stored_endpoints_keep_their_kind(store):
    mock = Endpoint(name="m", base_url="http://x/v1", model="m", kind="mock", temperature=0.3)
    for endpoint in (OPENAI, EMBEDDED, mock):
        store.save_endpoint(endpoint)
        assert store.endpoint(endpoint.name) == endpoint


def test_endpoints_saved_before_kinds_load_with_their_kind(tmp_path):
    """Regression: rows written before the ``kind`` column get it from the ``embedded`` flag."""
    path = tmp_path / "old.db"
    old = Store(path)
    # Back to the schema before the kind migration, then rows as the older build wrote them.
    old._db.execute("ALTER TABLE endpoints DROP COLUMN kind")
    old._db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm004_endpoint_kind'")
    for name, flag in (("local", 1), ("remote", 0)):
        old._db["endpoints"].insert(
            {"name": name, "base_url": "http://127.0.0.1:1/v1", "model": "m", "params": "{}",
             "embedded": flag, "created_at": "2026-01-01T00:00:00+00:00"}
        )  # fmt: skip
    old.close()
    store = Store(path)
    try:
        assert store.endpoint("local").kind == "embedded" and store.endpoint("local").embedded
        assert store.endpoint("remote").kind == "openai"
    finally:
        store.close()


# ------------------------------------------------------------ the registry


def test_builtin_kinds_are_registered():
    assert {"openai", "embedded", "mock"} <= set(client_kinds())


def test_make_client_picks_the_factory_of_the_endpoints_kind():
    async def build() -> list[ModelClient]:
        clients = [make_client(e) for e in (OPENAI, EMBEDDED)]
        clients.append(make_client(Endpoint(name="x", base_url="mock://", model="m", kind="mock")))
        for client in clients:
            await client.close()
        return clients

    openai_client, embedded_client, mock_client = asyncio.run(build())
    assert isinstance(openai_client, OpenAIClient) and isinstance(embedded_client, OpenAIClient)
    assert isinstance(mock_client, MockClient)
    assert all(isinstance(c, ModelClient) for c in (openai_client, mock_client))


def test_an_unknown_kind_is_a_readable_error():
    with pytest.raises(ValueError, match=r"unknown endpoint kind 'nope'.*openai"):
        make_client(Endpoint(name="x", base_url="http://x/v1", model="m", kind="nope"))


def test_a_kind_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="registered twice"):
        client_kind("openai")(lambda endpoint, retry: MockClient())


def test_the_openai_client_gets_the_runners_retry_policy():
    async def build() -> OpenAIClient:
        client = make_client(OPENAI, RetryPolicy(max_retries=1, base_delay_s=0.0))
        await client.close()
        return client

    client = asyncio.run(build())
    assert client.retry == RetryPolicy(max_retries=1, base_delay_s=0.0)


# ------------------------------------------------------------ the mock client


def _ask(client: MockClient, *prompts: str) -> list[Completion]:
    async def ask() -> list[Completion]:
        return await asyncio.gather(
            *(
                client.complete([{"role": "user", "content": p}], {"temperature": 0})
                for p in prompts
            )
        )

    return asyncio.run(ask())


def test_mock_answers_from_its_script_and_records_calls():
    mock = MockClient({"a": "one", "b": Completion(text="two", usage={"prompt_tokens": 1})})
    one, two, missing = _ask(mock, "a", "b", "c")
    assert one.text == "one" and two.usage == {"prompt_tokens": 1}
    assert not missing.ok and "no answer" in missing.error
    assert mock.prompts == ["a", "b", "c"] and mock.calls[0].params == {"temperature": 0}


def test_mock_errors_are_completions_not_exceptions():
    def responder(messages):
        if "boom" in messages[-1]["content"]:
            raise ConnectionError("refused")
        return "fine"

    scripted = MockClient({"x": TimeoutError("took too long")}, default="ok")
    assert [c.error for c in _ask(scripted, "x", "y")] == ["TimeoutError: took too long", None]
    assert [c.error for c in _ask(MockClient(responder), "boom", "calm")] == [
        "ConnectionError: refused",
        None,
    ]


def test_mock_echoes_by_default_and_counts_concurrency():
    mock = MockClient(latency_s=0.02, concurrency=2)
    answers = _ask(mock, *[f"p{i}" for i in range(6)])
    assert [a.text for a in answers] == [f"p{i}" for i in range(6)]
    assert mock.max_in_flight == 2 and mock.in_flight == 0
    unlimited = MockClient(latency_s=0.02)
    _ask(unlimited, *[f"p{i}" for i in range(6)])
    assert unlimited.max_in_flight == 6
