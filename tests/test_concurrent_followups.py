"""Identical runs of the WordNet relations, side by side, build identical follow-ups.

Regression for a WordNet reader shared without a lock by the runner's 8-thread follow-up pool:
three identical ``word.antonym`` / ``word.synonym`` runs gave three different follow-up sets with
14–47% spurious ERRORs, and ``rrb.opposites`` on the bundled reasoning dataset hung (0 cases
stored). Here three runs of one config go at once (three threads, each a runner with its own
store), from a cold lookup cache, and must finish with the same follow-ups byte for byte and no
ERROR.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from app.clients.mock import MockClient
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from app.inputs.datasets import load_dataset
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Verdict
from relations import wordnet
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

REASONING = BUILTIN_TASKS["reasoning"]
WORDNET_RELATIONS = ("word.antonym", "word.synonym", "rrb.opposites")
MOCK_ENDPOINT = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")

pytestmark = [
    pytest.mark.slow,  # loading WordNet into NLTK takes seconds, once per process
    pytest.mark.skipif(
        not (wordnet.SOURCE_DIR / "data.noun").is_file(),
        reason="apt-get install wordnet-base wordnet-sense-index",
    ),
]


def reasoning_model(messages) -> str:
    """A deterministic 'model' for the reasoning prompt: two steps and a final answer."""
    return "Step 1: Read the problem.\nStep 2: Compute.\nFinal answer: 42"


def _one_run(folder, endpoint, client_factory=None):
    store = Store(folder / "runs.db")
    try:
        runner = Runner(
            store,
            EmbeddingCache(BagOfWordsEmbedder(), store),
            **({"client_factory": client_factory} if client_factory else {}),
        )
        config = RunConfig(endpoint, "reasoning", WORDNET_RELATIONS, dataset="reasoning")
        summary = runner.run_sync(config, REASONING, load_dataset("reasoning"))
        cases = store.cases_for([summary.run_id])
    finally:
        store.close()
    followups = [
        (c.sample_id, c.relation_id, c.followup_index, c.followup_input, c.verdict, c.reason)
        for c in cases
    ]
    return summary, cases, followups


def _three_at_once(tmp_path, endpoint, client_factory=None):
    wordnet.load_wordnet()  # the folder build is not under test; the lookups are
    wordnet.clear_lookup_caches()
    folders = [tmp_path / f"run{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(_one_run, f, endpoint, client_factory) for f in folders]
        return [future.result(timeout=300) for future in futures]


def _assert_identical_and_clean(results):
    summaries = [summary for summary, _, _ in results]
    assert [s.status for s in summaries] == ["done"] * 3
    for _, cases, _ in results:
        errors = [c.reason for c in cases if c.verdict is Verdict.ERROR]
        assert errors == []
        # Every (sample, relation) pair is stored: nothing hung or got lost.
        samples = {c.sample_id for c in cases}
        assert len(samples) == len(load_dataset("reasoning"))
        assert {c.relation_id for c in cases} == set(WORDNET_RELATIONS)
    first = results[0][2]
    made = [row for row in first if row[3] is not None]
    assert len(made) > 20  # real follow-ups were made, not only SKIPs
    assert all(followups == first for _, _, followups in results[1:])


def test_three_concurrent_runs_with_the_in_process_model(tmp_path):
    mock = MockClient(reasoning_model)
    _assert_identical_and_clean(_three_at_once(tmp_path, MOCK_ENDPOINT, mock.factory))


def test_three_concurrent_runs_against_a_local_openai_server(tmp_path):
    with FakeOpenAIServer(FakeBehaviour(responder=reasoning_model)) as server:
        endpoint = Endpoint(
            name="fake", base_url=server.base_url, model="fake-model", concurrency=8
        )
        _assert_identical_and_clean(_three_at_once(tmp_path, endpoint))
