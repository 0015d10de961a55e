"""The runner shared by the Probe page, the CLI, batch mode and the demo.

A run = endpoint × task × relations × samples (× repeats), in four stages, each its own module:
``plan`` makes and gates the follow-ups (LLM-prompted ones through the transformation endpoint,
concurrently); ``send`` sends every distinct prompt once (concurrently, retried, cached in SQLite
by content, see ``calls``); ``judge`` parses, applies the oracle and measures; ``write`` records
cases and answers as they complete. A failed call, an unparseable output or an inapplicable
relation becomes an ERROR or SKIP case: the run itself never dies, and a run that is interrupted
resumes without repeating finished calls or cases.

``Runner`` holds only what outlives a run (the store, the embedder, settings); everything about
one run lives in its ``RunContext``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from app.clients import ClientFactory, ModelClient, RetryPolicy, make_client
from app.engine.calls import CallCache, save_answers, transform_params
from app.engine.embedder import EmbeddingCache
from app.engine.judge import Judge
from app.engine.plan import PlannedCase, PlannedRun, plan_cases
from app.engine.progress import Progress, ProgressCallback, RunSummary, error_kinds
from app.engine.send import STALL_AFTER_S, SendLoop
from app.engine.write import RunWorkers
from core.engine_version import ENGINE_VERSION, defects_touching
from core.run_config import RunConfig
from core.tasks import Task
from core.types import Sample, Verdict
from relations.base import Relation
from storage import Store
from storage.run_verbs import RunDefinition

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    """One run while it goes: made by ``Runner.execute``, dropped when the run ends."""

    run_id: str
    config: RunConfig
    task: Task
    samples: Sequence[Sample]
    relations: list[Relation]
    state: Progress
    client: ModelClient
    transform_calls: CallCache
    workers: RunWorkers
    # Every case the plan makes, settled ones included (``plan_and_record`` fills it).
    planned: list[PlannedCase] = field(default_factory=list)

    @property
    def transform_client(self) -> ModelClient:
        return self.transform_calls.client


class Runner:
    """Executes runs. Use ``run_sync`` from plain code and ``execute`` from async code."""

    def __init__(
        self,
        store: Store,
        embeddings: EmbeddingCache,
        *,
        custom_relations: Sequence[Relation] = (),
        retry: RetryPolicy | None = None,
        thresholds: dict[str, float] | None = None,
        client_factory: ClientFactory = make_client,
        stall_after_s: float = STALL_AFTER_S,
    ) -> None:
        """``client_factory`` builds the client for an endpoint; by default the one registered
        for the endpoint's kind (tests pass a mock's). A run with no finished case for
        ``stall_after_s`` stops as interrupted."""
        self.store = store
        self.stall_after_s = stall_after_s
        self.client_factory = client_factory
        self.embeddings = embeddings
        self.custom_relations = list(custom_relations)
        self.retry = retry
        self.thresholds = thresholds if thresholds is not None else store.threshold_overrides()

    def run_sync(
        self,
        config: RunConfig,
        task: Task,
        samples: Sequence[Sample],
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> RunSummary:
        return asyncio.run(self.execute(config, task, samples, progress=progress, cancel=cancel))

    async def execute(
        self,
        config: RunConfig,
        task: Task,
        samples: Sequence[Sample],
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> RunSummary:
        started = time.perf_counter()
        relations = self.relations_for(config, samples)
        run_id = config.run_id(samples)
        if self._embeddings_needed(run_id) or self._needs_repair(run_id, task, relations):
            # Loading the model takes seconds of CPU: it happens beside the first calls.
            self.embeddings.warm_up()
        context = self.start_run(run_id, config, task, samples, relations)
        repairing = False
        try:
            todo, repairing = await self.plan_and_record(context, progress)
            loop = SendLoop(
                task,
                self.model_calls(context),
                context.workers,
                context.state,
                progress,
                cancel or threading.Event(),
                self.stall_after_s,
            )
            try:
                status = await loop.run(todo)
            except BaseException:
                # Torn down from outside (a Streamlit rerun, Ctrl-C): finished cases are already
                # saved; mark the run so the UI can offer to resume it.
                self.store.finish_run(run_id, "interrupted")
                raise
        finally:
            await self.end_run(context)
        context.workers.raise_if_halted()
        self.store.finish_run(run_id, status)
        if repairing and status == "done":
            self.store.stamp_engine_version(run_id, ENGINE_VERSION)
        return self.run_summary(context, status, loop.stop_reason, started)

    def plan_sync(self, config: RunConfig, task: Task, samples: Sequence[Sample]) -> PlannedRun:
        """Plan a run without sending it (batch export): its id and cases, follow-ups made and
        gated exactly as ``execute`` makes them. Rewrites of LLM-prompted relations go through
        the transformation endpoint's client from ``client_factory`` (and the call cache); one it
        cannot answer makes its cases ERROR, as in a run."""
        return asyncio.run(self._plan_only(config, task, samples))

    async def _plan_only(
        self, config: RunConfig, task: Task, samples: Sequence[Sample]
    ) -> PlannedRun:
        relations = self.relations_for(config, samples)
        run_id = config.run_id(samples)
        transform_endpoint = config.transformation_endpoint or config.endpoint
        client = self.client_factory(transform_endpoint, self.retry)
        transform_calls = CallCache(
            self.store, client, transform_endpoint, Progress(0), write_through=False
        )
        transform_calls.params = transform_params(transform_endpoint)
        # The gate embeds on a thread of its own, as in a run (there, the evaluation thread).
        gate_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="morphscope-eval")
        try:
            planned = await plan_cases(
                run_id,
                config,
                task,
                samples,
                relations,
                transform_calls,
                embeddings=self.embeddings,
                gate_on=gate_thread,
            )
        finally:
            save_answers(self.store, transform_calls.take_answers())
            gate_thread.shutdown(wait=True)
            await client.close()
        return PlannedRun(run_id, planned)

    # ---------------------------------------------------------------- the stages of a run
    # Public: a runner that sends the planned cases in another order (``AdaptiveRunner``) goes
    # through the same stages.

    def relations_for(self, config: RunConfig, samples: Sequence[Sample]) -> list[Relation]:
        from relations.registry import get_relation

        if not samples:
            raise ValueError("no inputs to run")
        return [get_relation(rid, self.custom_relations) for rid in config.relation_ids]

    def start_run(
        self,
        run_id: str,
        config: RunConfig,
        task: Task,
        samples: Sequence[Sample],
        relations: list[Relation],
    ) -> RunContext:
        """The run's context: its clients, call caches and worker threads."""
        judge = Judge(self.embeddings, self.thresholds)
        model = config.endpoint.model
        workers = RunWorkers(
            self.store, run_id, lambda batch: judge.judge(batch, task, run_id, model)
        )
        client = self.client_factory(config.endpoint, self.retry)
        transform_endpoint = config.transformation_endpoint or config.endpoint
        transform_client = (
            client
            if transform_endpoint == config.endpoint
            else self.client_factory(transform_endpoint, self.retry)
        )
        transform_calls = CallCache(
            self.store, transform_client, transform_endpoint, Progress(0), write_through=False
        )
        transform_calls.params = transform_params(transform_endpoint)
        # Rewrites are stored as they come, like answers: a run killed while planning many
        # LLM-prompted follow-ups does not pay for them twice.
        transform_calls.hand_answers_to(
            lambda answers: workers.writer.submit(save_answers, self.store, answers)
        )
        return RunContext(
            run_id,
            config,
            task,
            samples,
            relations,
            Progress(total=0, embedding=getattr(self.embeddings, "stats", None)),
            client,
            transform_calls,
            workers,
        )

    def model_calls(self, context: RunContext) -> CallCache:
        return CallCache(
            self.store, context.client, context.config.endpoint, context.state, write_through=False
        )

    async def plan_and_record(
        self, context: RunContext, progress: ProgressCallback | None
    ) -> tuple[list[PlannedCase], bool]:
        """Plan the run and record it: the cases still to do, and whether it is under repair."""
        run_id, config, state, workers = (
            context.run_id,
            context.config,
            context.state,
            context.workers,
        )
        planned = await plan_cases(
            run_id,
            config,
            context.task,
            context.samples,
            context.relations,
            context.transform_calls,
            embeddings=self.embeddings,
            gate_on=workers.evaluator,
        )
        context.planned = planned
        context.transform_calls.stop_handing_over()
        workers.writer.submit(
            save_answers, self.store, context.transform_calls.take_answers()
        ).result()
        state.total = len(planned)
        # A run judged by an engine with a known defect that touched it is judged again
        # whole: its answers come from the call cache, its wrong cases are replaced.
        repairing = self._needs_repair(run_id, context.task, context.relations)
        if repairing:
            self._drop_mismatched_cases(run_id, planned)
        # ERROR cases are not settled: a rerun sends their calls again and replaces them.
        recorded = self.store.recorded_case_verdicts(run_id)
        settled = {cid for cid, verdict in recorded.items() if verdict != Verdict.ERROR.value}
        if repairing:
            settled = set()
        todo = [case for case in planned if case.case_id not in settled]
        state.retried_errors = sum(
            1 for case in todo if recorded.get(case.case_id) == Verdict.ERROR.value
        )
        self.store.save_run(
            RunDefinition(
                run_id,
                endpoint=config.endpoint,
                task_id=context.task.id,
                config=config.to_dict(),
                samples=list(context.samples),
                dataset=config.dataset,
            ),
            n_planned=len(planned),
            # A repaired run keeps its old stamp until every case is judged again.
            engine_version=None if repairing else ENGINE_VERSION,
        )
        state.done = len(planned) - len(todo)
        if progress:
            progress(state)
        return todo, repairing

    async def end_run(self, context: RunContext) -> None:
        # Rewrites answered before a failure are kept too.
        context.transform_calls.stop_handing_over()
        save_answers(self.store, context.transform_calls.take_answers())
        context.workers.shutdown()
        await context.client.close()
        if context.transform_client is not context.client:
            await context.transform_client.close()

    def run_summary(
        self, context: RunContext, status: str, stop_reason: str, started: float
    ) -> RunSummary:
        run_id, state = context.run_id, context.state
        counts = self.store.run_verdict_counts(run_id)
        return RunSummary(
            run_id=run_id,
            status=status,
            cases=sum(counts.values()),
            new_cases=sum(state.verdicts.values()),
            calls_made=state.calls_made,
            cache_hits=state.cache_hits,
            verdicts=counts,
            elapsed_s=round(time.perf_counter() - started, 3),
            retried_errors=state.retried_errors,
            error_kinds=error_kinds(self.store.run_error_reasons(run_id)),
            stop_reason=stop_reason,
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
        )

    def _needs_repair(self, run_id: str, task: Task, relations: Sequence[Relation]) -> bool:
        """Whether the stored run was judged by an engine with a defect known to touch it."""
        stored = self.store.run(run_id)
        if stored is None:
            return False
        from app.engine.claim_edits import edits_kept_claims

        kinds = {relation.kind.value for relation in relations}
        ids = {relation.id for relation in relations}
        # A defect told by the cases touches only the runs whose cases show it.
        return any(
            not defect.read_from_cases
            or edits_kept_claims(self.store, stored, task.perturbable_fields, relations)
            for defect in defects_touching(stored.engine_version, kinds, ids)
        )

    def _drop_mismatched_cases(self, run_id: str, planned: Sequence[PlannedCase]) -> None:
        """Delete the stored cases of a run under repair that the plan does not make as stored:
        a case id the plan lacks, or one whose inputs differ (its labels judged another pairing
        and go with it). The rest are judged again in place and keep their labels."""
        wanted = {
            case.case_id: (case.source_fields, case.followup.fields if case.followup else None)
            for case in planned
        }
        stored = self.store.case_inputs(run_id)
        stale = [cid for cid, inputs in stored.items() if wanted.get(cid) != inputs]
        if stale:
            removed = self.store.delete_cases(stale)
            log.info("run %s: %d cases of a defective engine replaced", run_id, removed)

    def _embeddings_needed(self, run_id: str) -> bool:
        """Whether this run will embed anything: every answered case stores the similarity of
        its two outputs (and Δ/Score against a reference), and the validity gate compares inputs
        for relations with a similarity floor; only a run whose cases are all settled already
        (a rerun) embeds nothing new (the gate's vectors are in the store by then)."""
        stored = self.store.run(run_id)
        if stored is None or not stored.n_planned:
            return True
        settled = sum(
            n
            for verdict, n in self.store.run_verdict_counts(run_id).items()
            if verdict != Verdict.ERROR.value
        )
        return settled < stored.n_planned

    # ---------------------------------------------------------------- planning
