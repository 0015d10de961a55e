"""SQL aggregations for the Analysis page and `report` (mixed into ``Store``), and the case rows
behind a heatmap cell, the severity scatter and the exports.

Every verb here groups in SQLite and returns small lists of dicts (one per group), never the raw
500k case rows. Derived numbers (Wilson intervals, net-of-floor rates, tests) are computed from
these aggregates in ``app.analysis.metrics`` / ``app.analysis.stats``.

Definitions used by the queries (``app.analysis.metrics`` documents the full list):

- *case counts* — ``n`` every case, ``n_pass`` / ``n_fail`` / ``n_skip`` / ``n_error`` by verdict,
  ``n_invalid_followup`` the SKIPs whose reason starts with ``invalid_followup`` (a subset of
  ``n_skip``, counted separately).
- *answered case* — a judged case with both a source and a follow-up answer (``n_answered``).
  Whether its answer *changed* (``n_changed``) is answer equivalence under the task's answer
  type: the count verbs take the pairs that differ as strings yet are one answer
  (:class:`storage.answer_verbs.SameAnswers`) and count the rest of the differing ones.
- *judged case* — a case whose verdict is PASS or FAIL. Only judged cases feed similarity,
  inconsistency, Δ, the AgentDiff gap and the statistical tests: a SKIP (the validity gate's, or
  an oracle's ``precondition: …``) and an ERROR say the relation did not apply or could not be
  judged, so their measurements describe no robustness property.
- *cell*, *observation* — see ``storage.delta_verbs`` (MAD, stability, the tests' |Δ|).
- *noise-floor observation* — one (run, model, task, sample, repeat) of a noise-floor relation: a
  multi-field task sends the unchanged input once per field target, but those are one re-sample
  of the same prompt, so only the first judged follow-up of each counts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from core.case_filter import CaseFilter
from core.types import Case, decode_case_columns
from storage import delta_verbs
from storage.agentdiff_gap import gap_rows
from storage.answer_verbs import SameAnswers
from storage.case_filter import case_where
from storage.endpoint_models import EndpointModels, with_endpoint_label

if TYPE_CHECKING:
    from sqlite_utils import Database

# Re-exported: the callers that name the identity relation or the stability threshold read them
# from here.
IDENTITY_RELATION = delta_verbs.IDENTITY_RELATION
STABILITY_THRESHOLD = delta_verbs.STABILITY_THRESHOLD

# Columns a caller may group by (validated: they are pasted into SQL).
GROUP_COLUMNS = ("model", "relation_id", "task_id", "run_id", "family", "side")

_META_KEY = re.compile(r"^[A-Za-z0-9_]+$")

# Both are read from idx_cases_analysis (migration m002), so no table row is touched.
_ANSWERED = "(source_answer IS NOT NULL AND followup_answer IS NOT NULL)"
_JUDGED = "verdict IN ('PASS', 'FAIL')"
# The same as a WHERE term: the unary + keeps SQLite on the covering idx_cases_analysis instead
# of idx_cases_verdict, which would read every matching table row.
_WHERE_JUDGED = "+verdict IN ('PASS', 'FAIL')"

# The sums of a ``verdict_counts`` row, in its column order: name → the SQL that sums it per group.
# Each is additive (a group's value is the sum of its parts'), so per-task rows pool exactly; a
# name starting with ``n`` is a count (an integer, 0 when nothing was counted). Kept lean on
# purpose: every one is evaluated for each of up to 500k rows.
VERDICT_SUMS: dict[str, str] = {
    "n": "count(*)",
    "n_pass": "sum(verdict = 'PASS')",
    "n_fail": "sum(verdict = 'FAIL')",
    "n_error": "sum(verdict = 'ERROR')",
    "n_similarity": f"count(CASE WHEN {_JUDGED} THEN output_similarity END)",
    "sum_similarity": f"total(CASE WHEN {_JUDGED} THEN output_similarity END)",
    "n_answered": f"sum({_JUDGED} AND {_ANSWERED})",
}
# Counted apart from ``VERDICT_SUMS``: SKIPs are the cases no other verdict counts, and the
# invalid follow-ups a separate query over the verdict index.
_DERIVED_COUNTS = ("n_skip", "n_invalid_followup")
VERDICT_COUNT_KEYS: tuple[str, ...] = (*VERDICT_SUMS, *_DERIVED_COUNTS)
"""The additive columns of a ``verdict_counts`` row (what pooling rows adds up)."""

# The columns the drill-down table needs (everything but the prompts).
DRILLDOWN_COLUMNS = (
    "id, run_id, sample_id, relation_id, family, side, target, followup_index, repeat_index, "
    "model, task_id, source_input, followup_input, source_output, followup_output, "
    "source_answer, followup_answer, verdict, oracle, value, reason, details, "
    "score_source, score_followup, delta, output_similarity, trace_sim, created_at"
)


def _group(by: Iterable[str]) -> tuple[str, ...]:
    by = tuple(by)
    for column in by:
        if column not in GROUP_COLUMNS:
            raise ValueError(f"cannot group by {column!r} (allowed: {', '.join(GROUP_COLUMNS)})")
    return by


def _changed_column(same_answers: SameAnswers | None) -> tuple[str, list[str]]:
    """(``, <sum> AS n_changed`` or "", its parameters) for a select list."""
    if same_answers is None:
        return "", []
    changed, params = same_answers.changed_sum()
    return f", {changed} AS n_changed", params


def _count_last(row: dict[str, Any], same_answers: SameAnswers | None) -> None:
    """``n_changed`` as an int, moved to the end of the row (where pooling expects it)."""
    if same_answers is not None:
        row["n_changed"] = int(row.pop("n_changed") or 0)


def _select_group(by: tuple[str, ...]) -> tuple[str, str]:
    """(``col, col, `` for SELECT, ``GROUP BY col, col`` or "")."""
    if not by:
        return "", ""
    columns = ", ".join(by)
    return columns + ", ", f"GROUP BY {columns} ORDER BY {columns}"


class AnalysisVerbs(EndpointModels):
    """Mixin of :class:`storage.store.Store`: aggregation verbs; every query groups in SQL rather
    than loading rows into pandas."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    # ------------------------------------------------------------ options & counts

    def data_version(self) -> str:
        """A short fingerprint of everything the Analysis numbers depend on; it changes with
        every write that can change them, whichever process or session made it.

        Read in a few milliseconds at 500k cases (index lookups, plus the small ``runs`` table):
        new or re-recorded cases (the newest case row; a resumed or re-imported run also moves
        its run's status, heartbeat or finish time), deleted runs, labels and their undo (label
        ids only grow), threshold-driven verdict changes (their history ids only grow),
        threshold overrides and custom relations (which may change a relation's role).
        Caches of calls and embeddings are not part of it: they change no number.
        """
        (row,) = self._db.execute(
            "SELECT (SELECT max(rowid) FROM cases), "
            "(SELECT max(id) FROM labels), "
            "(SELECT max(id) FROM verdict_history), "
            "(SELECT count(*) || ':' || max(created_at) || ':' || total(threshold) "
            " FROM threshold_overrides), "
            "(SELECT count(*) || ':' || max(updated_at) FROM custom_relations), "
            "(SELECT group_concat(fingerprint, '|') FROM (SELECT id || ':' || status || ':' || "
            " coalesce(finished_at, '') || ':' || coalesce(heartbeat_at, '') || ':' || "
            " created_at AS fingerprint FROM runs ORDER BY id))"
        ).fetchall()
        return hashlib.sha256(repr(tuple(row)).encode()).hexdigest()[:16]

    def filter_options(self) -> dict[str, Any]:
        """Distinct values for the filter widgets: runs, models, tasks, relations, date bounds."""
        runs = self._query(
            "SELECT id, created_at, status, model, task_id, endpoint_name, dataset "
            "FROM runs ORDER BY created_at DESC, id"
        )
        runs = [with_endpoint_label(run) for run in runs]
        source = self._cases()
        models = [
            r["model"] for r in self._query(f"SELECT DISTINCT model FROM {source} ORDER BY 1")
        ]
        tasks = [
            r["task_id"] for r in self._query(f"SELECT DISTINCT task_id FROM {source} ORDER BY 1")
        ]
        relation_rows = self._query(f"SELECT DISTINCT relation_id FROM {source} ORDER BY 1")
        relations = [r["relation_id"] for r in relation_rows]
        (bounds,) = self._query(
            "SELECT min(created_at) AS first, max(created_at) AS last FROM runs"
        )
        return {
            "runs": runs,
            "models": models,
            "tasks": tasks,
            "relations": relations,
            "date_min": bounds["first"][:10] if bounds["first"] else None,
            "date_max": bounds["last"][:10] if bounds["last"] else None,
        }

    def count_cases(self, flt: CaseFilter) -> int:
        """Number of cases matching the filter."""
        where, params = case_where(flt)
        return self._db.execute(f"SELECT count(*) FROM {self._cases()} {where}", params).fetchone()[
            0
        ]

    # ------------------------------------------------------------ verdicts, Δ and similarity

    def verdict_counts(
        self,
        flt: CaseFilter,
        by: Iterable[str] = ("model", "relation_id"),
        *,
        same_answers: SameAnswers | None = None,
    ) -> list[dict[str, Any]]:
        """Per group: case counts by verdict, output-similarity sums and answered cases.

        Columns: the group columns, then ``VERDICT_COUNT_KEYS``: ``n``, ``n_pass``, ``n_fail``,
        ``n_error``, ``n_similarity`` / ``sum_similarity`` (judged cases with an output
        similarity), ``n_answered`` (judged cases with both answers), ``n_skip``,
        ``n_invalid_followup``; with ``same_answers``, last ``n_changed`` (answered cases whose
        answer changed). Δ statistics: ``storage.delta_verbs``.
        """
        by = _group(by)
        select, group = _select_group(by)
        where, params = case_where(flt)
        sums = ", ".join(f"{sql} AS {name}" for name, sql in VERDICT_SUMS.items())
        changed, changed_params = _changed_column(same_answers)
        rows = self._query(
            f"SELECT {select}{sums}{changed} FROM {self._cases()} {where} {group}",
            [*changed_params, *params],
        )
        # invalid_followup SKIPs are rare: count them with a separate query that walks the
        # verdict index instead of reading every row's reason.
        where_skip, params_skip = case_where(
            flt, ["verdict = 'SKIP'", "reason LIKE 'invalid_followup%'"]
        )
        invalid = {
            tuple(r[c] for c in by): r["n"]
            for r in self._query(
                f"SELECT {select}count(*) AS n FROM {self._cases()} {where_skip} {group}",
                params_skip,
            )
        }
        counts = [name for name in VERDICT_SUMS if name.startswith("n")]
        for row in rows:
            for key in counts:
                row[key] = int(row[key] or 0)
            row["n_skip"] = row["n"] - row["n_pass"] - row["n_fail"] - row["n_error"]
            row["n_invalid_followup"] = invalid.get(tuple(row[c] for c in by), 0)
            _count_last(row, same_answers)
        return [row for row in rows if row["n"]]

    def step_score_stats(
        self, flt: CaseFilter, by: Iterable[str] = ("model", "relation_id")
    ) -> list[dict[str, Any]]:
        """Per group: AvgStepScore (SI paper eq. 4) of the source and follow-up outputs.

        Over scored cases (PASS or FAIL) having both scores: ``n``, ``step_score_source``,
        ``step_score_followup`` (their means) and ``step_score_delta`` (mean of follow-up −
        source per case). Groups without step scores are absent.
        """
        by = _group(by)
        select, group = _select_group(by)
        where, params = case_where(
            flt,
            [
                _WHERE_JUDGED,
                "step_score_source IS NOT NULL",
                "step_score_followup IS NOT NULL",
            ],
        )
        rows = self._query(
            f"SELECT {select}count(*) AS n, avg(step_score_source) AS step_score_source, "
            "avg(step_score_followup) AS step_score_followup, "
            "avg(step_score_followup - step_score_source) AS step_score_delta "
            f"FROM {self._cases()} {where} {group}",
            params,
        )
        return [row for row in rows if row["n"]]

    def value_sample(
        self, flt: CaseFilter, column: str = "delta", max_rows: int = 50_000
    ) -> tuple[list[tuple[str, str, float]], int]:
        """(model, relation_id, value) per case for box plots, and the stride used.

        When more than ``max_rows`` cases have a value, every k-th case by rowid is returned
        (k = the stride, deterministic), so the figure stays small and the query fast.
        """
        if column not in ("delta", "output_similarity", "value", "trace_sim"):
            raise ValueError(f"no distribution for column {column!r}")
        where, params = case_where(flt, [f"{column} IS NOT NULL", _WHERE_JUDGED])
        total = self._db.execute(
            f"SELECT count(*) FROM {self._cases()} {where}", params
        ).fetchone()[0]
        stride = max(1, -(-total // max_rows)) if max_rows else 1
        extra = [f"{column} IS NOT NULL", _WHERE_JUDGED]
        extra += [f"rowid % {stride} = 0"] if stride > 1 else []
        where, params = case_where(flt, extra)
        rows = self._db.execute(
            f"SELECT model, relation_id, {column} FROM {self._cases()} {where}", params
        ).fetchall()
        return rows, stride

    # ------------------------------------------------------------ AgentDiff gap

    def side_gap(self, flt: CaseFilter, by: Iterable[str] = ("model",)) -> list[dict[str, Any]]:
        """AgentDiff inconsistency gap per group (default: per model), as the AgentDiff paper's
        eqs. 1-2 compute it.

        A side-tagged case is *inconsistent* when its oracle judged the follow-up answer not
        equivalent to the source answer (FAIL): the oracles' answer equivalence for the task's
        answer type ("5.4 km" and "5.4" are one numeric answer), not a string comparison.
        AgentDiff relations all expect an equivalent answer; only judged cases count.

        Per cell (model, task) and relation (the paper's operator): IR = the mean over originals
        of the share of that original's cases that are inconsistent. A side's rate is the mean IR
        of its relations, and the cell's gap is meaning − presentation when the cell has both
        sides. An original with cases on one side only still counts toward that side's IRs.
        The group's ``gap`` is the mean cell gap, ``sd_gap`` their standard deviation (two cells
        or more); ``meaning_rate`` / ``presentation_rate`` the mean side rates over the cells
        having that side;
        ``n_cells``, ``n_originals`` (originals with a judged side case) and ``n_meaning`` /
        ``n_presentation`` (judged cases) say how much data stands behind them.
        """
        by = _group(by)
        for column in by:
            if column not in ("model", "task_id"):
                raise ValueError(f"the gap cannot be grouped by {column!r}")
        # side IN (...) lets SQLite use the small partial index idx_cases_side (m002).
        where, params = case_where(flt, ["side IN ('meaning', 'presentation')", _WHERE_JUDGED])
        per_original = self._query(
            "SELECT model, task_id, relation_id, side, sample_id, count(*) AS n, "
            "sum(verdict = 'FAIL') AS n_fail "
            f"FROM {self._cases()} {where} GROUP BY model, task_id, relation_id, side, sample_id",
            params,
        )
        return gap_rows(per_original, by)

    def noise_floor_counts(
        self,
        flt: CaseFilter,
        relations: Iterable[str],
        by: Iterable[str] = ("model", "task_id"),
        *,
        same_answers: SameAnswers | None = None,
    ) -> list[dict[str, Any]]:
        """Per group: judged noise-floor observations of ``relations`` by verdict.

        One observation per (run, model, task, sample, repeat, relation): the first judged
        follow-up of it (a multi-field task re-sends the unchanged input once per field target,
        which is the same re-sample counted again). The filter's relation list is replaced by
        ``relations``. Columns: the group columns, ``n``, ``n_pass``, ``n_fail``, ``n_answered``;
        with ``same_answers``, ``n_changed`` (see :meth:`verdict_counts`).
        """
        by = _group(by)
        select, group = _select_group(by)
        where, params = case_where(flt.with_relations(relations), [_WHERE_JUDGED])
        changed, changed_params = _changed_column(same_answers)
        rows = self._query(
            "WITH observations AS (SELECT model, task_id, relation_id, run_id, verdict, "
            f"source_answer, followup_answer, {_ANSWERED} AS answered, "
            f"{delta_verbs.NTH_OF_REPEAT} FROM {self._cases()} {where}) "
            f"SELECT {select}count(*) AS n, sum(verdict = 'PASS') AS n_pass, "
            f"sum(verdict = 'FAIL') AS n_fail, sum(answered) AS n_answered{changed} "
            f"FROM observations WHERE nth = 1 {group}",
            [*params, *changed_params],
        )
        for row in rows:
            for key in ("n_pass", "n_fail", "n_answered"):
                row[key] = int(row[key] or 0)
            _count_last(row, same_answers)
        return [row for row in rows if row["n"]]

    # ------------------------------------------------------------ per-category breakdown

    def meta_keys(self) -> list[str]:
        """Keys present in samples.meta (e.g. category, difficulty), most common first."""
        rows = self._query(
            "SELECT j.key AS key, count(*) AS n FROM samples, json_each(samples.meta) AS j "
            "WHERE json_valid(samples.meta) AND j.type IN ('text', 'integer', 'real') "
            "GROUP BY j.key ORDER BY n DESC, j.key"
        )
        return [r["key"] for r in rows if _META_KEY.match(r["key"])]

    def meta_breakdown(
        self,
        key: str,
        flt: CaseFilter,
        by: Iterable[str] = ("model",),
        *,
        same_answers: SameAnswers | None = None,
    ) -> list[dict[str, Any]]:
        """Per group × value of ``samples.meta[key]``: verdict counts, Δ sums, answered cases.

        Columns: the group columns, ``value``, ``n_samples``, ``n``, ``n_pass``, ``n_fail``,
        ``n_skip``, ``n_error``, ``n_delta`` / ``sum_delta`` (judged cases with a Δ),
        ``n_answered`` (judged cases with both answers); with ``same_answers``, ``n_changed`` (see
        :meth:`verdict_counts`). Cases are summed per cell in SQL, then
        joined to the samples' values (the JSON is read once per sample, not once per case).
        Samples without the key give NULL.
        """
        if not _META_KEY.match(key):
            raise ValueError(f"not a metadata key: {key!r}")
        by = _group(by)
        where, params = case_where(flt)
        changed, changed_params = _changed_column(same_answers)
        changed_total = ", sum(c.n_changed) AS n_changed" if changed else ""
        group = ", ".join([f"c.{col}" for col in by] + ["v.value"])
        # Sum per cell first (in idx_cases_analysis order: no sort over every case), then join
        # each cell to its sample's value, read once per sample into a materialised table.
        sql = (
            "WITH per_cell AS (SELECT model, relation_id, task_id, sample_id, count(*) AS n, "
            "sum(verdict = 'PASS') AS n_pass, sum(verdict = 'FAIL') AS n_fail, "
            f"sum(verdict = 'ERROR') AS n_error, count(CASE WHEN {_JUDGED} THEN delta END) "
            f"AS n_delta, total(CASE WHEN {_JUDGED} THEN delta END) AS sum_delta, "
            f"sum({_JUDGED} AND {_ANSWERED}) AS n_answered{changed} "
            f"FROM {self._cases()} {where} GROUP BY model, relation_id, task_id, sample_id), "
            "sample_values AS MATERIALIZED (SELECT id, json_extract(meta, '$.' || ?) AS value "
            "FROM samples) "
            f"SELECT {', '.join(f'c.{col} AS {col}' for col in by)}{', ' if by else ''}"
            "v.value AS value, count(DISTINCT c.sample_id) AS n_samples, sum(c.n) AS n, "
            "sum(c.n_pass) AS n_pass, sum(c.n_fail) AS n_fail, sum(c.n_error) AS n_error, "
            "sum(c.n_delta) AS n_delta, total(c.sum_delta) AS sum_delta, "
            f"sum(c.n_answered) AS n_answered{changed_total} "
            "FROM per_cell c LEFT JOIN sample_values v ON v.id = c.sample_id "
            f"GROUP BY {group} ORDER BY {group}"
        )
        rows = self._query(sql, [*changed_params, *params, key])
        for row in rows:
            for column in ("n_pass", "n_fail", "n_error", "n_answered"):
                row[column] = int(row[column] or 0)
            row["n_skip"] = row["n"] - row["n_pass"] - row["n_fail"] - row["n_error"]
            _count_last(row, same_answers)
        return rows

    # ------------------------------------------------------------ drill-down & iteration

    def cell_cases(
        self,
        flt: CaseFilter,
        *,
        model: str | None = None,
        relation_id: str | None = None,
        verdicts: Iterable[str] | None = None,
        limit: int = 500,
    ) -> list[Case]:
        """The cases of one heatmap cell (model × relation), FAILs first, at most ``limit``.

        Each case lacks only its prompts and step scores (left at their defaults)."""
        extra: list[str] = []
        params_extra: list[Any] = []
        if model is not None:
            extra.append("model = ?")
            params_extra.append(model)
        if relation_id is not None:
            extra.append("relation_id = ?")
            params_extra.append(relation_id)
        if verdicts is not None:
            verdicts = list(verdicts)
            if not verdicts:
                return []
            extra.append(f"verdict IN ({','.join('?' * len(verdicts))})")
            params_extra.extend(verdicts)
        # case_where appends the extra clauses last, so their parameters follow the filter's.
        where, params = case_where(flt, extra)
        order = (
            "CASE verdict WHEN 'FAIL' THEN 0 WHEN 'ERROR' THEN 1 WHEN 'SKIP' THEN 2 ELSE 3 END, "
            "sample_id, followup_index, repeat_index, id"
        )
        rows = self._query(
            f"SELECT {DRILLDOWN_COLUMNS} FROM {self._cases()} {where} ORDER BY {order} LIMIT {int(limit)}",
            [*params, *params_extra],
        )
        return [Case.from_row(row) for row in rows]

    def severity_rows(self, flt: CaseFilter, limit: int = 2000) -> list[Case]:
        """Up to ``limit`` judged cases with a follow-up input, for the severity scatter (a SKIP
        or ERROR has no outcome to set against its severity).

        Ordered by case id (a content hash, so effectively a fixed random sample).
        """
        where, params = case_where(flt, ["followup_input IS NOT NULL", _WHERE_JUDGED])
        rows = self._query(
            f"SELECT {DRILLDOWN_COLUMNS} FROM {self._cases()} {where} "
            f"ORDER BY id LIMIT {int(limit)}",
            params,
        )
        return [Case.from_row(row) for row in rows]

    def iter_cases(
        self,
        flt: CaseFilter,
        columns: str = "*",
        batch: int = 2000,
        *,
        decoded: bool = True,
    ) -> Iterator[dict[str, Any]]:
        """Stream matching cases (in a stable order) without holding them all in memory.

        JSON columns come decoded, unless ``decoded=False`` (the stored text, for a CSV export).
        """
        where, params = case_where(flt)
        cursor = self._db.conn.execute(
            f"SELECT {columns} FROM {self._cases()} {where} "
            "ORDER BY model, task_id, relation_id, sample_id, followup_index, repeat_index, id",
            params,
        )
        names = [d[0] for d in cursor.description]
        while True:
            chunk = cursor.fetchmany(batch)
            if not chunk:
                return
            for row in chunk:
                values = dict(zip(names, row, strict=True))
                yield decode_case_columns(values) if decoded else values
