"""A run that spends its calls where the uncertainty is (`run --precision H`, `--budget N`).

The run is planned and recorded as a full run (same run id, same cases), then sent in rounds:
the round scheduler (``rounds``) picks, after each round, which model × relation cells get the
next inputs of a seeded random order, from the verdicts stored so far. A cell stops when its
anytime-valid confidence sequence is within ±H; with a budget, the run ends when no next
observation fits in it. The cases not sent stay planned: the same command without `--precision`
or `--budget` completes the grid, from the call cache where the calls were made.

An observation of a cell is one input: a violation when any of its cases (follow-ups ×
repeats) FAILs, none when no case has a PASS or FAIL (SKIP, ERROR). Cases an earlier run
settled count without a call, so the same adaptive command again sends nothing new.
LLM-prompted rewrites are made at planning, for every input, as in a full run: the precision
and the budget govern the calls to the model under test.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engine.plan import PlannedCase
from app.engine.progress import ProgressCallback, RunSummary
from app.engine.rounds import DEFAULT_ROUND_SIZE, STOP_BUDGET, Cell, RoundScheduler
from app.engine.runner import RunContext, Runner
from app.engine.send import SendLoop
from core.run_config import RunConfig
from core.sampling import DONE, STATUS_BUDGET, STATUS_PRECISION, RunSampling, SampledCell
from core.tasks import Task
from core.types import Sample, Verdict


@dataclass(frozen=True)
class AdaptiveSettings:
    precision: float | None = None
    budget: int | None = None
    round_size: int = DEFAULT_ROUND_SIZE


@dataclass
class AdaptiveSummary:
    """The run's summary and how it sampled its grid (also stored with the run)."""

    run: RunSummary
    sampling: RunSampling

    def to_dict(self) -> dict:
        return {**self.run.to_dict(), "adaptive": self.sampling.to_dict()}


class AdaptiveRunner(Runner):
    """A ``Runner`` whose ``execute_adaptive`` sends the planned cases in scheduled rounds."""

    def run_adaptive_sync(
        self,
        config: RunConfig,
        task: Task,
        samples: Sequence[Sample],
        settings: AdaptiveSettings,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        on_round: RoundCallback | None = None,
    ) -> AdaptiveSummary:
        import asyncio

        return asyncio.run(
            self.execute_adaptive(
                config, task, samples, settings, progress, cancel=cancel, on_round=on_round
            )
        )

    @classmethod
    def of(cls, runner: Runner) -> AdaptiveRunner:
        """An adaptive runner with ``runner``'s store, embedder and settings (the pages make
        their runners with ``workspace.make_runner``)."""
        adaptive = cls.__new__(cls)
        adaptive.__dict__.update(vars(runner))
        return adaptive

    async def execute_adaptive(
        self,
        config: RunConfig,
        task: Task,
        samples: Sequence[Sample],
        settings: AdaptiveSettings,
        progress: ProgressCallback | None = None,
        *,
        cancel: threading.Event | None = None,
        on_round: RoundCallback | None = None,
    ) -> AdaptiveSummary:
        """Run in rounds; ``on_round`` is told every cell's interval after each round (and
        once before the first), so a page can show them narrowing and stopping."""
        started = time.perf_counter()
        relations = self.relations_for(config, samples)
        run_id = config.run_id(samples)
        self.embeddings.warm_up()
        context = self.start_run(run_id, config, task, samples, relations)
        try:
            todo, _ = await self.plan_and_record(context, progress)
            scheduler = self._scheduler(config, samples, relations, settings)
            watch = _RoundWatch(cancel or threading.Event(), on_round, progress)
            status = await self._send_rounds(context, todo, scheduler, watch)
        except BaseException:
            self.store.finish_run(run_id, "interrupted")
            raise
        finally:
            await self.end_run(context)
        context.workers.raise_if_halted()
        recorded = set(self.store.recorded_case_verdicts(run_id))
        sampling = _sampling(context, scheduler, settings, recorded)
        if status == DONE:
            status = self._adaptive_status(context, scheduler)
        if status in (STATUS_PRECISION, STATUS_BUDGET):  # a complete grid is a full-grid run
            self.store.save_run_sampling(run_id, sampling)
        self.store.finish_run(run_id, status)
        return AdaptiveSummary(self.run_summary(context, status, "", started), sampling)

    def _adaptive_status(self, context: RunContext, scheduler: RoundScheduler) -> str:
        """ "done" when every planned case is recorded (the rounds walked the whole grid), else
        the status that says why the run stopped short of it."""
        recorded = sum(self.store.run_verdict_counts(context.run_id).values())
        if recorded >= context.state.total:
            return DONE
        return STATUS_BUDGET if scheduler.stop_reason == STOP_BUDGET else STATUS_PRECISION

    def _scheduler(self, config, samples, relations, settings) -> RoundScheduler:
        model = config.endpoint.model
        cells = [Cell(model, relation.id, follow_up_calls=config.repeats) for relation in relations]
        return RoundScheduler(
            cells,
            len(samples),
            precision=settings.precision,
            budget=settings.budget,
            round_size=settings.round_size,
            seed=config.seed,
            source_calls=config.repeats,
        )

    async def _send_rounds(
        self,
        context: RunContext,
        todo: list[PlannedCase],
        scheduler: RoundScheduler,
        watch: _RoundWatch,
    ) -> str:
        """Send round after round until the scheduler stops; the run's status."""
        position = {sample.id: index for index, sample in enumerate(context.samples)}
        # Every case of an input counts towards its observation; only those still to do are
        # sent (a case an earlier run settled is an observation at no call).
        cases_of: dict[tuple[int, str], list[PlannedCase]] = defaultdict(list)
        for case in context.planned:
            cases_of[(position[case.sample.id], case.relation.id)].append(case)
        to_send = {case.case_id for case in todo}
        calls = self.model_calls(context)
        watch.tell(scheduler)
        while (planned := scheduler.next_round()) is not None:
            wanted = [
                (index, cell) for cell, inputs in planned.assignments.items() for index in inputs
            ]
            batch = [
                case
                for index, cell in wanted
                for case in cases_of[(index, cell.relation)]
                if case.case_id in to_send
            ]
            sent_before = context.state.calls_made
            loop = SendLoop(
                context.task,
                calls,
                context.workers,
                context.state,
                watch.progress,
                watch.cancel,
                self.stall_after_s,
            )
            status = await loop.run(batch)
            scheduler.settle(planned, context.state.calls_made - sent_before)
            if status != DONE:
                return status
            verdicts = self.store.recorded_case_verdicts(context.run_id)
            for index, cell in wanted:
                cases = cases_of[(index, cell.relation)]
                scheduler.record(cell, _violated([verdicts.get(c.case_id) for c in cases]))
            watch.tell(scheduler)
        return DONE


RoundCallback = Callable[[list[SampledCell]], None]


@dataclass(frozen=True)
class _RoundWatch:
    """Who follows the rounds: the cancel flag, the per-round callback, the case progress."""

    cancel: threading.Event
    on_round: RoundCallback | None
    progress: ProgressCallback | None

    def tell(self, scheduler: RoundScheduler) -> None:
        if self.on_round is not None:
            self.on_round([_sampled_cell(cell, scheduler) for cell in scheduler.cells])


def _violated(verdicts: list[str | None]) -> bool | None:
    judged = [v for v in verdicts if v in (Verdict.PASS.value, Verdict.FAIL.value)]
    if not judged:
        return None
    return Verdict.FAIL.value in judged


def _sampling(
    context: RunContext, scheduler: RoundScheduler, settings: AdaptiveSettings, recorded: set
) -> RunSampling:
    """How the run sampled: the calls its ``recorded`` cases stand for against the full
    grid's (each input's source per repeat, one call per case), and each cell's interval at
    the stop."""
    config = context.config
    full_grid = len(context.samples) * config.repeats * (1 + len(context.relations))
    cases = [case for case in context.planned if case.case_id in recorded]
    used = len({case.sample.id for case in cases}) * config.repeats + len(cases)
    cells = [  # in the order the relations were given
        _sampled_cell(cell, scheduler) for cell in scheduler.cells
    ]
    return RunSampling(
        precision=settings.precision,
        budget=settings.budget,
        round_size=settings.round_size,
        stop_reason=scheduler.stop_reason or "",
        calls_sent=context.state.calls_made,
        cache_hits=context.state.cache_hits,
        calls_used=used,
        full_grid_calls=full_grid,
        cells=cells,
    )


def _sampled_cell(cell: Cell, scheduler: RoundScheduler) -> SampledCell:
    interval = scheduler.interval(cell)
    return SampledCell(
        cell.model,
        cell.relation,
        interval.n,
        interval.violations,
        round(interval.low, 6),
        round(interval.high, 6),
        stopped=scheduler.reached_precision(cell),
    )
