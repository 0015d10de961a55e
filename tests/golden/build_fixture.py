"""Build ``tests/golden/fixture.db``: the fixed database whose reports and exports are pinned.

The golden test reads the committed file, so this runs only when the fixture is rebuilt on
purpose (then regenerate the golden outputs too and review the diff):

    .venv/bin/python -m tests.golden.build_fixture
    .venv/bin/python -m tests.golden.test_golden_reports --update

It holds the synthetic analysis rows of ``tests/test_analysis_queries.py`` plus real runner runs
against the fake OpenAI server (sentiment and reasoning, rule-based relations, two repeats) and a
few Triage labels, so every column the reports and exports read is filled. A third run mixes
LLM-prompted and rule-based relations (``MIXED_PLAN``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from app.clients import RetryPolicy
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from app.inputs.datasets import load_dataset
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer, echo_sentiment
from tests.golden.build_engine1_fixture import rewritten, text_to_rewrite
from tests.test_analysis_queries import seed_dataset

FIXTURE = Path(__file__).with_name("fixture.db")


def fixture_responder(messages: list[dict[str, str]]) -> str:
    """Sentiment as the fake server's default; reasoning: two steps and a prompt-dependent answer;
    a rewrite prompt: the text to rewrite, recognisably rewritten."""
    prompt = messages[-1]["content"]
    to_rewrite = text_to_rewrite(prompt)
    if to_rewrite is not None:
        return rewritten(to_rewrite)
    if "step by step" not in prompt.lower() and "final answer" not in prompt.lower():
        return echo_sentiment(messages)
    digest = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    answer = 10 + digest % 3
    return (
        f"Step 1: read the problem carefully.\nStep 2: compute the value {answer}.\n"
        f"Final answer: {answer}"
    )


PLANS = [
    ("sentiment", ("si.identity", "char.leet", "word.negation", "sentence.uppercase")),
    ("reasoning", ("si.identity", "rrb.word_reversal", "ad.format", "si.academic")),
]
# LLM-prompted and rule-based relations in one run (the transformation endpoint is the same
# server): engine 1 gave such runs' cases other cases' follow-ups.
MIXED_PLAN = ("sentiment", ("si.paraphrase", "si.identity", "char.delete", "ad.paraphrase"))


def run_plan(store, embeddings, endpoint, task_id: str, relation_ids) -> None:
    runner = Runner(store, embeddings, retry=RetryPolicy(0, 0.0))
    mixed = (task_id, relation_ids) == MIXED_PLAN
    config = RunConfig(
        endpoint=endpoint,
        task_id=task_id,
        relation_ids=relation_ids,
        repeats=2,
        seed=7,
        dataset=task_id,
        transformation_endpoint=endpoint if mixed else None,
    )
    runner.run_sync(config, BUILTIN_TASKS[task_id], load_dataset(task_id)[:6])


def build(path: Path = FIXTURE) -> None:
    for stale in path.parent.glob(path.name + "*"):
        stale.unlink()
    store = Store(path)
    seed_dataset(store)
    embeddings = EmbeddingCache(BagOfWordsEmbedder(), store)
    with FakeOpenAIServer(FakeBehaviour(responder=fixture_responder)) as server:
        endpoint = Endpoint(
            name="fake", base_url=server.base_url, model="fake-model", concurrency=4
        )
        for task_id, relation_ids in (*PLANS, MIXED_PLAN):
            run_plan(store, embeddings, endpoint, task_id, relation_ids)
    fails = [case.id for case in store.cases_for(verdicts=["FAIL"])]
    labels = ["confirmed", "fp_oracle", "fp_invalid_followup", "unsure"]
    for case_id, label in zip(fails[: len(labels)], labels, strict=True):
        store.add_label(case_id, label, note="golden fixture", labeler="golden")
    store.close()


if __name__ == "__main__":
    build()
