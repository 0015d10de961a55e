"""What a run would cost, worked out before anything is sent (`run --dry-run`).

The run is planned as the runner plans it (follow-ups made and gated), and each case still to
do is turned into its call keys exactly as the run keys them (``case_calls`` + ``call_key``):
the distinct keys are the planned calls; those with an answer in the call cache are the cached
calls, the rest the calls the run would send. Nothing is sent: the clients given to the planner
refuse every call, so an LLM-prompted relation whose rewrite is not cached is counted as one
rewrite call to send, and its follow-up as one call the size of its source (the rewrite is not
known yet). Nothing is written: the store is opened read-only and the embeddings the gate
computes stay in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.engine.calls import case_calls
from app.engine.embedder import Embedder, EmbeddingCache
from app.engine.token_count import TokenCounter
from core.confidence_sequence import inputs_needed
from core.identity import call_key
from core.types import Completion, Endpoint, Sample, Verdict

if TYPE_CHECKING:
    from app.engine.plan import PlannedCase
    from app.engine.progress import RunSummary
    from core.run_config import RunConfig
    from core.tasks import Task
    from relations.base import Relation
    from storage import Store

log = logging.getLogger(__name__)

NOT_SENT = "dry run: not sent"


class RefusingClient:
    """A model client that sends nothing: every call comes back as an error, counted."""

    def __init__(self) -> None:
        self.refused = 0

    async def complete(self, messages, params) -> Completion:
        self.refused += 1
        return Completion(text=None, error=NOT_SENT)

    async def close(self) -> None:
        return None


@dataclass
class CostPreview:
    """The calls and tokens a run would use. Calls are distinct call keys (a call the run
    shares between cases, or that the cache answers, is counted once)."""

    run_id: str
    cases: int
    cases_settled: int  # already judged by an earlier run of the same config: no call at all
    planned_calls: int
    cached_calls: int
    rewrite_calls: int = 0  # LLM-prompted rewrites not cached, to the transformation endpoint
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_basis: str = ""
    completion_is_bound: bool = False  # max_tokens per answer: no answer seen yet to average
    token_method: str = ""
    price_in: float | None = None
    price_out: float | None = None
    precision: PrecisionEstimate | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def calls_to_send(self) -> int:
        return self.planned_calls - self.cached_calls + self.rewrite_calls

    @property
    def completion_estimate(self) -> str:
        """The completion tokens as a reader should take them: a bound says "at most"."""
        return f"{'at most ' if self.completion_is_bound else '~'}{self.completion_tokens:,}"

    @property
    def cost_usd(self) -> float | None:
        if self.price_in is None and self.price_out is None:
            return None
        cost_in = (self.price_in or 0.0) * self.prompt_tokens / 1e6
        return cost_in + (self.price_out or 0.0) * self.completion_tokens / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "cases": self.cases,
            "cases_settled": self.cases_settled,
            "planned_calls": self.planned_calls,
            "cached_calls": self.cached_calls,
            "rewrite_calls": self.rewrite_calls,
            "calls_to_send": self.calls_to_send,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "completion_basis": self.completion_basis,
            "token_method": self.token_method,
            "price_in_per_million": self.price_in,
            "price_out_per_million": self.price_out,
            "cost_usd": self.cost_usd,
            "precision": vars(self.precision) if self.precision else None,
            "warnings": list(self.warnings),
        }

    def lines(self) -> list[str]:
        lines = [
            f"run {self.run_id} (dry run: nothing sent, nothing written)",
            f"cases: {self.cases} planned, {self.cases_settled} already settled",
            f"calls: {self.planned_calls} planned, {self.cached_calls} cached, "
            f"{self.calls_to_send} to send"
            + (f" (of which {self.rewrite_calls} rewrites)" if self.rewrite_calls else ""),
            f"tokens to send: ~{self.prompt_tokens:,} prompt, {self.completion_estimate} completion "
            f"({self.completion_basis}; counted with {self.token_method})",
        ]
        cost = self.cost_usd
        if cost is not None:
            lines.append(
                f"cost: ~${cost:.4f} at ${self.price_in or 0:g}/M input, "
                f"${self.price_out or 0:g}/M output tokens"
            )
        if self.precision is not None:
            lines.append(self.precision.line())
        return lines + [f"warning: {w}" for w in self.warnings]


@dataclass(frozen=True)
class PrecisionEstimate:
    """What `--precision` would save, before any verdict is known: the inputs each relation
    takes at a rate near 0.5 (the slowest) and near 0.05, and the calls to send scaled by them
    (the worst case is every call of the full run)."""

    half_width: float
    inputs: int
    inputs_at_half: int
    inputs_near_zero: int
    calls_at_half: int
    calls_near_zero: int
    calls_worst_case: int

    def line(self) -> str:
        return (
            f"with --precision {self.half_width:g}: each relation stops after about "
            f"{self.inputs_near_zero} inputs at a rate near 0.05 and {self.inputs_at_half} near "
            f"0.5 (of {self.inputs}): about {self.calls_near_zero}-{self.calls_at_half} calls to "
            f"send, at worst {self.calls_worst_case}"
        )


def precision_estimate(
    half_width: float, n_inputs: int, calls_to_send: int, round_size: int
) -> PrecisionEstimate:
    at_half = inputs_needed(0.5, half_width, round_size, n_inputs)
    near_zero = inputs_needed(0.05, half_width, round_size, n_inputs)
    return PrecisionEstimate(
        half_width,
        n_inputs,
        at_half,
        near_zero,
        round(calls_to_send * at_half / n_inputs),
        round(calls_to_send * near_zero / n_inputs),
        calls_to_send,
    )


def comparison_line(preview: CostPreview, summary: RunSummary) -> str:
    """After a run: the calls and tokens it used beside what its preview said (tokens as the
    endpoint reported them; some report none)."""
    reported = summary.prompt_tokens or summary.completion_tokens
    tokens = (
        f"{summary.prompt_tokens:,} prompt + {summary.completion_tokens:,} completion tokens "
        "reported by the endpoint"
        if reported
        else "the endpoint reported no token counts"
    )
    return (
        f"Used: {summary.calls_made} calls sent, {summary.cache_hits} from the cache; {tokens}. "
        f"The preview said {preview.calls_to_send} to send, ~{preview.prompt_tokens:,} prompt + "
        f"{preview.completion_estimate} completion tokens."
    )


class ReadOnlyEmbeddings:
    """The store's embedding cache read, never written: the gate's new vectors stay in memory."""

    def __init__(self, store) -> None:
        self._store = store

    def cached_embeddings(self, hashes, model_name):
        return self._store.cached_embeddings(hashes, model_name)

    def cache_embeddings(self, vectors, model_name) -> None:
        return None


def preview_run(
    store: Store,
    embedder: Embedder,
    config: RunConfig,
    task: Task,
    samples: Sequence[Sample],
    *,
    custom_relations: Sequence[Relation] = (),
    price_in: float | None = None,
    price_out: float | None = None,
    precision: float | None = None,
    round_size: int = 20,
) -> CostPreview:
    """Plan the run as the runner would, with clients that refuse every call, and count what
    it would send. ``store`` is only read (open it read-only)."""
    from app.engine.runner import Runner

    clients: list[RefusingClient] = []

    def refusing(endpoint, retry=None) -> RefusingClient:
        clients.append(RefusingClient())
        return clients[-1]

    embeddings = EmbeddingCache(embedder, ReadOnlyEmbeddings(store))  # type: ignore[arg-type]
    runner = Runner(store, embeddings, custom_relations=custom_relations, client_factory=refusing)
    planned = runner.plan_sync(config, task, samples)
    recorded = store.recorded_case_verdicts(planned.run_id)
    settled = {cid for cid, verdict in recorded.items() if verdict != Verdict.ERROR.value}
    todo = [case for case in planned.cases if case.case_id not in settled]
    counter = TokenCounter()
    keyed = _call_keys(config.endpoint, task, todo)
    cached = store.cached_calls(list(keyed))
    unknown = [c for c in todo if c.followup is None and c.error and NOT_SENT in c.error]
    rewrite_calls = sum(client.refused for client in clients)
    embedded = config.endpoint.embedded
    guessed = _unknown_followup_messages(task, unknown)
    to_count = [m for k, m in keyed.items() if k not in cached] + guessed
    prompt_tokens = sum(counter.count_messages(m, served_by_embedded=embedded) for m in to_count)
    per_answer, basis, bound = _completion_estimate(config.endpoint, cached.values(), counter)
    to_answer = len(keyed) - len(cached) + len(guessed)
    preview = CostPreview(
        run_id=planned.run_id,
        cases=len(planned.cases),
        cases_settled=len(planned.cases) - len(todo),
        planned_calls=len(keyed) + len(guessed),
        cached_calls=len(cached),
        rewrite_calls=rewrite_calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=round(per_answer * to_answer),
        completion_basis=basis,
        completion_is_bound=bound,
        token_method=counter.method,
        price_in=price_in,
        price_out=price_out,
    )
    if precision is not None and samples:
        preview.precision = precision_estimate(
            precision, len(samples), preview.calls_to_send, round_size
        )
    if price_in is None and price_out is None:
        preview.warnings.append("no price set (--price-in/--price-out): the cost is not shown")
    if rewrite_calls:
        preview.warnings.append(
            f"{rewrite_calls} LLM-prompted rewrites are not cached: their follow-ups are "
            "counted as one call each the size of its source"
        )
    return preview


def _call_keys(
    endpoint: Endpoint, task: Task, cases: Sequence[PlannedCase]
) -> dict[str, list[dict[str, str]]]:
    """The distinct call keys of the cases that send calls, each with its messages."""
    params = endpoint.sampling_params()
    keys: dict[str, list[dict[str, str]]] = {}
    for case in cases:
        if case.followup is None or case.skip_reason or case.error:
            continue
        for messages, repeat in case_calls(task, case).values():
            key = call_key(endpoint.cache_base_url, endpoint.model, params, messages, repeat)
            keys.setdefault(key, messages)
    return keys


def _unknown_followup_messages(task: Task, cases: Sequence[PlannedCase]) -> list[list[dict]]:
    """For cases whose rewrite is not known: their source once (it may be cached or shared, so
    this errs high) and a follow-up the size of the source."""
    guessed = []
    for case in cases:
        source = task.messages(case.source_fields)
        guessed += [source, source]
    return guessed


def _completion_estimate(
    endpoint: Endpoint, cached: Any, counter: TokenCounter
) -> tuple[float, str, bool]:
    """Tokens per answer, in words, and whether it is a bound: the mean of the cached answers of
    this run's calls when there are some, else the endpoint's max_tokens (an upper bound)."""
    texts = [c.text for c in cached if c.text]
    if texts:
        mean = sum(counter.count(t) for t in texts) / len(texts)
        return mean, f"completion: mean of {len(texts)} cached answers", False
    basis = f"completion: at most max_tokens={endpoint.max_tokens}"
    return float(endpoint.max_tokens or 0), basis, True
