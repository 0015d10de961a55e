"""Shrinking a stored case for real: its edits, and each candidate judged by the engine's stages.

A candidate follow-up (the source with some of the case's edits applied) becomes a planned case
like the run's own, its calls go through the run's call cache (``CallCache``: a candidate asked
before, or a repeat the run already made, costs no call) to the case's own run's endpoint with
its key variable, and ``Judge`` applies the relation's oracle exactly as the run did. The search
itself is ``app.engine.shrink.ddmin``; the result is stored beside the case
(``Store.save_shrink``), never replacing it.

Before a sample is taken the oracle says what it will cost (``CaseOracle.cost``: its calls the
cache cannot answer — the follow-up's, and the source's the first time a repeat is sampled), so
the search keeps to its budget exactly; batch rounds write those same calls as requests.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from app.clients import ClientFactory, RetryPolicy, make_client
from app.engine.calls import CallCache, case_calls
from app.engine.embedder import EmbeddingCache
from app.engine.judge import Judge
from app.engine.plan import PlannedCase
from app.engine.progress import Progress
from app.engine.shrink import (
    DEFAULT_MAX_CALLS,
    SINGLE,
    Repeats,
    ShrinkResult,
    ShrinkStatus,
    Trial,
    ddmin,
    not_shrinkable,
)
from app.engine.shrink_state import Subset
from app.engine.workspace import all_relations, get_task
from core.case_filter import CaseFilter
from core.identity import call_key
from core.run_config import RunConfig
from core.tasks import Task
from core.types import EMBEDDED_KIND, CallRequest, Case, Endpoint, Sample, Verdict
from relations.base import FollowUp, Relation
from relations.edits import Edit, apply_edits, diff_edits, indivisible_reason
from storage import Store

# The repeat indices of the search's samples start here, so none is an answer of the run itself:
# the original follow-up is confirmed on fresh samples, sent one at a time like every candidate
# (the embedded llama.cpp server answered one case differently at temperature 0 under the run's
# concurrency than alone, so reusing the run's answer "confirmed" FAILs that do not reproduce).
# Repeated searches share these samples through the call cache.
SHRINK_REPEATS_FROM = 20_000


class ShrinkInputError(Exception):
    """The case cannot be shrunk at all: unknown id, not a FAIL, or its run's config is gone."""


@dataclass
class ShrinkTarget:
    """A stored FAIL case with everything needed to judge it again."""

    case: Case
    config: RunConfig
    task: Task
    relation: Relation
    sample: Sample
    source_fields: dict[str, str]
    followup_fields: dict[str, str]
    edits: list[Edit] = field(default_factory=list)

    def candidate(self, kept: tuple[int, ...]) -> dict[str, str]:
        return apply_edits(self.source_fields, [self.edits[i] for i in kept])


def load_target(store: Store, case_id: str) -> ShrinkTarget:
    case = store.case(case_id)
    if case is None:
        raise ShrinkInputError(f"no case {case_id!r} in this database")
    if case.verdict != Verdict.FAIL:
        raise ShrinkInputError(f"case {case_id} is {case.verdict}, not FAIL: nothing to shrink")
    run = store.run(case.run_id)
    if run is None or "endpoint" not in run.config:
        raise ShrinkInputError(f"case {case_id}: its run's configuration is not stored")
    config = RunConfig.from_dict(run.config)
    task = get_task(store, case.task_id)
    relations = {r.id: r for r in all_relations(store)}
    if case.relation_id not in relations:
        raise ShrinkInputError(f"case {case_id}: relation {case.relation_id} is not known here")
    source = {k: str(v) for k, v in case.source_input.items()}
    followup = {k: str(v) for k, v in (case.followup_input or {}).items()}
    sample = next(
        (s for s in store.run_samples(case.run_id) if s.id == case.sample_id),
        Sample(fields=source),
    )
    return ShrinkTarget(
        case=case,
        config=config,
        task=task,
        relation=relations[case.relation_id],
        sample=sample,
        source_fields=source,
        followup_fields=followup,
        edits=diff_edits(source, followup),
    )


class CaseOracle:
    """``Oracle`` for ddmin: does the candidate with these edits still FAIL, in this repeat?

    ``endpoint``: where the calls go; by default the run's own, started when it is the embedded
    model. Batch rounds give the run's endpoint as stored and a client that never sends, so
    every answer comes from the cache (``answered`` says which samples have theirs)."""

    def __init__(
        self,
        store: Store,
        target: ShrinkTarget,
        embeddings: EmbeddingCache,
        client_factory: ClientFactory = make_client,
        *,
        endpoint: Endpoint | None = None,
    ) -> None:
        self.store, self.target, self.embeddings = store, target, embeddings
        self.client_factory = client_factory
        self.judge = Judge(embeddings, store.threshold_overrides())
        self.loop = asyncio.new_event_loop()
        self.endpoint = endpoint or _reachable(target.config.endpoint)
        self.client = client_factory(self.endpoint, RetryPolicy(max_retries=2))
        self.progress = Progress(0)
        self.calls = CallCache(store, self.client, self.endpoint, self.progress)

    def planned(self, kept: Subset, repeat: int) -> PlannedCase:
        """The candidate as a case of the run: its follow-up is the source with ``kept``."""
        target = self.target
        case = target.case
        return PlannedCase(
            case_id=f"{case.id}-shrink",
            sample=target.sample,
            relation=target.relation,
            followup_index=case.followup_index,
            repeat_index=SHRINK_REPEATS_FROM + case.repeat_index * 100 + repeat,
            followup=FollowUp(fields=target.candidate(kept), target=case.target),
            source_fields=dict(target.source_fields),
        )

    def requests(self, kept: Subset, repeat: int) -> dict[str, CallRequest]:
        """The calls the sample makes, by cache key (as ``CallCache`` keys them)."""
        endpoint, params = self.endpoint, self.calls.params
        found = {}
        for messages, repeat_index in case_calls(
            self.target.task, self.planned(kept, repeat)
        ).values():
            key = call_key(endpoint.cache_base_url, endpoint.model, params, messages, repeat_index)
            found[key] = CallRequest(
                key, endpoint.cache_base_url, endpoint.model, params, messages, repeat_index
            )
        return found

    def uncached(self, kept: Subset, repeat: int) -> set[str]:
        keys = set(self.requests(kept, repeat))
        return keys - self.store.cached_call_keys(keys)

    def cost(self, kept: Subset, repeat: int) -> int:
        """The model calls this sample would make: those the call cache cannot answer."""
        return len(self.uncached(kept, repeat))

    def __call__(self, kept: Subset, repeat: int) -> Trial:
        target = self.target
        case = target.case
        planned = self.planned(kept, repeat)
        before = self.progress.calls_made
        planned.outputs = self.loop.run_until_complete(self._outputs(planned))
        judged = self.judge.judge([planned], target.task, case.run_id, case.model)[0]
        calls = self.progress.calls_made - before
        if judged.verdict in (Verdict.ERROR, Verdict.SKIP):
            # Neither a pass nor a fail: the search stops and says why (errors are data).
            return Trial(failed=False, calls=calls, error=f"{judged.verdict}: {judged.reason}")
        return Trial(failed=judged.verdict == Verdict.FAIL, calls=calls)

    async def _outputs(self, planned: PlannedCase) -> dict[str, Any]:
        wanted = case_calls(self.target.task, planned)
        names = list(wanted)
        answers = await asyncio.gather(*(self.calls.complete(*wanted[name]) for name in names))
        return dict(zip(names, answers, strict=True))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.client.close())
        finally:
            self.loop.close()


def _reachable(endpoint: Endpoint) -> Endpoint:
    """The run's endpoint as it answers now: the embedded model is started if it is not running,
    on a port of its own (its call-cache key leaves the port out, so earlier searches' answers
    still count)."""
    if endpoint.kind != EMBEDDED_KIND:
        return endpoint
    from app.engine.model_server import get_server

    server = get_server()
    status = server.wait_ready(180)
    if status.state != "ready":
        raise ShrinkInputError(f"the embedded model did not start: {status.message}")
    return replace(endpoint, base_url=server.endpoint().base_url)


def default_repeats(store: Store, case: Case, config: RunConfig) -> Repeats:
    """One sample for a deterministic model; 2 of 3 when the endpoint samples (temperature
    above 0) or when the model's noise floor on the task is above 0 (some re-sent unchanged
    input, ``si.identity`` and the like, already came back with another answer)."""
    if config.endpoint.temperature > 0:
        return Repeats()
    floor_relations = [r.id for r in all_relations(store) if r.noise_floor]
    same_cell = CaseFilter.make(models=[case.model], tasks=[case.task_id])
    counts = store.noise_floor_counts(same_cell, floor_relations)
    return Repeats() if any(row["n_fail"] for row in counts) else SINGLE


def not_shrinkable_reason(target: ShrinkTarget) -> str | None:
    """Why the case's edits cannot be searched (one indivisible edit, or none), or None."""
    followup = FollowUp(fields=target.followup_fields, target=target.case.target)
    why = indivisible_reason(target.relation, followup)
    if why is None and not target.edits:
        why = "not shrinkable: the follow-up makes no edit to its source"
    return why


def shrink_case(
    store: Store,
    case_id: str,
    embeddings: EmbeddingCache,
    *,
    repeats: Repeats | None = None,
    max_calls: int = DEFAULT_MAX_CALLS,
    client_factory: ClientFactory = make_client,
) -> tuple[ShrinkTarget, ShrinkResult]:
    """Shrink one FAIL case and store the result beside it."""
    target = load_target(store, case_id)
    why = not_shrinkable_reason(target)
    if why is not None:
        result = not_shrinkable(len(target.edits), why)
    else:
        oracle = CaseOracle(store, target, embeddings, client_factory)
        try:
            result = ddmin(
                len(target.edits),
                oracle,
                repeats=repeats or default_repeats(store, target.case, target.config),
                max_calls=max_calls,
            )
        finally:
            oracle.close()
    save_result(store, target, result)
    return target, result


def save_result(store: Store, target: ShrinkTarget, result: ShrinkResult) -> None:
    store.save_shrink(
        case_id=target.case.id,
        run_id=target.case.run_id,
        relation_id=target.case.relation_id,
        status=str(result.status),
        reason=result.reason,
        edits_total=result.edits_total,
        kept_edits=[target.edits[i].to_dict() for i in result.kept],
        minimal_followup=target.candidate(result.kept),
        calls=result.calls,
        confirmed=result.confirmed,
    )


def result_json(target: ShrinkTarget, result: ShrinkResult) -> dict[str, Any]:
    """What ``morphscope shrink --json`` prints for one case."""
    kept = [target.edits[i] for i in result.kept]
    return {
        "case_id": target.case.id,
        "relation_id": target.case.relation_id,
        "minimal_followup": target.candidate(result.kept),
        "edits_total": result.edits_total,
        "edits_kept": len(kept),
        "kept_edits": [e.to_dict() | {"shown": e.describe()} for e in kept],
        "calls": result.calls,
        "confirmed": result.confirmed,
        "status": str(result.status),
        "reason": result.reason,
    }


__all__ = [
    "CaseOracle",
    "ShrinkInputError",
    "ShrinkStatus",
    "default_repeats",
    "load_target",
    "not_shrinkable_reason",
    "result_json",
    "save_result",
    "shrink_case",
]
