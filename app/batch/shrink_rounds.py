"""Shrinking many violations on a batch engine: rounds of request files, one ddmin level each.

``start_rounds`` (``morphscope shrink --run RUN --batch-export OUT.jsonl``) begins a search per
FAIL case and writes round 1's requests: the calls that confirm each original follow-up, in the
request format of ``batch export``. ``import_round`` (``shrink --batch-import RESULTS.jsonl
--batch-export NEXT.jsonl``) caches the answers, judges every candidate whose answers are in,
advances each case's ddmin state (stored between rounds) and writes the next level's requests,
until every search has ended and its result is stored beside its case.

The search is the online one's state machine (``app.engine.shrink_state``), fed a whole level
per round rather than one sample at a time, so it keeps the same edits. A round asks for every
undecided candidate of its level, where the online search would stop at the first failing one,
so it spends more calls for far fewer round trips; the budget (``--max-calls``) counts each
requested call once and is never exceeded. A request left unanswered is asked again in the next
round at no new cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.batch.formats import MAX_BYTES, MAX_LINES, PartWriter, request_line
from app.batch.importer import checked_results
from app.clients.batch import BatchClient, request_identity
from app.engine.embedder import EmbeddingCache
from app.engine.shrink import DdminState, Repeats, absorb, not_shrinkable, plan_round
from app.engine.shrink_oracle import (
    CaseOracle,
    ShrinkInputError,
    ShrinkTarget,
    default_repeats,
    load_target,
    not_shrinkable_reason,
    result_json,
    save_result,
)
from core.types import CallRequest, Completion
from storage import Store
from storage.cache_verbs import CachedAnswer
from storage.shrink_round_verbs import RoundRequest, ShrinkSearchRow


class ShrinkRoundError(ValueError):
    """A round that could not be written; nothing was stored."""


@dataclass
class ShrinkRound:
    """What a round did: the requests written, the searches still going, the ones that ended."""

    round: int = 0  # the highest round number written (0: none)
    files: list[Path] = field(default_factory=list)
    lines_per_file: list[int] = field(default_factory=list)
    requests: int = 0
    pending: list[str] = field(default_factory=list)  # case ids still searching
    finished: list[dict[str, Any]] = field(default_factory=list)  # ``result_json`` of each
    skipped: dict[str, str] = field(default_factory=dict)  # case id → why it cannot be shrunk
    answered: int = 0  # result lines imported as answers
    line_errors: int = 0  # result lines that were errors
    invalid_lines: list[int] = field(default_factory=list)

    def describe(self) -> list[str]:
        """Plain lines for the CLI."""
        lines = []
        if self.answered or self.line_errors:
            lines.append(
                f"answered {self.answered} calls; {self.line_errors} result lines were errors"
            )
        for case_id, why in self.skipped.items():
            lines.append(f"{case_id}: {why}")
        for done in self.finished:
            lines.append(
                f"{done['case_id']} {done['relation_id']}: {done['status']} · "
                f"{done['edits_kept']} of {done['edits_total']} edits · {done['calls']} calls"
            )
        for path, count in zip(self.files, self.lines_per_file, strict=True):
            lines.append(f"round {self.round}: wrote {count} requests to {path}")
        if self.pending:
            lines.append(
                f"{len(self.pending)} searches go on: answer the requests, then run "
                "`morphscope shrink --batch-import RESULTS.jsonl --batch-export NEXT.jsonl`"
            )
        else:
            lines.append("every search has ended: nothing more to ask")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "files": [str(path) for path in self.files],
            "lines_per_file": self.lines_per_file,
            "requests": self.requests,
            "pending": self.pending,
            "finished": self.finished,
            "skipped": self.skipped,
            "answered": self.answered,
            "line_errors": self.line_errors,
            "invalid_lines": self.invalid_lines,
        }


@dataclass
class _Advanced:
    """One search after a round: its state, and the requests of its next level."""

    target: ShrinkTarget
    state: DdminState
    round: int
    requests: dict[str, CallRequest]


def _batch_oracle(
    target: ShrinkTarget, embeddings: EmbeddingCache, store: Store, errors: list[dict]
) -> CaseOracle:
    """The case's oracle answered from the call cache alone (nothing is sent); a call whose
    result line was an error gets that error, so its candidate ends the search as ``error``."""
    by_identity = {
        request_identity(row["model"], row["params"], row["messages"]): row["error"]
        for row in errors
    }
    return CaseOracle(
        store,
        target,
        embeddings,
        lambda endpoint, retry=None: BatchClient(endpoint, by_identity),
        endpoint=target.config.endpoint,
    )


def _advance(
    store: Store,
    target: ShrinkTarget,
    state: DdminState,
    round_: int,
    embeddings: EmbeddingCache,
    *,
    fresh: bool = False,
) -> _Advanced:
    """Judge what the cache answers, then plan the next level's requests. ``fresh``: a search
    that replaces an earlier one of the case, whose requests and error lines it does not
    inherit (they are forgotten when the round is stored)."""
    errors = [] if fresh else store.shrink_request_errors(target.case.id)
    oracle = _batch_oracle(target, embeddings, store, errors)
    try:
        errored = {row["key"] for row in errors}
        cached = _CachedKeys(store)

        def answered(kept, repeat) -> bool:
            keys = set(oracle.requests(kept, repeat))
            return keys <= cached.of(keys) | errored

        absorb(state, oracle, answered)
        if state.done:
            return _Advanced(target, state, round_, {})
        asked_before = set() if fresh else store.shrink_request_keys(target.case.id)
        samples = plan_round(state, lambda k, r: oracle.uncached(k, r) - asked_before)
        requests: dict[str, CallRequest] = {}
        for kept, repeat in samples:
            wanted = oracle.requests(kept, repeat)
            for key in oracle.uncached(kept, repeat):
                requests[key] = wanted[key]
        return _Advanced(target, state, round_ + 1 if requests else round_, requests)
    finally:
        oracle.close()


class _CachedKeys:
    """Which keys the call cache holds (asked per sample; the answers do not change within a
    round)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.known: set[str] = set()

    def of(self, keys: set[str]) -> set[str]:
        missing = keys - self.known
        if missing:
            self.known |= self.store.cached_call_keys(missing)
        return keys & self.known


def _finish_round(
    store: Store,
    advanced: list[_Advanced],
    out: Path,
    outcome: ShrinkRound,
    *,
    restart: Iterable[str] = (),
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
) -> ShrinkRound:
    """Write the next requests (each key once), then store the round; ended searches store
    their results beside their cases."""
    requests: dict[str, CallRequest] = {}
    for item in advanced:
        requests.update(item.requests)
    if requests:
        outcome.files, outcome.lines_per_file = _write(out, requests.values(), max_lines, max_bytes)
    outcome.requests = len(requests)
    going = [a for a in advanced if not a.state.done]
    ended = [a for a in advanced if a.state.done]
    try:
        store.save_shrink_round(
            [_search_row(a) for a in going],
            [
                RoundRequest(a.target.case.id, a.round, r)
                for a in going
                for r in a.requests.values()
            ],
            [a.target.case.id for a in ended],
            restart=restart,
        )
    except BaseException:
        for path in outcome.files:  # no request file without the searches that read its answers
            path.unlink(missing_ok=True)
        raise
    for item in ended:
        result = item.state.result()
        save_result(store, item.target, result)
        outcome.finished.append(result_json(item.target, result))
    outcome.pending = [a.target.case.id for a in going]
    outcome.round = max((a.round for a in going), default=outcome.round)
    return outcome


def _search_row(item: _Advanced) -> ShrinkSearchRow:
    case = item.target.case
    return ShrinkSearchRow(case.id, case.run_id, item.state.to_dict(), item.round)


def _write(out: Path, requests: Iterable[CallRequest], max_lines: int, max_bytes: int):
    try:
        with PartWriter(out, max_lines=max_lines, max_bytes=max_bytes) as writer:
            for request in requests:
                writer.write(
                    request_line(request.key, request.model, request.messages, request.params)
                )
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise ShrinkRoundError(f"cannot write {out}: {reason}; nothing was stored") from None
    return list(writer.parts), list(writer.lines_per_part)


def start_rounds(
    store: Store,
    case_ids: Sequence[str],
    embeddings: EmbeddingCache,
    out: Path,
    *,
    repeats: Repeats | None = None,
    max_calls: int,
) -> ShrinkRound:
    """Begin a batch search for each case (an earlier one of the case is replaced) and write
    round 1: what the call cache cannot answer of each search's first level."""
    outcome = ShrinkRound()
    advanced: list[_Advanced] = []
    for case_id in case_ids:
        try:
            target = load_target(store, case_id)
        except ShrinkInputError as exc:
            outcome.skipped[case_id] = str(exc)
            continue
        why = not_shrinkable_reason(target)
        if why is not None:
            result = not_shrinkable(len(target.edits), why)
            save_result(store, target, result)
            outcome.finished.append(result_json(target, result))
            continue
        chosen = repeats or default_repeats(store, target.case, target.config)
        state = DdminState.start(len(target.edits), chosen, max_calls)
        advanced.append(_advance(store, target, state, 0, embeddings, fresh=True))
    return _finish_round(
        store, advanced, out, outcome, restart=[a.target.case.id for a in advanced]
    )


def import_round(
    store: Store, results: Sequence[Path], embeddings: EmbeddingCache, out: Path
) -> ShrinkRound:
    """Import a round's result files (refused whole as ``batch import`` refuses them: nothing
    is written), advance every search going on, and write the next round to ``out``."""
    lines, requests, invalid = checked_results(results, store.shrink_requests_for_keys)
    already = store.cached_call_keys(requests)
    answers = {
        r.key: CachedAnswer(
            r.key,
            requests[r.key]["base_url"],
            requests[r.key]["model"],
            requests[r.key]["params"],
            requests[r.key]["messages"],
            requests[r.key]["repeat_index"],
            Completion(text=r.text, usage=r.usage),
        )
        for r in lines
        if r.ok
    }
    errors = {
        r.key: r.error for r in lines if not r.ok and r.key not in answers and r.key not in already
    }
    store.cache_calls([a for key, a in answers.items() if key not in already])
    store.set_shrink_request_errors(errors)
    outcome = ShrinkRound(answered=len(answers), line_errors=len(errors), invalid_lines=invalid)
    advanced = []
    for row in store.shrink_searches():
        try:
            target = load_target(store, row.case_id)
        except ShrinkInputError as exc:  # its case or run was deleted since
            outcome.skipped[row.case_id] = str(exc)
            continue
        state = DdminState.from_dict(row.state)
        advanced.append(_advance(store, target, state, row.round, embeddings))
    return _finish_round(store, advanced, out, outcome)
