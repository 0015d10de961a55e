"""The answer pairs behind the inconsistency rates (mixed into ``Store``).

Whether a follow-up answer *changed* is answer equivalence under the task's answer type ("5.4 km"
and "5.4" are one number), which the oracles judge in Python. SQL returns only what it can say
exactly: per group, the judged cases whose two answers differ as strings, counted per distinct
(task, source answer, follow-up answer). Equal strings are equal answers; the pairs are few (the
task parsers normalise answers), so ``app.analysis.consistency`` judges each pair once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.case_filter import CaseFilter
from storage.case_filter import case_where
from storage.delta_verbs import NTH_OF_REPEAT
from storage.endpoint_models import EndpointModels

_PAIR_GROUPS = ("model", "relation_id", "task_id", "run_id")
_JUDGED = "+verdict IN ('PASS', 'FAIL')"
_DIFFERENT = (
    "source_answer IS NOT NULL AND followup_answer IS NOT NULL AND source_answer <> followup_answer"
)
_META_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class AnswerVerbs(EndpointModels):
    """Mixin of :class:`storage.store.Store`: differing answer pairs, grouped in SQL."""

    def answer_pairs(
        self,
        flt: CaseFilter | None = None,
        by: Iterable[str] = ("model", "relation_id"),
        *,
        first_per_repeat: bool = False,
        meta_key: str | None = None,
    ) -> list[dict[str, Any]]:
        """Per group, task and distinct pair of differing answers: ``n`` judged cases.

        Columns: the group columns, ``value`` (``samples.meta[meta_key]`` of the case's sample,
        only with ``meta_key``), ``task_id``, ``source_answer``, ``followup_answer``, ``n``.
        ``first_per_repeat`` counts only the first judged follow-up of each (run, model, task,
        sample, repeat, relation), as the noise floor counts its observations.
        """
        by = tuple(by)
        for column in by:
            if column not in _PAIR_GROUPS:
                raise ValueError(f"answer pairs cannot be grouped by {column!r}")
        if meta_key is not None and not (meta_key and set(meta_key) <= _META_KEY_CHARS):
            raise ValueError(f"not a metadata key: {meta_key!r}")
        flt = flt or CaseFilter()
        keys = [c for c in by if c != "task_id"] + ["task_id"]
        kept = ", ".join([*keys, "sample_id"] if meta_key else keys)
        if first_per_repeat:
            where, params = case_where(flt, [_JUDGED])
            source = (
                f"(SELECT {kept}, source_answer, followup_answer, {NTH_OF_REPEAT} "
                f"FROM {self._cases()} {where}) WHERE nth = 1 AND {_DIFFERENT}"
            )
        else:
            where, params = case_where(flt, [_JUDGED, _DIFFERENT])
            source = f"{self._cases()} {where}"
        inner = (
            f"SELECT {kept}, source_answer, followup_answer, count(*) AS n FROM {source} "
            f"GROUP BY {kept}, source_answer, followup_answer"
        )
        if meta_key is None:
            return self._query(inner, params)
        columns = ", ".join(f"p.{c} AS {c}" for c in keys)
        group = ", ".join([*(f"p.{c}" for c in keys), "value", "p.source_answer"])
        return self._query(
            f"WITH pairs AS ({inner}), sample_values AS MATERIALIZED (SELECT id, "
            "json_extract(meta, '$.' || ?) AS value FROM samples) "
            f"SELECT {columns}, v.value AS value, p.source_answer AS source_answer, "
            "p.followup_answer AS followup_answer, sum(p.n) AS n FROM pairs p "
            "LEFT JOIN sample_values v ON v.id = p.sample_id "
            f"GROUP BY {group}, p.followup_answer",
            [*params, meta_key],
        )
