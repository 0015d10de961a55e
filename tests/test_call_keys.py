"""The call cache's key: it changes whenever what the endpoint would answer can change, and only
then. A key that ignored the model or a sampling parameter would hand one model's answers to
another (the audit planted exactly that, and only a pinned hash noticed)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from app.clients.mock import MockClient
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from core.identity import call_key
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder

_words = st.text(alphabet="abcxyz /:", min_size=1, max_size=8)
_params = st.fixed_dictionaries(
    {
        "temperature": st.sampled_from([0.0, 0.7, 1.0]),
        "top_p": st.sampled_from([1.0, 0.9]),
        "max_tokens": st.sampled_from([64, 256]),
        "seed": st.sampled_from([None, 0, 1]),
    }
)
_messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": _words}),
    min_size=1,
    max_size=2,
)
_calls = st.tuples(_words, _words, _params, _messages, st.integers(0, 3))


def _normalised(call):
    base_url, model, params, messages, repeat = call
    return (base_url.rstrip("/"), model, sorted(params.items(), key=repr), messages, repeat)


@given(_calls, _calls)
def test_two_calls_share_a_key_exactly_when_they_are_the_same_call(first, second):
    same = _normalised(first) == _normalised(second)
    assert (call_key(*first) == call_key(*second)) is same


@given(_calls, st.integers(0, 4), st.data())
def test_changing_any_one_part_of_a_call_changes_its_key(call, part, data):
    changed = list(call)
    if part == 2:  # one sampling parameter
        name = data.draw(st.sampled_from(sorted(call[2])))
        changed[2] = {**call[2], name: data.draw(st.sampled_from([0.5, 2, "x", None]))}
    else:
        changed[part] = data.draw({0: _words, 1: _words, 3: _messages, 4: st.integers(0, 3)}[part])
    if _normalised(changed) != _normalised(call):
        assert call_key(*changed) != call_key(*call)


def test_a_rerun_under_another_model_or_sampling_parameter_sends_every_call_again(tmp_path):
    """Through the runner: the same config reruns from the cache, while another model name or
    temperature on the same server makes every call anew."""
    store = Store(tmp_path / "keys.db")
    samples = [
        Sample({"text": t})
        for t in ("The soup was good.", "The room was cold.", "The film was fine, I guess.")
    ]
    task = BUILTIN_TASKS["sentiment"]
    base = Endpoint(name="m", base_url="mock://server", model="model-a", kind="mock")

    def calls_for(endpoint: Endpoint) -> int:
        mock = MockClient(lambda messages: "positive")
        runner = Runner(
            store, EmbeddingCache(BagOfWordsEmbedder(), store), client_factory=mock.factory
        )
        runner.run_sync(RunConfig(endpoint, task.id, ("sentence.uppercase",)), task, samples)
        return len(mock.calls)

    first = calls_for(base)
    assert first == 2 * len(samples)
    assert calls_for(base) == 0
    assert calls_for(dataclasses.replace(base, model="model-b")) == first
    assert calls_for(dataclasses.replace(base, temperature=0.9)) == first
    assert calls_for(dataclasses.replace(base, max_tokens=17)) == first
    assert calls_for(dataclasses.replace(base, name="renamed")) == 0  # a name is not the call
    store.close()
