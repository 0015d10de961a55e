"""Store verbs for the validity gate's summary: how many follow-ups each relation had rejected,
and the rewrite yield of the LLM-prompted relations (valid rewrites / attempts, with the reasons of
the others)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.case_filter import CaseFilter
from storage.case_filter import case_where

# The gate's SKIP reasons (``relations.validity``): a follow-up identical to its source, or one
# that has probably changed the meaning. Other SKIPs (nothing to transform, a precondition on the
# source output) are not the gate's doing.
GATE_REASON_PREFIXES = ("identical_followup", "invalid_followup")


@dataclass(frozen=True)
class GateCount:
    """One relation's follow-ups in a run, how many of them the validity gate rejected, and how
    many were SKIPped for another reason (the relation made no usable follow-up, it does not
    apply, a precondition failed): with both, the follow-ups left are the ones judged."""

    relation_id: str
    followups: int
    rejected: int
    skipped_otherwise: int = 0

    @property
    def rejected_share(self) -> float:
        return self.rejected / self.followups if self.followups else 0.0


class GateVerbs:
    """Mixin of :class:`storage.store.Store`: read-only counts of the validity gate's SKIPs."""

    def gate_counts(self, run_id: str) -> list[GateCount]:
        """Per relation of the run (sorted by id): its distinct follow-ups, the gate's rejects and
        the other SKIPs.

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
                   END) AS rejected,
                   count(DISTINCT CASE
                       WHEN verdict = 'SKIP' AND NOT (reason LIKE ? OR reason LIKE ?)
                       THEN sample_id || char(31) || target || char(31) || followup_index
                   END) AS skipped_otherwise
            FROM cases WHERE run_id = ?
            GROUP BY relation_id ORDER BY relation_id
            """,
            [*(f"{prefix}%" for prefix in GATE_REASON_PREFIXES * 2), run_id],
        )
        return [
            GateCount(r["relation_id"], r["followups"], r["rejected"], r["skipped_otherwise"])
            for r in rows
        ]


# SKIPs that say the rewriter was never asked: no transformation endpoint, or the relation does not
# apply. They are not attempts (the yield measures the rewriter, not the run's set-up).
_NOT_ATTEMPTED = (
    "no transformation endpoint configured%",
    "relation does not apply%",
    "relation unavailable%",
)
# Below this share of valid rewrites, the pages say the rewriter is too weak for the relation.
WEAK_REWRITER_YIELD = 0.5


@dataclass(frozen=True)
class RewriteYield:
    """One LLM-prompted relation's rewrites: attempts (distinct follow-ups the rewriter was asked
    for), how many gave a follow-up the validity gate let through, and why the others SKIPped
    (the reason's kind, the number of follow-ups; most frequent first)."""

    relation_id: str
    attempts: int
    valid: int
    skip_reasons: tuple[tuple[str, int], ...]

    @property
    def share(self) -> float:
        return self.valid / self.attempts if self.attempts else 0.0

    @property
    def too_weak(self) -> bool:
        return self.attempts > 0 and self.share < WEAK_REWRITER_YIELD


def reason_kind(reason: str) -> str:
    """A SKIP reason without its particulars: ``invalid_followup: dropped 3, Ann`` → ``dropped``,
    ``… empty paraphrase (all 3 candidates)`` → ``… empty paraphrase``."""
    text = reason.removeprefix("invalid_followup: ")
    cut = len(text)
    for marker in (" (", ' "'):
        if marker in text:
            cut = min(cut, text.index(marker))
    digit = next((i for i, ch in enumerate(text) if ch.isdigit()), None)
    if digit is not None:
        cut = min(cut, digit)
    return text[:cut].strip(" :,") or text


class RewriteYieldVerbs:
    """Mixin of :class:`storage.store.Store`: the rewrite yield of LLM-prompted relations."""

    def rewrite_yield(self, flt: CaseFilter, relation_ids: Sequence[str]) -> list[RewriteYield]:
        """Per relation of ``relation_ids`` (the LLM-prompted ones) within ``flt``, sorted by id.

        A follow-up (run, sample, field, index) counts once however many repeats it has. It is
        a valid rewrite when it was made and the gate did not SKIP it (whatever its verdict);
        a gate SKIP, or a SKIP of the relation itself (an empty or filtered rewrite), is a failed
        attempt; an ERROR before a follow-up was made (the endpoint failed) is no attempt.
        """
        if not relation_ids:
            return []
        marks = ",".join("?" * len(relation_ids))
        not_attempted = " OR ".join("reason LIKE ?" for _ in _NOT_ATTEMPTED)
        gate = " OR ".join("reason LIKE ?" for _ in GATE_REASON_PREFIXES)
        where, params = case_where(flt, [f"relation_id IN ({marks})"])
        rows = self._query(
            f"""
            WITH followups AS (
                SELECT relation_id,
                       CASE WHEN verdict = 'SKIP' AND ({gate}) THEN reason
                            WHEN followup_input IS NULL AND verdict = 'SKIP' THEN reason
                       END AS skip_reason,
                       followup_input IS NULL AND (verdict != 'SKIP' OR {not_attempted})
                           AS not_attempted
                FROM cases {where}
                GROUP BY relation_id, run_id, sample_id, target, followup_index
            )
            SELECT relation_id, skip_reason, count(*) AS n
            FROM followups WHERE NOT not_attempted
            GROUP BY relation_id, skip_reason ORDER BY relation_id
            """,
            [
                *(f"{prefix}%" for prefix in GATE_REASON_PREFIXES),
                *_NOT_ATTEMPTED,
                *params,
                *relation_ids,
            ],
        )
        return _yields(rows)


def _yields(rows) -> list[RewriteYield]:
    attempts: dict[str, int] = {}
    valid: dict[str, int] = {}
    reasons: dict[str, dict[str, int]] = {}
    for row in rows:
        relation, reason, n = row["relation_id"], row["skip_reason"], row["n"]
        attempts[relation] = attempts.get(relation, 0) + n
        if reason is None:
            valid[relation] = valid.get(relation, 0) + n
            continue
        kinds = reasons.setdefault(relation, {})
        kinds[reason_kind(reason)] = kinds.get(reason_kind(reason), 0) + n
    return [
        RewriteYield(
            relation,
            attempts[relation],
            valid.get(relation, 0),
            tuple(sorted(reasons.get(relation, {}).items(), key=lambda item: (-item[1], item[0]))),
        )
        for relation in sorted(attempts)
    ]
