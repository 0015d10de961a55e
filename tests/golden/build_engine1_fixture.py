"""Build ``tests/golden/engine1_mixed.db``: a database judged by engine version 1, defect and all.

Engine 1 (up to commit c969f45) gave the cases of a run that mixes LLM-prompted and other
relations follow-ups of other samples and relations. The repair test reruns this database with
today's engine. The file was made by the old code itself, so this script imports nothing that
engine 1 lacks; it was run from a checkout of that commit:

    git worktree add /tmp/engine1 c969f45
    PYTHONPATH=/tmp/engine1 .venv/bin/python tests/golden/build_engine1_fixture.py
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

FIXTURE = Path(__file__).with_name("engine1_mixed.db")
RELATIONS = ("si.identity", "si.paraphrase", "char.leet", "ad.paraphrase", "sentence.uppercase")
SAMPLE_COUNT = 8
SEED = 5
# Where a rewrite prompt holds its text: our rewrite template, or the NLI sentence prompts.
_REWRITE_TEXT = (
    re.compile(r"<text>\n(.*)\n</text>", re.DOTALL),
    re.compile(r"\nSentence: (.*)\n[^\n]*sentence:$"),
)


def text_to_rewrite(prompt: str) -> str | None:
    """The text a rewrite prompt asks to rewrite; None for a prompt that is not a rewrite."""
    for pattern in _REWRITE_TEXT:
        found = pattern.search(prompt)
        if found:
            return found.group(1)
    return None


def rewritten(text: str) -> str:
    """The rewriter's answer for ``text``: recognisably that text, on one line."""
    return "Put plainly, " + " ".join(text.split())


def model_answer(prompt: str) -> str:
    """The model's answer to a prompt: a label and a tag that name the prompt."""
    digest = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    label = ("positive", "negative", "neutral")[digest % 3]
    return f"{label} (answer to prompt {digest % 10**8:08d})"


def respond_reliably(messages) -> str:
    """The model's answer to a prompt, or the rewriter's to a rewrite prompt (it never fails)."""
    prompt = messages[-1]["content"]
    text = text_to_rewrite(prompt)
    return model_answer(prompt) if text is None else rewritten(text)


def build(path: Path = FIXTURE):
    """The run as engine 1 (or any engine on the import path) judges it; returns its summary."""
    from app.clients.mock import MockClient
    from app.engine.embedder import EmbeddingCache
    from app.engine.runner import Runner
    from core.tasks import BUILTIN_TASKS
    from storage import Store
    from tests.conftest import BagOfWordsEmbedder

    for stale in path.parent.glob(path.name + "*"):
        stale.unlink()
    store = Store(path)
    try:
        runner = Runner(
            store,
            EmbeddingCache(BagOfWordsEmbedder(), store),
            client_factory=MockClient(respond_reliably).factory,
        )
        summary = runner.run_sync(config(), BUILTIN_TASKS["sentiment"], samples())
        fails = store.cases_for([summary.run_id], verdicts=["FAIL"])
        for case in fails[:3]:
            store.add_label(case.id, "confirmed", note="engine 1 fixture", labeler="golden")
        return summary
    finally:
        store.close()


def config():
    from core.run_config import RunConfig
    from core.types import Endpoint

    model = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
    rewriter = Endpoint(name="rw", base_url="mock://rewriter", model="rewriter", kind="mock")
    return RunConfig(
        model,
        "sentiment",
        RELATIONS,
        repeats=2,
        seed=SEED,
        dataset="sentiment",
        transformation_endpoint=rewriter,
    )


def samples():
    from app.inputs.datasets import load_dataset

    return load_dataset("sentiment")[:SAMPLE_COUNT]


if __name__ == "__main__":
    print(build())
