"""StepScore / AvgStepScore as the semantic-invariance paper defines them (§3.1, eq. 4).

StepScore_o(r, r*) = max_z cos(e_{r_o}, e_{r*_z}) — each step of the output's trace scores its
highest cosine to *any* reference step (reordering allowed); AvgStepScore = the mean of those
scores over the output's steps. The runner stores it per output for samples with reference
steps, and the Analysis summary and ``report --json`` show it with its change per relation.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.analysis.aggregates import step_scores
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from app.reports.summary import report
from core.case_filter import CaseFilter
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS, scoring_steps
from core.types import Endpoint, Sample
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer

# Hand-picked 2-d unit vectors, so every cosine is a number worked out by hand.
VECTORS = {
    "ref one": (1.0, 0.0),
    "ref two": (0.0, 1.0),
    "out A": (1.0, 0.0),  # cos 1.0 with "ref one"
    "out B": (0.6, 0.8),  # cos 0.6 with "ref one", 0.8 with "ref two" → 0.8
    "out C": (0.0, 1.0),  # cos 1.0 with "ref two"
}


class TableEmbedder:
    """Looks every text up in ``VECTORS`` (a fixed, hand-checkable embedding)."""

    name = "test-table"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def test_avg_step_score_hand_example():
    """Eq. 4: (max(1, 0) + max(0.6, 0.8) + max(0, 1)) / 3 = (1 + 0.8 + 1) / 3 = 0.9333."""
    cache = EmbeddingCache(TableEmbedder())
    score = cache.avg_step_score(["out A", "out B", "out C"], ["ref one", "ref two"])
    assert score == pytest.approx(2.8 / 3, abs=1e-6)


def test_step_numbers_and_the_final_answer_line_are_not_steps():
    """Issue 23 item 6 (SI §3.1, eq. 4: output steps r_o against reference steps r*_z, which carry
    no numbering and no final-answer line): "Step 1: out A", "**Step 2:** out B" and "Final
    answer: 12" score as "out A" and "out B" only: (max(1, 0) + max(0.6, 0.8)) / 2 = 1.8 / 2 =
    0.9. Embedding the raw lines would look up texts the table does not have (and in a real
    embedder the shared "Step N:" and the answer line would move every cosine)."""
    trace = ("Step 1: out A", "**Step 2:** out B", "Final answer: 12")
    assert scoring_steps(trace) == ("out A", "out B")
    cache = EmbeddingCache(TableEmbedder())
    score = cache.avg_step_score(scoring_steps(trace), ["ref one", "ref two"])
    assert score == pytest.approx(0.9, abs=1e-6)
    assert scoring_steps(("step 3) out C", "The final answer is 4.", "Step 4:")) == ("out C",)
    assert scoring_steps(("Stepwise, out C",)) == ("Stepwise, out C",)  # not a step number


def test_step_order_does_not_matter():
    """Eq. 4 allows step reordering: the reversed trace scores the same."""
    cache = EmbeddingCache(TableEmbedder())
    forward = cache.avg_step_score(["out A", "out B", "out C"], ["ref one", "ref two"])
    backward = cache.avg_step_score(["out C", "out B", "out A"], ["ref two", "ref one"])
    assert backward == pytest.approx(forward)


def test_no_steps_no_score():
    cache = EmbeddingCache(TableEmbedder())
    assert cache.avg_step_score([], ["ref one"]) is None
    assert cache.avg_step_score(["out A"], []) is None


def test_each_distinct_step_is_embedded_once_in_one_batch():
    calls: list[int] = []

    class Counting(TableEmbedder):
        def embed(self, texts):
            calls.append(len(texts))
            return super().embed(texts)

    cache = EmbeddingCache(Counting())
    cache.avg_step_score(["out A", "out B", "out A"], ["ref one", "ref two"])
    cache.avg_step_score(["out B"], ["ref one", "ref two"])
    assert calls == [4]


REASONING = BUILTIN_TASKS["reasoning"]
REFERENCE_STEPS = (
    "Convert the time to seconds: 15 min is 900 s.",
    "Distance is speed times time: 6 m/s times 900 s is 5400 m.",
)


def _answer(messages):
    text = messages[-1]["content"]
    if "Please" in text:  # the follow-up: steps in the other order, one of them off-topic
        return "1. Distance is speed times time.\n2. The weather was sunny.\nFinal answer: 5.4 km"
    return (
        "1. Convert the time to seconds: 15 min is 900 s.\n"
        "2. Distance is speed times time: 6 m/s times 900 s is 5400 m.\nFinal answer: 5.4 km"
    )


def test_runner_stores_step_scores_and_report_shows_them(store, embeddings):
    from relations.base import Expectation, Relation, RelationKind

    please = Relation(
        id="test.please", name="please", family="test", category="test", description="d",
        example="x", kind=RelationKind.RULE, expectation=Expectation.EQUIVALENT,
        transform=lambda text, ctx: text + " Please.",
    )  # fmt: skip
    samples = [
        Sample(
            {"problem": "A cyclist rides 6 m/s for 15 min. How far?"}, "5.4 km", REFERENCE_STEPS
        ),
        Sample({"problem": "What is 2 + 2?"}, "4"),  # no reference steps → no StepScore
    ]
    with FakeOpenAIServer(FakeBehaviour(responder=_answer)) as server:
        endpoint = Endpoint(name="fake", base_url=server.base_url, model="fake-model")
        runner = Runner(store, embeddings, custom_relations=[please])
        config = RunConfig(endpoint=endpoint, task_id="reasoning", relation_ids=("test.please",))
        summary = runner.run_sync(config, REASONING, samples)
    cases = {c.source_input["problem"]: c for c in store.cases_for([summary.run_id])}
    with_steps = cases[samples[0].fields["problem"]]
    # The "Final answer: 5.4 km" line is not a step (issue 23 item 6).
    source_steps = scoring_steps(REASONING.parse(with_steps.source_output).trace)
    assert len(source_steps) == 2
    expected_source = embeddings.avg_step_score(source_steps, REFERENCE_STEPS)
    assert with_steps.step_score_source == pytest.approx(expected_source)
    assert with_steps.step_score_followup is not None
    assert with_steps.step_score_followup < with_steps.step_score_source
    without = cases["What is 2 + 2?"]
    assert without.step_score_source is None and without.step_score_followup is None

    (row,) = step_scores(store, CaseFilter())
    assert row["n"] == 1
    assert row["step_score_source"] == pytest.approx(with_steps.step_score_source)
    assert row["step_score_delta"] == pytest.approx(
        with_steps.step_score_followup - with_steps.step_score_source
    )
    document = report(store)
    (reported,) = document["step_score"]
    assert reported["relation_id"] == "test.please"
    assert reported["step_score_delta"] == pytest.approx(row["step_score_delta"])
