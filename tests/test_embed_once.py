"""Each text is embedded once, and only the texts a case measures (issue 24, "embed each text
once"; StepScore as the SI paper's §3.1 eq. 4 defines it, only where reference steps exist).

``Judge.judge`` embeds a batch's outputs, traces and reference texts in one model call; answers
are embedded only when an oracle compares them by meaning, in one more call.
"""

from __future__ import annotations

from app.engine.embedder import EmbeddingCache
from app.engine.judge import Judge
from app.engine.plan import PlannedCase
from core.tasks import BUILTIN_TASKS
from core.types import Completion, Sample, Verdict
from relations.base import FollowUp
from relations.registry import get_relation
from tests.conftest import BagOfWordsEmbedder


class Recording(BagOfWordsEmbedder):
    """Bag-of-words vectors that remember every text they were asked for, call by call."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return super().embed(texts)


def _case(sample: Sample, relation_id: str, source: str, followup: str, n: int = 0):
    relation = get_relation(relation_id)
    field = next(iter(sample.fields))
    return PlannedCase(
        case_id=f"c{n}",
        sample=sample,
        relation=relation,
        followup_index=n,
        repeat_index=0,
        followup=FollowUp({field: sample.fields[field] + f" ({n})"}, field),
        source_fields=dict(sample.fields),
        outputs={"source": Completion(source), "followup": Completion(followup)},
    )


SOURCE = "Step 1: 3 boxes of 4 apples make 12 apples.\nStep 2: 12 - 2 = 10.\nFinal answer: 10"
FOLLOW = "Step 1: 3 boxes hold 4 apples each, 12.\nStep 2: 12 - 2 is 10.\nFinal answer: 10"
STEPS_SOURCE = ["Step 1: 3 boxes of 4 apples make 12 apples.", "Step 2: 12 - 2 = 10."]
STEPS_FOLLOW = ["Step 1: 3 boxes hold 4 apples each, 12.", "Step 2: 12 - 2 is 10."]


def test_reasoning_without_reference_steps_embeds_outputs_and_traces_only():
    """No reference steps in the batch → no step is embedded (StepScore is not defined), and the
    answers "10" and "10" agree as numbers, so no oracle asks for their vectors: one model call
    with each output and each trace, 2 + 2 texts per case."""
    embedder = Recording()
    judge = Judge(EmbeddingCache(embedder), {})
    sample = Sample({"problem": "3 boxes of 4 apples, 2 sold; how many left?"})
    (case,) = judge.judge(
        [_case(sample, "char.delete", SOURCE, FOLLOW)], BUILTIN_TASKS["reasoning"], "r", "m"
    )
    assert case.verdict is Verdict.PASS
    (batch,) = embedder.batches
    task = BUILTIN_TASKS["reasoning"]
    traces = [" ".join(task.parse(text).trace) for text in (SOURCE, FOLLOW)]
    assert sorted(batch) == sorted([SOURCE, FOLLOW, *traces])
    assert case.step_score_source is None and case.step_score_followup is None


def test_reference_steps_are_embedded_once_per_sample_and_steps_with_them():
    """Two cases of one sample with reference steps: one call holds the reference, its steps and
    each case's outputs, traces and steps, every distinct text once. The steps StepScore embeds
    lose their "Step N:" labels and the "Final answer" line (``core.tasks.scoring_steps``), and the
    two follow-ups share their first step: 2 reference steps + the reference "10" + the source
    output, its trace and its 2 steps (4) + the first follow-up's output, trace and 2 new steps
    (4) + the second's output, trace and 1 new step (3) = 14."""
    embedder = Recording()
    judge = Judge(EmbeddingCache(embedder), {})
    task = BUILTIN_TASKS["reasoning"]
    reference_steps = ("Multiply: 3 × 4 = 12 apples.", "Subtract the sold ones: 12 − 2 = 10.")
    sample = Sample({"problem": "3 boxes of 4 apples, 2 sold?"}, "10", reference_steps)
    other = FOLLOW.replace("is 10", "leaves 10")
    cases = judge.judge(
        [_case(sample, "char.delete", SOURCE, FOLLOW, 0), _case(sample, "char.delete", SOURCE, other, 1)],
        task, "r", "m",
    )  # fmt: skip
    assert all(c.step_score_source is not None for c in cases)
    (batch,) = embedder.batches
    assert len(batch) == len(set(batch)) == 14
    assert set(reference_steps) <= set(batch) and "10" in batch  # the reference is "10"
    assert embedder.calls == [14]


def test_text_answers_are_embedded_when_the_oracle_compares_them():
    """A QA answer is compared by meaning (semantic_similar): the first call embeds the two
    outputs (each its own one-line trace), the second the two normalised answers the oracle
    asked about; the case is judged on their cosine."""
    embedder = Recording()
    cache = EmbeddingCache(embedder)
    judge = Judge(cache, {})
    sample = Sample({"context": "Ada lives in Paris.", "question": "Where does Ada live?"})
    (case,) = judge.judge(
        [_case(sample, "char.delete", "Paris, France", "in Paris")],
        BUILTIN_TASKS["qa"], "r", "m",
    )  # fmt: skip
    assert [sorted(b) for b in embedder.batches] == [
        ["Paris, France", "in Paris"],
        ["in paris", "paris france"],
    ]
    assert case.value == cache.similarity(case.source_answer, case.followup_answer)


def test_a_second_batch_embeds_only_texts_it_has_not_seen():
    """The same source output in a later batch (another relation of the sample) is not embedded
    again: only the new follow-up output and its trace are."""
    embedder = Recording()
    judge = Judge(EmbeddingCache(embedder), {})
    task = BUILTIN_TASKS["reasoning"]
    sample = Sample({"problem": "3 boxes of 4 apples, 2 sold; how many left?"})
    judge.judge([_case(sample, "char.delete", SOURCE, FOLLOW)], task, "r", "m")
    other = "Step 1: twelve apples.\nStep 2: ten are left.\nFinal answer: 10"
    judge.judge([_case(sample, "char.leet", SOURCE, other, 1)], task, "r", "m")
    assert sorted(embedder.batches[1]) == sorted([other, " ".join(task.parse(other).trace)])


def test_the_progress_line_shows_the_cases_waiting_for_vectors_and_the_embedder_rate():
    """600 texts embedded in 2.0 s of waiting → 300 texts/s; 340 answered cases not judged yet.
    Nothing is shown once every answered case is judged."""
    from app.engine.embedder import EmbeddingStats
    from app.engine.progress import Progress

    stats = EmbeddingStats(computed=600, seconds=2.0, in_flight=64)
    progress = Progress(total=1000, done=900, unjudged=340, embedding=stats)
    assert progress.judging_text() == " · 340 to judge · embedder 300 texts/s, 64 in flight"
    assert Progress(total=10, done=10, embedding=stats).judging_text() == ""
    assert EmbeddingStats().describe() == "embedder loading, 0 in flight"


def test_the_send_loop_counts_unjudged_cases(store):
    """A run over the mock client reports, at its end, no case left unjudged, and the progress
    carries the run's embedding statistics."""
    from app.engine.runner import Runner
    from core.run_config import RunConfig
    from core.types import Endpoint

    seen = []
    cache = EmbeddingCache(Recording(), store)
    runner = Runner(store, cache)
    endpoint = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
    config = RunConfig(endpoint=endpoint, task_id="sentiment", relation_ids=("char.delete",))
    samples = [Sample({"text": f"the soup {i} was good"}) for i in range(5)]
    runner.run_sync(config, BUILTIN_TASKS["sentiment"], samples, progress=seen.append)
    assert seen and seen[-1].unjudged == 0
    assert seen[-1].embedding is cache.stats


def test_texts_with_the_same_tokens_are_embedded_once():
    """A reasoning output and its trace joined by spaces differ only in newlines: MiniLM's
    tokenizer gives them the same tokens, so the cache embeds one of them and stores the vector
    under both texts (2 texts asked, 1 embedded)."""
    from app.engine.minilm_onnx import bert_token_key

    class SameTokens(Recording):
        token_key = staticmethod(bert_token_key)

    embedder = SameTokens()
    cache = EmbeddingCache(embedder)
    joined = "Step 1: 3 boxes of 4 apples make 12 apples. Step 2: 12 - 2 = 10. Final answer: 10"
    cache.prefetch([SOURCE, joined])
    assert embedder.batches == [[SOURCE]]
    assert cache.computed == 1
    assert cache.similarity(SOURCE, joined) == 1.0
    assert (cache.vector(SOURCE) == cache.vector(joined)).all()
