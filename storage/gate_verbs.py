"""Store verbs for the validity gate's summary: how many follow-ups each relation had rejected."""

from __future__ import annotations

from dataclasses import dataclass

# The gate's SKIP reasons (``relations.validity``): a follow-up identical to its source, or one
# that has probably changed the meaning. Other SKIPs (nothing to transform, a precondition on the
# source output) are not the gate's doing.
GATE_REASON_PREFIXES = ("identical_followup", "invalid_followup")


@dataclass(frozen=True)
class GateCount:
    """One relation's follow-ups in a run, and how many of them the validity gate rejected."""

    relation_id: str
    followups: int
    rejected: int

    @property
    def rejected_share(self) -> float:
        return self.rejected / self.followups if self.followups else 0.0


class GateVerbs:
    """Mixin of :class:`storage.store.Store`: read-only counts of the validity gate's SKIPs."""

    def gate_counts(self, run_id: str) -> list[GateCount]:
        """Per relation of the run (sorted by id): its distinct follow-ups and the gate's rejects.

        A follow-up is counted once however many repeats it has (sample, field, index).
        """
        rows = self._query(
            """
            SELECT relation_id,
                   count(DISTINCT sample_id || char(31) || target || char(31) || followup_index)
                       AS followups,
                   count(DISTINCT CASE
                       WHEN verdict = 'SKIP' AND (reason LIKE ? OR reason LIKE ?)
                       THEN sample_id || char(31) || target || char(31) || followup_index
                   END) AS rejected
            FROM cases WHERE run_id = ?
            GROUP BY relation_id ORDER BY relation_id
            """,
            [*(f"{prefix}%" for prefix in GATE_REASON_PREFIXES), run_id],
        )
        return [GateCount(r["relation_id"], r["followups"], r["rejected"]) for r in rows]
