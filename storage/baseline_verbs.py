"""Store verbs for the release gate's approved baselines: one run per task that later runs of the
task are compared with (``morphscope baseline set`` / ``baseline show``, the dashboard's "Set as
baseline"). Not the validity gate's counts (``gate_verbs``)."""

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
