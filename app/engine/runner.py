"""The runner shared by the Probe page and the CLI.

A run = endpoint × task × relations × samples (× repeats). Follow-ups are made first (LLM-prompted
ones through the transformation endpoint, concurrently), then every distinct prompt is sent once
(concurrently, retried, cached in SQLite by content), and finished cases are evaluated in batches
(one embedding batch per flush) and written as they complete. A failed call, an unparseable
output or an inapplicable relation becomes an ERROR or SKIP case: the run itself never dies, and a
run that is interrupted resumes without repeating finished calls or cases.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import asdict, dataclass, field
from typing import Any

from app.clients import ClientFactory, ModelClient, RetryPolicy, endpoint_kind, make_client
from app.clients.base import live_load
from app.clients.limiter import LiveLoad
from app.engine.embedder import EmbeddingCache
from app.inputs.tasks import Task
from core.engine_version import ENGINE_VERSION, defects_touching
from core.types import Case, Completion, Endpoint, ParsedOutput, Sample, Verdict, content_hash
from relations.apply import SkippedFollowUp, generate_followups
from relations.base import FollowUp, Relation, RelationKind
from relations.oracles import evaluate
from relations.validity import gate_followup
from storage import Store
from storage.store import (
    HEARTBEAT_EVERY_S,
    CachedAnswer,
    DiskFullError,
    RunStoppedError,
    disk_full_reason,
)

log = logging.getLogger(__name__)

FLUSH_EVERY = 16
FLUSH_AFTER_S = 1.0
# Answers are handed to the writer thread at most this long after they arrive (cases, which
# cost no call to rebuild, wait for FLUSH_AFTER_S): a run killed with ``kill -9`` sends again
# only the calls in flight and the answers of about the last tenth of a second.
ANSWERS_AFTER_S = 0.05
# At most this many cases are evaluated in one batch (a few seconds of embedding on two cores),
# and a run stopped from outside (Ctrl-C, SIGTERM, a Streamlit rerun) evaluates what finished
# for at most TEARDOWN_S more: the rest need no call to be made again, their answers are kept.
BATCH_MOST = 64
TEARDOWN_S = 2.0
# A run whose cases stop finishing for this long (an endpoint that accepts connections and never
# answers, with retries still going) is stopped and marked interrupted; a rerun resumes it.
STALL_AFTER_S = 300.0
# Rewrites need some temperature: at 0 small models (the embedded SmolLM2 among them) echo the
# input, which the validity gate then SKIPs as identical. The fixed seed keeps them repeatable,
# and every rewrite is cached, so the same run config gives the same follow-ups.
TRANSFORM_PARAMS = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 320, "seed": 0}


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run; stored with it so it can be re-run and compared."""

    endpoint: Endpoint
    task_id: str
    relation_ids: tuple[str, ...]
    repeats: int = 1
    seed: int = 0
    dataset: str | None = None
    transformation_endpoint: Endpoint | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["endpoint"] = self.endpoint.to_dict()
        if self.transformation_endpoint is not None:
            data["transformation_endpoint"] = self.transformation_endpoint.to_dict()
        data["relation_ids"] = list(self.relation_ids)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """The config ``to_dict`` wrote (e.g. a run's stored config), rebuilt to run it again."""
        transformation = data.get("transformation_endpoint")
        return cls(
            endpoint=Endpoint.from_dict(data["endpoint"]),
            task_id=data["task_id"],
            relation_ids=tuple(data["relation_ids"]),
            repeats=data.get("repeats", 1),
            seed=data.get("seed", 0),
            dataset=data.get("dataset"),
            transformation_endpoint=Endpoint.from_dict(transformation) if transformation else None,
        )

    def run_id(self, samples: Sequence[Sample]) -> str:
        """Deterministic: the same config over the same samples is the same run (resumable)."""
        identity = self.to_dict()
        for key in ("endpoint", "transformation_endpoint"):
            if identity[key]:
                endpoint = identity[key]
                endpoint.pop("name", None)
                endpoint.pop("concurrency", None)
                endpoint.pop("timeout_s", None)
                endpoint.pop("retries", None)
                endpoint.pop("rpm_limit", None)
                endpoint.pop("tpm_limit", None)
                if endpoint.get("embedded"):
                    endpoint["base_url"] = "embedded://local"
                # Answers from batch files are the same answers as online ones: a batch
                # endpoint's run is the run of the OpenAI-compatible endpoint it stands for.
                if "kind" in endpoint and not endpoint_kind(endpoint["kind"]).sends_calls:
                    del endpoint["kind"]
        identity["samples"] = [s.id for s in samples]
        return content_hash(identity)[:12]


@dataclass
class Progress:
    total: int
    done: int = 0
    calls_made: int = 0
    cache_hits: int = 0
    verdicts: Counter = field(default_factory=Counter)
    retried_errors: int = 0  # stored ERROR cases this run sends again
    load: LiveLoad | None = None  # the endpoint's live concurrency and calls/s, if it adapts


@dataclass
class RunSummary:
    run_id: str
    status: str
    cases: int
    new_cases: int
    calls_made: int
    cache_hits: int
    verdicts: dict[str, int]
    elapsed_s: float
    retried_errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    stop_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def errors(self) -> int:
        return self.verdicts.get(Verdict.ERROR.value, 0)

    def error_line(self) -> str:
        """One line on the run's ERROR cases ("" when there are none), most common kind first."""
        if not self.errors:
            return ""
        kinds = "; ".join(f"{n}× {kind}" for kind, n in self.error_kinds.items())
        if self.errors == self.cases:
            return f"every case ({self.errors}) ended ERROR — {kinds}"
        return f"{self.errors} of {self.cases} cases ended ERROR — {kinds}"


def error_kind(reason: str) -> str:
    """A short class for an ERROR reason: the first failure, without attempt counts."""
    first = (reason or "unknown error").split("; ")[0]
    for prefix in ("source: ", "followup: "):
        if first.startswith(prefix):
            first = first[len(prefix) :]
    first = first.split(" (after ")[0]
    return first[:80] or "unknown error"


def error_kinds(reasons: Sequence[str]) -> dict[str, int]:
    """How many ERROR reasons fall in each ``error_kind``, most common first."""
    return dict(Counter(error_kind(reason) for reason in reasons).most_common())


ProgressCallback = Callable[[Progress], None]


@dataclass
class _PlannedCase:
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
    cases: list[_PlannedCase] = field(repr=False)


class CallCache:
    """Sends each distinct (endpoint, params, messages, repeat, slot) once; answers from SQLite.

    With ``write_through=False`` new answers are kept in memory until ``take_answers`` hands them
    to the runner's writer thread, so no SQLite commit happens on the event loop per call; with
    a sink (``hand_answers_to``) they are handed over on their own, a moment after they arrive.
    """

    def __init__(
        self,
        store: Store,
        client: ModelClient,
        endpoint: Endpoint,
        progress: Progress,
        *,
        write_through: bool = True,
    ):
        self.store = store
        self.client = client
        self.endpoint = endpoint
        self.progress = progress
        self.params = endpoint.sampling_params()
        self.write_through = write_through
        self._inflight: dict[str, asyncio.Future] = {}
        self._unsaved: list[CachedAnswer] = []
        # Keys waiting for the next batched cache lookup, with what each caller awaits.
        self._lookups: dict[str, asyncio.Future] = {}
        self._sink: Callable[[list[CachedAnswer]], None] | None = None
        self._sink_after_s = ANSWERS_AFTER_S
        self._sink_timer: asyncio.TimerHandle | None = None

    def hand_answers_to(
        self, sink: Callable[[list[CachedAnswer]], None], after_s: float = ANSWERS_AFTER_S
    ) -> None:
        """Give new answers to ``sink`` (e.g. the writer thread's queue) at most ``after_s``
        after each arrives, in one batch per timer: answers are what a killed run must not pay
        for twice, so they do not wait for their cases' next batch."""
        self._sink, self._sink_after_s = sink, after_s

    def take_answers(self) -> list[CachedAnswer]:
        """The answers not yet written to the store (they are no longer held here)."""
        answers, self._unsaved = self._unsaved, []
        return answers

    def stop_handing_over(self) -> None:
        """No more hand-overs (the run is ending; its last answers are taken by the caller)."""
        if self._sink_timer is not None:
            self._sink_timer.cancel()
        self._sink_timer = self._sink = None

    def _hand_over(self) -> None:
        self._sink_timer = None
        answers = self.take_answers()
        if answers and self._sink is not None:
            self._sink(answers)

    async def complete(self, messages: list[dict[str, str]], repeat_index: int) -> Completion:
        key = Store.call_key(
            self.endpoint.cache_base_url, self.endpoint.model, self.params, messages, repeat_index
        )
        if key in self._inflight:
            # Shielded: a waiter torn down (Ctrl-C, SIGTERM, a cancelled run) must not cancel
            # the answer the call's own task and the other waiters still expect.
            return await asyncio.shield(self._inflight[key])
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            cached = await self._cached(key)
            if cached is not None:
                self.progress.cache_hits += 1
                result = cached
            else:
                result = await self.client.complete(messages, self.params)
                self.progress.calls_made += 1
                self.progress.load = live_load(self.client)
                self._remember(key, messages, repeat_index, result)
        except Exception as exc:
            result = Completion(text=None, error=f"{type(exc).__name__}: {exc}")
        except BaseException:
            future.cancel()  # its waiters are being torn down with it
            raise
        if not future.done():
            future.set_result(result)
        return result

    async def _cached(self, key: str) -> Completion | None:
        """The stored answer for ``key``, if any. The keys asked for in one turn of the event loop
        are looked up together in one query at its next turn: a run starts all its calls at
        once, so its whole plan costs one lookup instead of one SQLite query per call."""
        loop = asyncio.get_running_loop()
        if not self._lookups:
            loop.call_soon(self._look_up_batch)
        waiter = loop.create_future()
        self._lookups[key] = waiter
        return await waiter

    def _look_up_batch(self) -> None:
        lookups, self._lookups = self._lookups, {}
        try:
            found = self.store.cached_calls(list(lookups))
        except Exception as exc:  # each waiting call turns it into its ERROR completion
            for waiter in lookups.values():
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for key, waiter in lookups.items():
            if not waiter.done():  # a cancelled call no longer waits
                waiter.set_result(found.get(key))

    def _remember(
        self, key: str, messages: list[dict[str, str]], repeat_index: int, result: Completion
    ) -> None:
        """Cache an answer (at once, or later through ``take_answers``)."""
        if not result.ok:
            return
        answer = CachedAnswer(
            key,
            self.endpoint.cache_base_url,
            self.endpoint.model,
            self.params,
            messages,
            repeat_index,
            result,
        )
        if self.write_through:
            save_answers(self.store, [answer])
            return
        self._unsaved.append(answer)
        if self._sink is not None and self._sink_timer is None:
            loop = asyncio.get_running_loop()
            self._sink_timer = loop.call_later(self._sink_after_s, self._hand_over)


def save_answers(store: Store, answers: list[CachedAnswer]) -> None:
    """Write answers to the call cache. A storage failure here loses only the cache entries,
    never the answers: the store already retried, and the cases still get their verdicts (the
    calls may simply be sent again by a later run)."""
    if not answers:
        return
    try:
        store.cache_calls(answers)
    except Exception:
        log.warning("could not cache %d calls; their answers are kept", len(answers), exc_info=True)


class TransformationError(RuntimeError):
    """The transformation endpoint failed for an LLM-prompted relation (→ ERROR cases)."""


class Runner:
    """Executes one run. Use ``run_sync`` from plain code and ``execute`` from async code."""

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
        from relations.registry import get_relation

        started = time.perf_counter()
        if not samples:
            raise ValueError("no inputs to run")
        relations = [get_relation(rid, self.custom_relations) for rid in config.relation_ids]
        run_id = config.run_id(samples)
        self._run_id, self._model = run_id, config.endpoint.model
        cancel = cancel or threading.Event()
        self._stop_reason = ""
        state = Progress(total=0)
        repairing = False
        if self._embeddings_needed(run_id) or self._needs_repair(run_id, relations):
            # Loading the model takes seconds of CPU: it happens beside the first calls.
            self.embeddings.warm_up()
        # The event loop only sends calls. Evaluation (parsing, oracles, embedding) runs on one
        # thread, and every store write of the run on another, in batches: answers are cached
        # every second even while a batch waits for the embedding model.
        self._evaluator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="morphscope-eval")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="morphscope-writer")
        client = self.client_factory(config.endpoint, self.retry)
        calls = CallCache(self.store, client, config.endpoint, state, write_through=False)
        transform_endpoint = config.transformation_endpoint or config.endpoint
        transform_client = (
            client
            if transform_endpoint == config.endpoint
            else self.client_factory(transform_endpoint, self.retry)
        )
        transform_calls = CallCache(
            self.store, transform_client, transform_endpoint, Progress(0), write_through=False
        )
        transform_calls.params = dict(TRANSFORM_PARAMS)
        # Rewrites are stored as they come, like answers: a run killed while planning many
        # LLM-prompted follow-ups does not pay for them twice.
        transform_calls.hand_answers_to(
            lambda answers: self._writer.submit(save_answers, self.store, answers)
        )
        try:
            planned = await self._plan(run_id, config, task, samples, relations, transform_calls)
            transform_calls.stop_handing_over()
            self._writer.submit(save_answers, self.store, transform_calls.take_answers()).result()
            state.total = len(planned)
            # A run judged by an engine with a known defect that touched it is judged again
            # whole: its answers come from the call cache, its wrong cases are replaced.
            repairing = self._needs_repair(run_id, relations)
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
                run_id,
                endpoint=config.endpoint,
                task_id=task.id,
                config=config.to_dict(),
                samples=list(samples),
                dataset=config.dataset,
                n_planned=len(planned),
                # A repaired run keeps its old stamp until every case is judged again.
                engine_version=None if repairing else ENGINE_VERSION,
            )
            state.done = len(planned) - len(todo)
            if progress:
                progress(state)
            try:
                status = await self._execute_cases(todo, task, calls, state, progress, cancel)
            except BaseException:
                # Torn down from outside (a Streamlit rerun, Ctrl-C): finished cases are already
                # saved; mark the run so the UI can offer to resume it.
                self.store.finish_run(run_id, "interrupted")
                raise
        finally:
            # Rewrites answered before a failure are kept too.
            transform_calls.stop_handing_over()
            save_answers(self.store, transform_calls.take_answers())
            # A batch still being evaluated when the run was torn down is not waited for (the
            # embedding model may still be loading); its answers are stored already.
            self._evaluator.shutdown(
                wait=not getattr(self, "_evaluation_abandoned", False), cancel_futures=True
            )
            self._writer.shutdown(wait=True)
            await client.close()
            if transform_client is not client:
                await transform_client.close()
        self._raise_if_halted(run_id)
        self.store.finish_run(run_id, status)
        if repairing and status == "done":
            self.store.stamp_engine_version(run_id, ENGINE_VERSION)
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
            stop_reason=self._stop_reason,
        )

    def plan_sync(self, config: RunConfig, task: Task, samples: Sequence[Sample]) -> PlannedRun:
        """Plan a run without sending it (batch export): its id and cases, follow-ups made and
        gated exactly as ``execute`` makes them. Rewrites of LLM-prompted relations go through
        the transformation endpoint's client from ``client_factory`` (and the call cache); one it
        cannot answer makes its cases ERROR, as in a run."""
        return asyncio.run(self._plan_only(config, task, samples))

    async def _plan_only(
        self, config: RunConfig, task: Task, samples: Sequence[Sample]
    ) -> PlannedRun:
        from relations.registry import get_relation

        if not samples:
            raise ValueError("no inputs to run")
        relations = [get_relation(rid, self.custom_relations) for rid in config.relation_ids]
        run_id = config.run_id(samples)
        self._run_id, self._model = run_id, config.endpoint.model
        self._evaluator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="morphscope-eval")
        transform_endpoint = config.transformation_endpoint or config.endpoint
        client = self.client_factory(transform_endpoint, self.retry)
        transform_calls = CallCache(
            self.store, client, transform_endpoint, Progress(0), write_through=False
        )
        transform_calls.params = dict(TRANSFORM_PARAMS)
        try:
            planned = await self._plan(run_id, config, task, samples, relations, transform_calls)
        finally:
            save_answers(self.store, transform_calls.take_answers())
            self._evaluator.shutdown(wait=True)
            await client.close()
        return PlannedRun(run_id, planned)

    def _needs_repair(self, run_id: str, relations: Sequence[Relation]) -> bool:
        """Whether the stored run was judged by an engine with a defect known to touch it."""
        stored = self.store.run(run_id)
        if stored is None:
            return False
        kinds = {relation.kind.value for relation in relations}
        return bool(defects_touching(stored.get("engine_version"), kinds))

    def _drop_mismatched_cases(self, run_id: str, planned: Sequence[_PlannedCase]) -> None:
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
        if stored is None or not stored.get("n_planned"):
            return True
        settled = sum(
            n
            for verdict, n in self.store.run_verdict_counts(run_id).items()
            if verdict != Verdict.ERROR.value
        )
        return settled < stored["n_planned"]

    # ---------------------------------------------------------------- planning

    async def _plan(
        self,
        run_id: str,
        config: RunConfig,
        task: Task,
        samples: Sequence[Sample],
        relations: Sequence[Relation],
        transform_calls: CallCache,
    ) -> list[_PlannedCase]:
        loop = asyncio.get_running_loop()

        def rewrite(prompt: str) -> str:
            # Runs in a worker thread: the call itself goes through the loop's cache and client.
            messages = [{"role": "user", "content": prompt}]
            future = asyncio.run_coroutine_threadsafe(transform_calls.complete(messages, 0), loop)
            completion = future.result()
            if not completion.ok:
                raise TransformationError(f"transformation endpoint failed: {completion.error}")
            return completion.text or ""

        # Transformations that call the LLM block their thread until the loop answers. They get
        # a pool of their own: in the loop's default executor they could take every thread the
        # HTTP client itself needs (DNS lookups run there), and the run would deadlock.
        pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="morphscope-transform")

        every_sample = list(samples)
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
                            run_seed=config.seed,
                            partners=Partners(every_sample, index),
                            rewrite=rewrite,
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

        jobs = [(i, s, r) for i, s in enumerate(samples) for r in relations]
        batches = _job_batches(jobs)
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
        planned: list[_PlannedCase] = []
        for (_, sample, relation), result in zip(jobs, results, strict=True):
            if isinstance(result, BaseException):
                items: list[FollowUp | SkippedFollowUp | str] = [
                    f"{type(result).__name__}: {result}"
                ]
            else:
                items = list(result) or [SkippedFollowUp("*", "the relation made no follow-up")]
            for index, item in enumerate(items):
                for repeat in range(config.repeats):
                    case = _PlannedCase(
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
                    else:
                        case.followup = item
                        if item.source_fields:
                            case.source_fields = dict(item.source_fields)
                    planned.append(case)
        # The gate embeds inputs: on the evaluation thread, with the rest of the run's embedding.
        await asyncio.wrap_future(self._evaluator.submit(self._gate, planned))
        return planned

    def _gate(self, planned: list[_PlannedCase]) -> None:
        """The validity gate: identical or meaning-breaking follow-ups are SKIPped before sending."""
        needs_similarity = [
            c for c in planned if c.followup and c.relation.similarity_floor is not None
        ]
        texts: list[str] = []
        for case in needs_similarity:
            texts += [v for v in case.source_fields.values() if isinstance(v, str)]
            texts += [v for v in case.followup.fields.values() if isinstance(v, str)]
        if texts:
            self.embeddings.prefetch(texts)
        # The repeats of a follow-up share it (and its source): it is gated once.
        reasons: dict[int, str | None] = {}
        for case in planned:
            if case.followup is None:
                continue
            if id(case.followup) not in reasons:
                reasons[id(case.followup)] = gate_followup(
                    case.relation, case.source_fields, case.followup, self.embeddings.similarity
                )
            reason = reasons[id(case.followup)]
            if reason:
                case.skip_reason = reason

    # ---------------------------------------------------------------- execution

    async def _execute_cases(
        self,
        todo: list[_PlannedCase],
        task: Task,
        calls: CallCache,
        state: Progress,
        progress: ProgressCallback | None,
        cancel: threading.Event,
    ) -> str:
        finished: list[_PlannedCase] = []
        to_call: list[_PlannedCase] = []
        for case in todo:
            settled_now = case.followup is None or case.skip_reason or case.error
            (finished if settled_now else to_call).append(case)
        state.done += len(finished)
        # Set by the writer or evaluation thread when the run cannot go on (its row deleted,
        # the disk full): the loop stops, and nothing more is written.
        self._halted: RunStoppedError | None = None
        self._answers_saved = 0
        self._evaluation_abandoned = False
        calls.hand_answers_to(lambda answers: self._writer.submit(self._store_answers, answers))

        async def run_case(case: _PlannedCase) -> _PlannedCase:
            wanted = case_calls(task, case)
            results = await asyncio.gather(
                *(calls.complete(msgs, rep) for msgs, rep in wanted.values())
            )
            case.outputs = dict(zip(wanted, results, strict=True))
            return case

        # Calls queue on the client's semaphore in case order (source, then its follow-up), so
        # cases finish steadily from the start.
        pending = {asyncio.ensure_future(run_case(c)) for c in to_call}
        saving: Future | None = None  # the batch the writer thread is evaluating and saving
        last_flush = last_beat = last_progress = time.monotonic()
        status = "done"

        def collect() -> None:
            nonlocal saving
            if saving is not None and saving.done():
                self._count(saving.result(), state, progress)
                saving = None

        def save_answers_now() -> None:
            answers = calls.take_answers()
            if answers:
                self._writer.submit(self._store_answers, answers)

        def save_batch() -> Future:
            save_answers_now()
            batch, finished[:] = finished[:BATCH_MOST], finished[BATCH_MOST:]
            return self._evaluator.submit(self._save, batch, task)

        completed = False
        try:
            while pending:
                collect()
                if cancel.is_set():
                    status = "cancelled"
                    break
                if self._halted is not None:
                    status = "interrupted"
                    break
                if time.monotonic() - last_progress > self.stall_after_s:
                    status = "interrupted"
                    self._stop_reason = (
                        f"no case finished for {self.stall_after_s / 60:g} min; "
                        "stopped (run again to resume)"
                    )
                    break
                # Save in batches (one embedding batch each), and at least every FLUSH_AFTER_S
                # so a killed run loses little. One batch at a time: the next one gathers while
                # the writer thread works, and calls keep flowing meanwhile.
                overdue = time.monotonic() - last_flush > FLUSH_AFTER_S
                if saving is None and finished and (len(finished) >= FLUSH_EVERY or overdue):
                    saving = save_batch()
                    last_flush = time.monotonic()
                elif overdue:  # a batch is still being evaluated: its answers are kept already
                    save_answers_now()
                    last_flush = time.monotonic()
                done, pending = await asyncio.wait(
                    pending, timeout=0.2, return_when=asyncio.FIRST_COMPLETED
                )
                for future in done:
                    finished.append(future.result())
                    state.done += 1
                if done:
                    last_progress = time.monotonic()
                if time.monotonic() - last_beat > HEARTBEAT_EVERY_S:
                    self._writer.submit(self._heartbeat)
                    last_beat = time.monotonic()
                if progress and done:
                    progress(state)
            if pending:
                # Stopped early (cancel, stall): no new call may start while the batch in the
                # writer finishes, which can take seconds (the embedding model may be loading).
                for future in pending:
                    future.cancel()
            if saving is not None:
                save_answers_now()  # the last answers need not wait for the batch before
                await asyncio.wrap_future(saving)
                collect()
            while status == "done" and finished:
                saving = save_batch()
                await asyncio.wrap_future(saving)
                collect()
            completed = True
        finally:
            for future in pending:
                future.cancel()
            if pending and status == "done":
                status = "cancelled" if cancel.is_set() else "interrupted"
            # Whatever finished is kept, even when the caller is being torn down: every answer
            # at once, and the cases while TEARDOWN_S lasts (a torn-down run must end within
            # seconds; a case left unsaved costs no call, its answers are stored). This waits
            # for the writer thread (blocking the loop is fine while the run ends).
            save_answers_now()
            calls.stop_handing_over()
            ends_at = time.monotonic() + TEARDOWN_S
            if saving is not None and not completed:
                wait_for_futures([saving], timeout=TEARDOWN_S)
                self._evaluation_abandoned = not saving.done()
            if saving is not None and not self._evaluation_abandoned:
                self._count(saving.result(), state, progress)
            while not self._evaluation_abandoned:
                self._count(save_batch().result(), state, None)
                if not finished or time.monotonic() > ends_at:
                    break
        return status

    def _store_answers(self, answers: list[CachedAnswer]) -> None:
        """On the writer thread: cache answers. A failure that stops the run (its row deleted,
        the disk full) is noted for the loop; any other loses only these cache entries, never
        the answers (the cases still get their verdicts)."""
        if self._halted is not None or not answers:
            return
        try:
            self.store.cache_calls(answers)
        except Exception as exc:
            if not self._halt_on(exc):
                log.warning(
                    "could not cache %d calls; their answers are kept", len(answers), exc_info=True
                )
            return
        self._answers_saved += sum(1 for answer in answers if answer.completion.ok)

    def _halt_on(self, exc: BaseException) -> bool:
        """Whether ``exc`` stops the run; if so the run is halted with a one-line reason."""
        if isinstance(exc, RunStoppedError):
            self._halted = self._halted or exc
            return True
        reason = disk_full_reason(exc, self.store.path)
        if reason is None:
            return False
        self._halted = self._halted or DiskFullError(reason)
        return True

    def _raise_if_halted(self, run_id: str) -> None:
        """After the loop: a halted run ends with its one-line reason, what was stored kept."""
        halted = getattr(self, "_halted", None)
        if halted is None:
            return
        if isinstance(halted, DiskFullError):
            with contextlib.suppress(Exception):  # most likely the disk is still full
                self.store.finish_run(run_id, "interrupted")
            raise DiskFullError(
                f"the disk is full: {halted}; {self._answers_saved} answers kept, rerun to finish"
            )
        raise halted

    def _heartbeat(self) -> None:
        try:
            self.store.heartbeat(self._run_id)
        except Exception as exc:  # a missed heartbeat is harmless; the next one comes in seconds
            if not self._halt_on(exc):
                log.warning("could not record the run's heartbeat", exc_info=True)

    def _save(self, batch: list[_PlannedCase], task: Task) -> list[Case]:
        """On the evaluation thread: evaluate a batch, and have the writer thread record it.
        Once the run is halted nothing more is recorded (the answers are cached: a rerun makes
        these cases again without calls)."""
        if not batch or self._halted is not None:
            return []
        cases = self._evaluate(batch, task)
        try:
            self._writer.submit(self.store.record_cases, cases).result()
        except Exception as exc:
            if self._halt_on(exc):
                return []
            raise
        return cases

    @staticmethod
    def _count(cases: list[Case], state: Progress, progress: ProgressCallback | None) -> None:
        for case in cases:
            state.verdicts[case.verdict.value] += 1
        if progress and cases:
            progress(state)

    # ---------------------------------------------------------------- evaluation

    def _evaluate(self, batch: list[_PlannedCase], task: Task) -> list[Case]:
        parsed: dict[str, dict[str, ParsedOutput]] = {}
        texts: list[str] = []
        for case in batch:
            if not case.outputs:
                continue
            parsed[case.case_id] = {name: task.parse(c.text) for name, c in case.outputs.items()}
            texts += [c.text for c in case.outputs.values() if c.ok]
            texts += [p.answer for p in parsed[case.case_id].values() if p.answer]
            texts += [" ".join(p.trace) for p in parsed[case.case_id].values() if p.trace]
            if case.sample.reference:
                texts.append(case.sample.reference)
            if case.sample.reference_steps:
                texts += list(case.sample.reference_steps)
                texts += [step for p in parsed[case.case_id].values() for step in p.trace]
        if texts:
            self.embeddings.prefetch(texts)
        return [self._row(case, task, parsed.get(case.case_id)) for case in batch]

    def _row(self, case: _PlannedCase, task: Task, parsed: dict[str, ParsedOutput] | None) -> Case:
        followup = case.followup
        planned: dict[str, Any] = {
            "id": case.case_id,
            "run_id": self._run_id,
            "sample_id": case.sample.id,
            "relation_id": case.relation.id,
            "family": case.relation.family,
            "side": case.relation.side,
            "target": followup.target if followup else "*",
            "followup_index": case.followup_index,
            "repeat_index": case.repeat_index,
            "model": self._model,
            "task_id": task.id,
            "source_input": case.source_fields,
            "followup_input": followup.fields if followup else None,
            "source_prompt": task.render(case.source_fields)
            if _has(task, case.source_fields)
            else None,
            "followup_prompt": (
                task.render(followup.fields, followup.preamble)
                if followup and _has(task, followup.fields)
                else None
            ),
        }
        if case.error:
            return Case(**planned, verdict=Verdict.ERROR, reason=case.error)
        if case.skip_reason:
            return Case(**planned, verdict=Verdict.SKIP, reason=case.skip_reason)
        outputs = case.outputs
        planned["source_output"] = outputs["source"].text
        planned["followup_output"] = outputs["followup"].text
        failed = [f"{name}: {c.error}" for name, c in outputs.items() if not c.ok]
        if failed or parsed is None:
            return Case(**planned, verdict=Verdict.ERROR, reason="; ".join(failed)[:500])
        source, follow = parsed["source"], parsed["followup"]
        planned["source_answer"], planned["followup_answer"] = source.answer, follow.answer
        companions = {k: v for k, v in parsed.items() if k not in ("source", "followup")}
        try:
            result = evaluate(
                case.relation,
                task.answer_type,
                source,
                follow,
                self.embeddings.similarity,
                companions=companions,
                threshold=self.thresholds.get(case.relation.id),
            )
        except Exception as exc:
            log.exception("oracle failed for %s", case.case_id)
            return Case(**planned, verdict=Verdict.ERROR, reason=f"oracle failed: {exc}")
        similarity = self.embeddings.similarity
        measured: dict[str, Any] = {
            "output_similarity": similarity(outputs["source"].text, outputs["followup"].text)
        }
        if source.trace and follow.trace:
            measured["trace_sim"] = similarity(" ".join(source.trace), " ".join(follow.trace))
        reference = case.sample.reference
        if reference:
            score_source = similarity(outputs["source"].text, reference)
            score_followup = similarity(outputs["followup"].text, reference)
            measured |= {
                "score_source": score_source,
                "score_followup": score_followup,
                "delta": score_followup - score_source,
            }
        reference_steps = case.sample.reference_steps
        if reference_steps:
            measured["step_score_source"] = self.embeddings.avg_step_score(
                source.trace, reference_steps
            )
            measured["step_score_followup"] = self.embeddings.avg_step_score(
                follow.trace, reference_steps
            )
        return Case(
            **planned,
            **measured,
            verdict=result.verdict,
            oracle=result.oracle,
            value=result.value,
            reason=result.reason,
            details=result.details,
        )


# Follow-ups that need no model are made this many jobs to an executor call: one call per job
# cost more in hand-offs between threads than the follow-ups themselves (100,000 of them took
# most of a batch export's time).
PLAN_BATCH = 256


def _job_batches(jobs: Sequence[tuple[int, Sample, Relation]]) -> list[list[int]]:
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


def case_calls(task: Task, case: _PlannedCase) -> dict[str, tuple[list[dict[str, str]], int]]:
    """The calls a planned case with a follow-up needs, by output name ("source", "followup",
    companions): each its messages and repeat index. Online runs send them; batch export writes
    them as request lines, so both key the call cache alike."""
    followup = case.followup
    assert followup is not None
    source_messages = task.messages(case.source_fields)
    followup_messages = task.messages(followup.fields, followup.preamble)
    # si.identity sends the same prompt twice: the follow-up must be a separate sample.
    followup_repeat = case.repeat_index
    if followup_messages == source_messages:
        followup_repeat = 10_000 + case.repeat_index
    wanted = {
        "source": (source_messages, case.repeat_index),
        "followup": (followup_messages, followup_repeat),
    }
    for name, fields in followup.companions.items():
        wanted[name] = (task.messages(fields), case.repeat_index)
    return wanted


def _has(task: Task, fields: dict[str, str]) -> bool:
    return all(f in fields for f in task.fields)


def make_sync_rewriter(
    store: Store, endpoint: Endpoint, client_factory: ClientFactory = make_client
) -> Callable[[str], str]:
    """A blocking rewrite hook (Relations page, `transform` CLI) sharing the runs' call cache."""

    def rewrite(prompt: str) -> str:
        async def once() -> Completion:
            client = client_factory(endpoint, RetryPolicy(max_retries=2))
            calls = CallCache(store, client, endpoint, Progress(0))
            calls.params = dict(TRANSFORM_PARAMS)
            try:
                return await calls.complete([{"role": "user", "content": prompt}], 0)
            finally:
                await client.close()

        completion = asyncio.run(once())
        if not completion.ok:
            raise TransformationError(f"transformation endpoint failed: {completion.error}")
        return completion.text or ""

    return rewrite
