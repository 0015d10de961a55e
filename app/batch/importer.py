"""``batch import``: fill the call cache from batch result files, then judge the runs they
answer exactly as an online run would (the runner itself, with clients that never send).

Every result line is matched by its ``custom_id`` (the call's cache key) to a request a
``batch export`` recorded in this database, which says what to cache. These files are refused
whole, before anything is written: one with a result that answers no request exported here (it
belongs to another database), a request file given as results, and two lines that answer the
same request differently. Lines that are not result lines (a half-written last line, garbage)
are counted and skipped. Importing the same file again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.batch.export import CALLS, RunnerFactory, default_runner, judge_from_cache
from app.batch.formats import ParsedResults, ResultLine, iter_text_lines, parse_results
from app.clients.batch import request_identity
from app.engine.progress import RunSummary
from core.types import Completion
from storage import Store
from storage.batch_verbs import PARTIAL
from storage.cache_verbs import CachedAnswer

# How many line numbers a message lists before "…".
SHOWN_LINE_NUMBERS = 5


class BatchImportError(ValueError):
    """A result file that cannot be imported here; the message names the file, in one line."""


@dataclass
class BatchImport:
    """What an import did, per run and per line."""

    run_ids: list[str] = field(default_factory=list)
    answered: int = 0  # result lines whose answer is now in the call cache
    line_errors: dict[str, str] = field(default_factory=dict)  # key → the line's error
    invalid_lines: list[int] = field(default_factory=list)  # not result lines (by number)
    missing: dict[str, list[str]] = field(default_factory=dict)  # run → keys still unanswered
    status: dict[str, str] = field(default_factory=dict)
    summaries: dict[str, RunSummary] = field(default_factory=dict)
    # Runs whose first-stage rewrites were answered: export again for their calls.
    rewrites_answered: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        """Plain lines for the CLI."""
        lines = [
            f"answered {self.answered} calls; {len(self.line_errors)} result lines were errors"
        ]
        if self.line_errors:
            first = next(iter(self.line_errors.values()))
            lines.append(f"  first error: {first}")
        if self.invalid_lines:
            lines.append(
                f"{len(self.invalid_lines)} lines are not result lines and were skipped "
                f"(line {_numbers(self.invalid_lines)})"
            )
        for run_id in self.run_ids:
            if run_id in self.rewrites_answered:
                lines.append(
                    f"run {run_id}: stage 1 (rewrites) answered; run `batch export` again "
                    "for stage 2"
                )
                continue
            summary = self.summaries.get(run_id)
            missing = self.missing.get(run_id, [])
            text = f"run {run_id}: {self.status[run_id]}"
            if summary is not None:
                counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.verdicts.items()))
                text += f", {summary.cases} cases ({counts})"
            if missing:
                text += f"; {len(missing)} calls still missing (import their results to finish)"
            lines.append(text)
        return lines

    def to_dict(self) -> dict:
        return {
            "run_ids": self.run_ids,
            "answered": self.answered,
            "line_errors": self.line_errors,
            "invalid_lines": self.invalid_lines,
            "missing": self.missing,
            "status": self.status,
            "summaries": {run_id: s.to_dict() for run_id, s in self.summaries.items()},
            "rewrites_answered": self.rewrites_answered,
        }


def _numbers(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:SHOWN_LINE_NUMBERS])
    return shown + (", …" if len(numbers) > SHOWN_LINE_NUMBERS else "")


def _is_path(source: object) -> bool:
    return isinstance(source, Path) or (
        isinstance(source, str) and not source.lstrip().startswith("{")
    )


def _read(source: Path | Iterable[str], name: str) -> ParsedResults:
    if isinstance(source, Path):
        path = source
        if not path.is_file():
            raise BatchImportError(f"{path}: no such file")
        try:
            return parse_results(iter_text_lines(path))
        except OSError as exc:
            raise BatchImportError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    numbered = ((n, line.strip()) for n, line in enumerate(source, start=1))
    return parse_results((n, text) for n, text in numbered if text)


def import_results(
    store: Store,
    sources: Sequence[Path | str] | Iterable[str],
    *,
    name: str = "the results",
    runner_factory: RunnerFactory = default_runner,
) -> BatchImport:
    """Import result files (paths) — or the lines of one result file (strings, e.g. an
    uploaded file's; ``name`` names it in messages) — into ``store`` and judge every run they
    answer. A list of strings is paths unless one of them is a JSON object (a result line).

    Raises ``BatchImportError`` (nothing written) when a file holds no result line, is a
    request file, has results that answer no request exported to this database, or answers one
    request differently on two lines.
    """
    if isinstance(sources, (list, tuple)) and sources and all(map(_is_path, sources)):
        named = [(str(source), _read(Path(source), str(source))) for source in sources]
    else:
        named = [(name, _read(sources, name))]
    outcome = BatchImport()
    # Every file is checked before anything is written: one refused file refuses the import.
    requests: dict[str, dict] = {}
    for label, parsed in named:
        _refuse_request_lines(label, parsed)
        if not parsed.results:
            raise BatchImportError(
                f"{label}: no result lines in it ({len(parsed.invalid_lines)} unreadable lines); "
                "nothing was imported"
            )
        found = store.batch_requests_for_keys(result.key for result in parsed.results)
        _refuse_foreign(label, parsed, found)
        requests |= found
        outcome.invalid_lines += parsed.invalid_lines
    _refuse_conflicts(named)
    results = [r for _, parsed in named for r in parsed.results]
    already = store.cached_call_keys(requests)
    answers: dict[str, CachedAnswer] = {}
    for result in results:
        if not result.ok:
            continue
        request = requests[result.key]
        answers[result.key] = CachedAnswer(
            result.key,
            request["base_url"],
            request["model"],
            request["params"],
            request["messages"],
            request["repeat_index"],
            Completion(text=result.text, usage=result.usage),
        )
    errors = {
        r.key: r.error
        for r in results
        if not r.ok and r.key not in answers and r.key not in already
    }
    outcome.answered = len(answers)
    outcome.line_errors = dict(errors)
    new_answers = [answer for key, answer in answers.items() if key not in already]
    store.cache_calls(new_answers)
    changed_errors = {k: e for k, e in errors.items() if requests[k].get("error") != e}
    store.set_batch_errors(changed_errors)

    touched = {key for key in [a.key for a in new_answers] + list(changed_errors)}
    affected = sorted({run_id for request in requests.values() for run_id in request["run_ids"]})
    outcome.run_ids = affected
    for run_id in affected:
        _finish_run(store, run_id, touched, outcome, runner_factory)
    return outcome


def checked_results(
    paths: Sequence[Path], requests_for_keys: Callable[[Iterable[str]], dict[str, dict]]
) -> tuple[list[ResultLine], dict[str, dict], list[int]]:
    """Result files read and refused as ``import_results`` refuses them (a request file, no
    result line, a result that answers none of ``requests_for_keys``'s requests, two lines
    that answer one request differently): their result lines, the requests they answer by
    key, and the numbers of the lines that were no result lines. Other exports (shrink rounds)
    keep their requests elsewhere, hence the lookup."""
    named = [(str(path), _read(Path(path), str(path))) for path in paths]
    requests: dict[str, dict] = {}
    invalid: list[int] = []
    for label, parsed in named:
        _refuse_request_lines(label, parsed)
        if not parsed.results:
            raise BatchImportError(
                f"{label}: no result lines in it ({len(parsed.invalid_lines)} unreadable lines); "
                "nothing was imported"
            )
        found = requests_for_keys(result.key for result in parsed.results)
        _refuse_foreign(label, parsed, found)
        requests |= found
        invalid += parsed.invalid_lines
    _refuse_conflicts(named)
    return [r for _, parsed in named for r in parsed.results], requests, invalid


def _refuse_request_lines(label: str, parsed: ParsedResults) -> None:
    """A batch input file given as results (a common mistake): its lines ask, they answer
    nothing, and each would otherwise become a per-line error and an ERROR case."""
    if not parsed.request_lines:
        return
    if not parsed.results:
        raise BatchImportError(
            f"{label}: this is a request file; import the results file (the batch engine's "
            "output for it); nothing was imported"
        )
    count = len(parsed.request_lines)
    which = (
        f"line {parsed.request_lines[0]} is a request"
        if count == 1
        else f"{count} lines ({_numbers(parsed.request_lines)}) are requests"
    )
    raise BatchImportError(
        f"{label}: {which}, not results (a request file mixed in?); import the results file "
        "alone; nothing was imported"
    )


def _refuse_foreign(label: str, parsed: ParsedResults, found: dict[str, dict]) -> None:
    """A file with any result that answers no request exported to this database belongs to
    another database (or run): it is refused whole, its overlapping results included, so a
    run is never finished with another database's answers."""
    foreign = [result.line_number for result in parsed.results if result.key not in found]
    if not foreign:
        return
    total = len(parsed.results)
    if len(foreign) == total:
        which = f"none of its {total} results answers a request exported to this database"
    else:
        which = (
            f"{len(foreign)} of its {total} results (line {_numbers(foreign)}) answer no "
            "request exported to this database"
        )
    raise BatchImportError(
        f"{label}: {which}; it belongs to another run or database (nothing was imported)"
    )


def _refuse_conflicts(named: list[tuple[str, ParsedResults]]) -> None:
    """Two lines that answer one request with different text: which is right cannot be told,
    and keeping either silently would judge a case on a guess. Equal answers are fine; an error
    line beside an answer is too (the answer is kept)."""
    first: dict[str, tuple[str, ResultLine]] = {}
    conflicts: list[tuple[tuple[str, ResultLine], tuple[str, ResultLine]]] = []
    for label, parsed in named:
        for result in parsed.results:
            if not result.ok:
                continue
            seen = first.setdefault(result.key, (label, result))
            if seen[1].text != result.text:
                conflicts.append((seen, (label, result)))
    if not conflicts:
        return
    (label, one), (other_label, other) = conflicts[0]
    if other_label == label:
        where = f"lines {one.line_number} and {other.line_number}"
    else:
        where = f"line {one.line_number} and {other_label} line {other.line_number}"
    more = f" ({len(conflicts) - 1} more such lines)" if len(conflicts) > 1 else ""
    raise BatchImportError(
        f"{label}: {where} answer the same request (custom_id {one.key[:16]}…) with different "
        f"text{more}; keep one of them and import again (nothing was imported)"
    )


def _finish_run(
    store: Store, run_id: str, touched: set[str], outcome: BatchImport, runner_factory
) -> None:
    """Judge one run the files answered (unless nothing changed for it since it was judged)."""
    run = store.run(run_id)
    if run is None:  # deleted since its export: its answers are cached all the same
        outcome.status[run_id] = "deleted"
        return
    call_keys = store.batch_request_keys(run_id, CALLS)
    if not call_keys:  # only its first-stage rewrites were exported: it is not planned yet
        outcome.rewrites_answered.append(run_id)
        outcome.status[run_id] = run.status
        return
    missing = sorted(set(call_keys) - store.cached_call_keys(call_keys))
    changed = touched.intersection(store.batch_request_keys(run_id))
    # Judged already with what the cache holds now: done, or partial with calls still missing
    # (a run whose import was interrupted, or whose last calls another run's file answered, is
    # judged again).
    settled = run.status == "done" or (run.status == PARTIAL and missing)
    if changed or not settled:
        errors = {
            request_identity(row["model"], row["params"], row["messages"]): row["error"]
            for row in store.batch_errors(run_id)
        }
        summary = judge_from_cache(store, run_id, runner_factory, errors)
        outcome.summaries[run_id] = summary
        status = summary.status
    else:
        status = run.status
    if missing:
        outcome.missing[run_id] = missing
        if status == "done":
            status = PARTIAL
            store.set_run_status(run_id, PARTIAL)
    outcome.status[run_id] = status
