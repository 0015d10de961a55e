"""Planning a run: every (sample, relation) job's follow-ups, made and gated, as planned cases.

Usable on its own: batch export plans without sending, and a few cases can be planned at a time
(shrinking a violation, adaptive sampling) with ``plan_cases`` on any subset of samples.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from app.engine.calls import CallCache, TransformationError, candidate_params
from app.engine.embedder import EmbeddingCache
from app.engine.fluency import embedded_rewriter
from core.tasks import Task
from core.types import Completion, Sample, content_hash
from relations.apply import Candidates, SkippedFollowUp, generate_followups
from relations.base import FollowUp, Relation, RelationKind
from relations.english.close_rewrite import SmallRewriter
from relations.validity import gate_followup

if TYPE_CHECKING:
    from core.run_config import RunConfig


@dataclass
class PlannedCase:
    case_id: str
    sample: Sample
    relation: Relation
    followup_index: int
    repeat_index: int
    followup: FollowUp | None = None
    skip_reason: str | None = None
    error: str | None = None
    source_fields: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Completion] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)  # the follow-up's (rewrite candidates)


class Partners(Sequence[Sample]):
    """The samples after ``index``, wrapping round to those before it, without copying them.

    Every (sample, relation) job of a run's plan is pending at once: a copied list each made the
    plan's memory grow with the square of the inputs (5,000 inputs × 10 relations held 2 GB).
    """

    __slots__ = ("_samples", "_start")

    def __init__(self, samples: list[Sample], index: int) -> None:
        self._samples = samples
        self._start = index + 1

    def __len__(self) -> int:
        return max(len(self._samples) - 1, 0)

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        size = len(self)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError("partner index out of range")
        return self._samples[(self._start + position) % len(self._samples)]


@dataclass
class PlannedRun:
    """A run planned but not sent (``Runner.plan_sync``): its id and every case it will have."""

    run_id: str
    # Left out of repr: Python 3.11's asyncio.run formats the main task, result included, when
    # it ends (restoring the SIGINT handler), and 100,000 cases took seconds and 500 MB to print.
    cases: list[PlannedCase] = field(repr=False)


# Follow-ups that need no model are made this many jobs to an executor call: one call per job
# cost more in hand-offs between threads than the follow-ups themselves (100,000 of them took
# most of a batch export's time).
PLAN_BATCH = 256


def job_batches(jobs: Sequence[tuple[int, Sample, Relation]]) -> list[list[int]]:
    """The positions of the plan's jobs, in batches: an LLM-prompted relation's job alone (its
    rewrites wait on the model, concurrently with the others), the rest ``PLAN_BATCH`` at a time.
    The batches are not in job order, so callers put results back by position."""
    batches: list[list[int]] = []
    current: list[int] = []
    for position, (_, _, relation) in enumerate(jobs):
        if relation.kind == RelationKind.LLM:
            batches.append([position])
            continue
        current.append(position)
        if len(current) >= PLAN_BATCH:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


async def plan_cases(
    run_id: str,
    config: RunConfig,
    task: Task,
    samples: Sequence[Sample],
    relations: Sequence[Relation],
    transform_calls: CallCache,
    *,
    embeddings: EmbeddingCache,
    gate_on: Executor,
) -> list[PlannedCase]:
    """The run's cases: each sample × relation × follow-up × repeat, follow-ups gated.
    LLM-prompted rewrites go through ``transform_calls``; the gate embeds on ``gate_on`` (the
    run's evaluation thread, with the rest of its embedding)."""
    jobs = [(i, s, r) for i, s in enumerate(samples) for r in relations]
    loop = asyncio.get_running_loop()
    ask = _candidate_rewriter(transform_calls, loop)
    # No worked examples, not even for the embedded SmolLM2: on 20 texts × 4 relations it copied
    # them into 72 of 229 candidates, and gave 2 valid judged rewrites against 8 without them
    # (bench/bench_rewriter_models.py against its --few-shot run).
    similarity = _SimilarityOn(gate_on, embeddings)
    small_rewriter = embedded_rewriter() if transform_calls.endpoint.embedded else None
    candidates = Candidates(
        config.rewrite_candidates, ask, similarity, small_rewriter=small_rewriter
    )
    rewrite = partial(ask, candidate=0)
    results = await _make_followups(
        jobs, list(samples), task, config.seed, rewrite, candidates, nli_target=config.nli_target
    )
    planned: list[PlannedCase] = []
    for (_, sample, relation), result in zip(jobs, results, strict=True):
        planned += _cases_of(run_id, sample, relation, result, config.repeats)
    await asyncio.wrap_future(gate_on.submit(gate_cases, planned, embeddings, small_rewriter))
    return planned


def _candidate_rewriter(
    transform_calls: CallCache, loop: asyncio.AbstractEventLoop
) -> Callable[[str, int], str]:
    def rewrite(prompt: str, candidate: int) -> str:
        # Runs in a worker thread: the call itself goes through the loop's cache and client.
        messages = [{"role": "user", "content": prompt}]
        params = candidate_params(transform_calls.params, candidate)
        call = transform_calls.complete(messages, 0, params)
        completion: Completion = asyncio.run_coroutine_threadsafe(call, loop).result()
        if not completion.ok:
            raise TransformationError(f"transformation endpoint failed: {completion.error}")
        return completion.text or ""

    return rewrite


@dataclass(frozen=True)
class _SimilarityOn:
    """Input similarity for ranking and gating rewrite candidates, computed on the run's
    evaluation thread (where the rest of its embedding happens) rather than in the
    transformation threads. ``prefetch`` embeds many texts in one batch: the gate's clause check
    asks for a dozen pairs per candidate, which one at a time would be a dozen round trips to
    the embedding process."""

    gate_on: Executor
    embeddings: EmbeddingCache

    def __call__(self, a: str, b: str) -> float:
        return self.gate_on.submit(self.embeddings.similarity, a, b).result()

    def prefetch(self, texts: list[str]) -> None:
        self.gate_on.submit(self.embeddings.prefetch, texts).result()


async def _make_followups(
    jobs: list[tuple[int, Sample, Relation]],
    every_sample: list[Sample],
    task: Task,
    seed: int,
    rewrite: Callable[[str], str],
    candidates: Candidates,
    *,
    nli_target: str,
) -> list[Any]:
    """Each job's follow-ups (or the exception that stopped them), in job order."""
    loop = asyncio.get_running_loop()
    # Transformations that call the LLM block their thread until the loop answers. They get
    # a pool of their own: in the loop's default executor they could take every thread the
    # HTTP client itself needs (DNS lookups run there), and the run would deadlock.
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="morphscope-transform")
    fields = list(task.perturbable_fields)

    def make_all(batch: list[tuple[int, Sample, Relation]]) -> list[Any]:
        made: list[Any] = []
        for index, sample, relation in batch:
            try:
                made.append(
                    generate_followups(
                        relation,
                        sample,
                        task,
                        fields,
                        run_seed=seed,
                        partners=Partners(every_sample, index),
                        rewrite=rewrite,
                        candidates=candidates,
                        nli_target=nli_target,
                    )
                )
            except Exception as exc:
                made.append(exc)
        return made

    async def followups_for(batch: list[tuple[int, Sample, Relation]]) -> list[Any]:
        try:
            return await loop.run_in_executor(pool, make_all, batch)
        except Exception as exc:
            return [exc] * len(batch)

    batches = job_batches(jobs)
    try:
        made = await asyncio.gather(
            *(followups_for([jobs[position] for position in batch]) for batch in batches)
        )
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    # The batches are not in job order (an LLM job is a batch of its own at once, rule jobs
    # wait to fill theirs): each result goes back to the position of the job that made it.
    results: list[Any] = [None] * len(jobs)
    for batch, batch_results in zip(batches, made, strict=True):
        for position, result in zip(batch, batch_results, strict=True):
            results[position] = result
    return results


def _cases_of(
    run_id: str, sample: Sample, relation: Relation, result: Any, repeats: int
) -> list[PlannedCase]:
    """The planned cases of one job: one per follow-up (or failure) and repeat."""
    if isinstance(result, BaseException):
        items: list[FollowUp | SkippedFollowUp | str] = [f"{type(result).__name__}: {result}"]
    else:
        items = list(result) or [SkippedFollowUp("*", "the relation made no follow-up")]
    cases = []
    for index, item in enumerate(items):
        for repeat in range(repeats):
            case = PlannedCase(
                case_id=content_hash([run_id, sample.id, relation.id, index, repeat])[:20],
                sample=sample,
                relation=relation,
                followup_index=index,
                repeat_index=repeat,
                source_fields=dict(sample.fields),
            )
            if isinstance(item, str):
                case.error = item
            elif isinstance(item, SkippedFollowUp):
                case.skip_reason = item.reason
                case.details = item.details
            else:
                case.followup = item
                case.details = item.details
                if item.source_fields:
                    case.source_fields = dict(item.source_fields)
            cases.append(case)
    return cases


def gate_cases(
    planned: list[PlannedCase],
    embeddings: EmbeddingCache,
    small_rewriter: SmallRewriter | None = None,
) -> None:
    """The validity gate: identical or meaning-breaking follow-ups are SKIPped before sending.
    ``small_rewriter``: the rewrites came from the embedded model, held to the closer rule."""
    needs_similarity = [
        c for c in planned if c.followup and c.relation.similarity_floor is not None
    ]
    texts: list[str] = []
    for case in needs_similarity:
        texts += [v for v in case.source_fields.values() if isinstance(v, str)]
        texts += [v for v in case.followup.fields.values() if isinstance(v, str)]
    if texts:
        embeddings.prefetch(texts)
    # The repeats of a follow-up share it (and its source): it is gated once.
    reasons: dict[int, str | None] = {}
    for case in planned:
        if case.followup is None:
            continue
        if id(case.followup) not in reasons:
            reasons[id(case.followup)] = gate_followup(
                case.relation,
                case.source_fields,
                case.followup,
                embeddings.similarity,
                small_rewriter=small_rewriter,
            )
        reason = reasons[id(case.followup)]
        if reason:
            case.skip_reason = reason
