"""The release gate over several runs: which runs are judged, their baselines, every relation's
verdict and rate change, and the exit code — one :class:`GateReport`, made by
:func:`evaluate_gate`, which ``morphscope gate`` and the Analysis page's Gate view both call.

(The *release* gate, not the *validity gate* that rejects follow-ups before they are sent.)

Exit codes: 0 every gated relation holds; 1 a relation failed its threshold or regressed against
its baseline; 2 bad settings or input, or nothing to judge (:class:`GateInputError`); 3 the judged
runs hold ERROR cases and ``allow_errors`` is off. A failure outranks errors: ERROR cases are
left out of every rate, so a relation that fails on the judged cases fails whatever the errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.analysis.regression import RateChange, compare_counts
from app.analysis.release_gate import FAILED, NO_DATA, REFERENCE, RelationVerdict, run_verdicts
from app.analysis.release_thresholds import GateSettings

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_ERRORS = 0, 1, 2, 3


class GateInputError(ValueError):
    """Nothing the gate can judge: an unknown run, no run at all, a baseline that does not fit."""


@dataclass(frozen=True)
class BaselineChoice:
    """Which run each judged run is compared with: ``run_id`` (one run for all), ``model`` (that
    model's latest run on the same task) or, with ``use_stored``, the baseline approved for the
    task (``morphscope baseline set``) where there is one."""

    run_id: str | None = None
    model: str | None = None
    use_stored: bool = True


@dataclass(frozen=True)
class RunGate:
    """One judged run: its relations' verdicts and, against its baseline, their rate changes."""

    run: Any  # core.records.Run
    verdicts: tuple[RelationVerdict, ...]
    baseline_run_id: str | None = None
    changes: tuple[RateChange, ...] = ()
    not_in_baseline: tuple[str, ...] = ()

    @property
    def n_errors(self) -> int:
        return sum(v.n_error for v in self.verdicts)


@dataclass(frozen=True)
class GateReport:
    """What the gate decided, run by run."""

    settings: GateSettings
    runs: tuple[RunGate, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def verdicts(self) -> list[RelationVerdict]:
        return [v for run in self.runs for v in run.verdicts]

    @property
    def failures(self) -> list[RelationVerdict]:
        return [v for v in self.verdicts if v.outcome == FAILED]

    @property
    def regressions(self) -> list[RateChange]:
        return [c for run in self.runs for c in run.changes if c.regressed]

    @property
    def n_errors(self) -> int:
        return sum(run.n_errors for run in self.runs)

    @property
    def exit_code(self) -> int:
        if self.failures or self.regressions:
            return EXIT_FAILED
        if self.n_errors and not self.settings.allow_errors:
            return EXIT_ERRORS
        return EXIT_PASSED

    def worst_first(self) -> list[RelationVerdict]:
        """Every gated verdict, failures first, then by how far the rate is above its max."""
        regressed = {(c.run_id, c.relation_id) for c in self.regressions}

        def badness(v: RelationVerdict) -> tuple:
            over = (v.gated.rate or 0.0) - (v.threshold if v.threshold is not None else 1.0)
            flagged = v.outcome == FAILED or (v.run_id, v.relation_id) in regressed
            return (not flagged, v.outcome in (REFERENCE, NO_DATA), -over, v.relation_id)

        return sorted(self.verdicts, key=badness)

    def as_dict(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "mode": self.settings.mode,
            "allow_errors": self.settings.allow_errors,
            "max_increase": self.settings.max_increase,
            "failed": len(self.failures),
            "regressed": len(self.regressions),
            "errors": self.n_errors,
            "notes": list(self.notes),
            "runs": [
                {
                    "run_id": run.run.id,
                    "model": run.run.model,
                    "task_id": run.run.task_id,
                    "status": run.run.status,
                    "baseline_run_id": run.baseline_run_id,
                    "not_in_baseline": list(run.not_in_baseline),
                    "relations": [v.as_dict() for v in run.verdicts],
                    "changes": [c.as_dict() for c in run.changes],
                }
                for run in self.runs
            ],
        }


def latest_runs(store) -> list:
    """The latest run of each model × task (``Store.runs`` lists the newest first)."""
    latest: dict[tuple[str, str], Any] = {}
    for run in store.runs():
        latest.setdefault((run.model, run.task_id), run)
    return sorted(latest.values(), key=lambda r: (r.model, r.task_id))


def _runs_to_judge(store, run_ids: list[str]) -> list:
    if not run_ids:
        runs = latest_runs(store)
        if not runs:
            raise GateInputError("the database holds no run to judge")
        return runs
    runs = []
    for run_id in dict.fromkeys(run_ids):
        run = store.run(run_id)
        if run is None:
            raise GateInputError(f"no run {run_id!r} in the database")
        runs.append(run)
    return runs


def _baseline_for(store, run, choice: BaselineChoice):
    """The baseline run of ``run`` under ``choice``, or None (nothing to compare with)."""
    if choice.run_id:
        baseline = store.run(choice.run_id)
        if baseline is None:
            raise GateInputError(f"--baseline: no run {choice.run_id!r} in the database")
        if baseline.task_id != run.task_id:
            raise GateInputError(
                f"--baseline {baseline.id} is a {baseline.task_id} run; run {run.id} is {run.task_id}"
            )
        return None if baseline.id == run.id else baseline
    if choice.model:
        candidates = [
            r for r in store.runs()
            if r.model == choice.model and r.task_id == run.task_id and r.id != run.id
        ]  # fmt: skip
        if not candidates:
            raise GateInputError(
                f"--baseline-model: no run of {choice.model} on task {run.task_id}"
            )
        return candidates[0]  # the newest
    if choice.use_stored:
        stored = store.baseline_for_task(run.task_id)
        if stored is not None and stored.run_id != run.id:
            return store.run(stored.run_id)
    return None


def _counts(verdicts) -> dict[str, tuple[int, int]]:
    return {
        v.relation_id: (v.n_fail, v.n_pass + v.n_fail) for v in verdicts if v.outcome != REFERENCE
    }


def _judge_run(store, run, settings: GateSettings, choice: BaselineChoice) -> RunGate:
    verdicts = tuple(run_verdicts(store, run, settings))
    baseline = _baseline_for(store, run, choice)
    if baseline is None:
        return RunGate(run, verdicts)
    counts = _counts(verdicts)
    baseline_counts = _counts(run_verdicts(store, baseline, settings))
    changes = compare_counts(run.id, baseline.id, counts, baseline_counts, settings.max_increase)
    compared = {c.relation_id for c in changes}
    return RunGate(
        run, verdicts, baseline.id, tuple(changes), tuple(sorted(counts.keys() - compared))
    )


def evaluate_gate(
    store, run_ids: list[str], settings: GateSettings, baseline: BaselineChoice | None = None
) -> GateReport:
    """The gate's report for ``run_ids`` (default: the latest run of each model × task)."""
    choice = baseline or BaselineChoice()
    runs = _runs_to_judge(store, run_ids)
    judged = [_judge_run(store, run, settings, choice) for run in runs]
    has_baseline = any(run.baseline_run_id for run in judged)
    if not settings.has_thresholds and not has_baseline:
        raise GateInputError(
            "nothing to judge against: give --max, --relation-max, --config or a baseline"
        )
    if not any(v.gated.judged for run in judged for v in run.verdicts):
        raise GateInputError("the runs hold no PASS or FAIL case to judge")
    notes = tuple(
        f"run {run.run.id} is {run.run.status}, not done: judged on the cases it has"
        for run in judged
        if run.run.status != "done"
    )
    return GateReport(settings, tuple(judged), notes)
