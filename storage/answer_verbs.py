"""Whether a follow-up's answer changed, counted in SQL (mixed into ``Store``).

A judged case's answer *changed* when its two answers are different answers under the task's
answer type ("5.4 km" and "5.4" are one number), which the oracles judge in Python. SQL says
what it can exactly: equal strings are equal answers. The rest are handed over once per
database: :meth:`AnswerVerbs.differing_answer_pairs` lists the distinct byte-different pairs,
``app.analysis.consistency`` judges each once and returns the equivalent ones as
:class:`SameAnswers`, and the count verbs then count ``n_changed`` inside their own scan (no
second pass over the cases): a case changed when its answers differ as strings and its pair is
not one of the equivalent ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from storage.endpoint_models import EndpointModels

# Rows that can count as changed: judged, with two answers that differ as strings (a NULL
# answer makes the comparison NULL, which counts as no change).
_DIFFERING = "verdict IN ('PASS', 'FAIL') AND source_answer <> followup_answer"
# One text key per (task, source answer, follow-up answer), unambiguous whatever the answers
# hold (each part but the last is length-prefixed): a plain IN over one value lets SQLite build
# its lookup table once per query, where a row-value IN over json_each is re-run on every row.
_PAIR_KEY = (
    "length(task_id) || ':' || task_id || length(source_answer) || ':' || source_answer "
    "|| followup_answer"
)


def _pair_key(task_id: str, source_answer: str, followup_answer: str) -> str:
    """:data:`_PAIR_KEY` computed in Python (SQLite's length() counts characters, as len())."""
    return f"{len(task_id)}:{task_id}{len(source_answer)}:{source_answer}{followup_answer}"


@dataclass(frozen=True)
class SameAnswers:
    """The answer pairs that differ as strings yet are one answer under their task's answer
    type, as (task_id, source_answer, followup_answer); built by
    ``app.analysis.consistency.same_answers``."""

    pairs: frozenset[tuple[str, str, str]] = frozenset()

    def changed_sum(self) -> tuple[str, list[str]]:
        """SQL summing the judged cases whose answer changed, and its one parameter (if any)."""
        if not self.pairs:  # the common case: every differing pair is a change
            return f"sum({_DIFFERING})", []
        keys = json.dumps(sorted(_pair_key(*pair) for pair in self.pairs), ensure_ascii=False)
        # CASE first, so the key is built and looked up only for the differing rows.
        return (
            f"sum(CASE WHEN {_DIFFERING} THEN {_PAIR_KEY} NOT IN "
            "(SELECT value FROM json_each(?)) END)",
            [keys],
        )


class AnswerVerbs(EndpointModels):
    """Mixin of :class:`storage.store.Store`: the answer pairs that need answer equivalence."""

    def differing_answer_pairs(self) -> list[tuple[str, str, str]]:
        """Every distinct (task_id, source_answer, follow-up answer) of a judged case whose two
        answers differ as strings, over the whole database (one scan of the covering index)."""
        return [
            tuple(row)
            for row in self._db.execute(
                "SELECT DISTINCT task_id, source_answer, followup_answer "
                f"FROM {self._cases()} WHERE +{_DIFFERING}"
            ).fetchall()
        ]
