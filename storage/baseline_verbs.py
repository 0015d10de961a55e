"""Store verbs for the release gate's approved baselines — one run per task that later runs of
the task are compared with (``morphscope baseline set`` / ``baseline show``, the dashboard's "Set
as baseline") — and for comparing two runs case by case (the verdicts that flipped). Not the
validity gate's counts (``gate_verbs``)."""

from __future__ import annotations

from dataclasses import dataclass

from storage.sql_helpers import now


@dataclass(frozen=True)
class ApprovedBaseline:
    """The run approved as a task's baseline, when, and why."""

    task_id: str
    run_id: str
    model: str
    set_at: str
    note: str = ""


_BASELINE_ROWS = """
    SELECT b.task_id, b.run_id, r.model, b.set_at, b.note
    FROM release_baselines b JOIN runs r ON r.id = b.run_id
"""


class BaselineVerbs:
    """Mixin of :class:`storage.store.Store`: the approved baseline of each task."""

    def set_baseline(self, run_id: str, note: str = "") -> ApprovedBaseline:
        """Approve ``run_id`` as its task's baseline (replacing the task's previous one).
        Raises KeyError for an unknown run."""
        with self._write():
            rows = self._query("SELECT task_id FROM runs WHERE id = ?", [run_id])
            if not rows:
                raise KeyError(run_id)
            self._db.execute(
                "INSERT OR REPLACE INTO release_baselines (task_id, run_id, note, set_at) "
                "VALUES (?, ?, ?, ?)",
                [rows[0]["task_id"], run_id, note, now()],
            )
        found = self.baseline_for_task(rows[0]["task_id"])
        assert found is not None
        return found

    def baselines(self) -> list[ApprovedBaseline]:
        """Every task's approved baseline, by task id."""
        rows = self._query(f"{_BASELINE_ROWS} ORDER BY b.task_id")
        return [ApprovedBaseline(**row) for row in rows]

    def baseline_for_task(self, task_id: str) -> ApprovedBaseline | None:
        rows = self._query(f"{_BASELINE_ROWS} WHERE b.task_id = ?", [task_id])
        return ApprovedBaseline(**rows[0]) if rows else None


@dataclass(frozen=True)
class VerdictFlip:
    """One case judged PASS in one run and FAIL in the other (same sample, relation, target,
    follow-up and repeat): the two cases' ids and verdicts."""

    relation_id: str
    sample_id: str
    case_a: str
    verdict_a: str
    case_b: str
    verdict_b: str


_FLIPS = """
    FROM cases a JOIN cases b
      ON b.run_id = :run_b AND b.relation_id = a.relation_id AND b.sample_id = a.sample_id
     AND b.target = a.target AND b.followup_index = a.followup_index
     AND b.repeat_index = a.repeat_index
    WHERE a.run_id = :run_a AND a.verdict IN ('PASS', 'FAIL') AND b.verdict IN ('PASS', 'FAIL')
      AND a.verdict != b.verdict
"""


class RunComparisonVerbs:
    """Mixin of :class:`storage.store.Store`: the cases whose verdict flipped between two runs
    (what a baseline comparison shows case by case)."""

    def verdict_flips(self, run_a: str, run_b: str, limit: int = 500) -> list[VerdictFlip]:
        """Cases PASS in one run and FAIL in the other, by relation and sample (at most
        ``limit``)."""
        rows = self._query(
            "SELECT a.relation_id, a.sample_id, a.id AS case_a, a.verdict AS verdict_a, "
            f"b.id AS case_b, b.verdict AS verdict_b {_FLIPS} "
            "ORDER BY a.relation_id, a.sample_id, a.target, a.followup_index, a.repeat_index "
            "LIMIT :limit",
            {"run_a": run_a, "run_b": run_b, "limit": int(limit)},
        )
        return [VerdictFlip(**row) for row in rows]

    def verdict_flip_counts(self, run_a: str, run_b: str) -> dict[str, dict[str, int]]:
        """Per relation: how many cases went PASS→FAIL (``"worse"``) and FAIL→PASS
        (``"better"``) from run A to run B."""
        rows = self._query(
            "SELECT a.relation_id, sum(a.verdict = 'PASS') AS worse, "
            f"sum(a.verdict = 'FAIL') AS better {_FLIPS} GROUP BY a.relation_id",
            {"run_a": run_a, "run_b": run_b},
        )
        return {r["relation_id"]: {"worse": r["worse"], "better": r["better"]} for r in rows}
