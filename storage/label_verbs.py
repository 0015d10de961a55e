"""Label verbs for Triage (mixed into ``Store``). Labels are an append-only history.

A label is never edited or deleted: ``undo_label`` appends a ``retracted`` entry whose ``retracts``
column names the label it cancels. The *current* label of a case for one labeler is their latest
label (by time, then insertion order) that no retraction cancels; the current label of a case is
the latest of those over all labelers. Both are plain SQL (the CTEs below), so the queue, the
progress bars and the counts behind the false-positive rates are computed by SQLite (the rates
themselves by the engine, ``app.analysis.triage.false_positives``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.case_filter import CaseFilter
from core.types import Label
from storage.case_filter import case_conditions, case_where
from storage.endpoint_models import EndpointModels

if TYPE_CHECKING:
    from sqlite_utils import Database

RETRACTED = "retracted"
LABELS: tuple[str, ...] = tuple(label.value for label in Label)
FALSE_POSITIVE_LABELS: tuple[str, ...] = (
    Label.FP_INVALID_FOLLOWUP.value,
    Label.FP_ORACLE.value,
)

# One row per (case, labeler): that labeler's latest label that no retraction cancels.
_CURRENT_BY_LABELER = """
current_by_labeler AS (
    SELECT id, case_id, labeler, label, note, created_at FROM (
        SELECT l.id, l.case_id, l.labeler, l.label, l.note, l.created_at,
               ROW_NUMBER() OVER (
                   PARTITION BY l.case_id, l.labeler ORDER BY l.created_at DESC, l.id DESC
               ) AS position
        FROM labels l
        WHERE l.label != 'retracted'
          AND NOT EXISTS (SELECT 1 FROM labels r WHERE r.retracts = l.id)
    ) WHERE position = 1
)"""

# One row per case: the most recent current label over all labelers.
_CURRENT_BY_CASE = """
current_by_case AS (
    SELECT id, case_id, labeler, label, note, created_at FROM (
        SELECT cl.*, ROW_NUMBER() OVER (
                   PARTITION BY cl.case_id ORDER BY cl.created_at DESC, cl.id DESC
               ) AS position
        FROM current_by_labeler cl
    ) WHERE position = 1
)"""

_QUEUE_ORDER = "c.run_id, c.relation_id, c.sample_id, c.followup_index, c.repeat_index, c.id"


def label_timestamp() -> str:
    """UTC ISO time with microseconds, so labels made within one second still sort correctly."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _where(clauses: list[str]) -> str:
    return ("WHERE " + " AND ".join(clauses)) if clauses else ""


def chosen_labels(labeler: str | None) -> tuple[str, list[Any]]:
    """A CTE prefix defining ``chosen`` = one current label per case (of ``labeler``)."""
    if labeler is None:
        return (
            f"WITH {_CURRENT_BY_LABELER}, {_CURRENT_BY_CASE}, "
            "chosen AS (SELECT * FROM current_by_case) ",
            [],
        )
    return (
        f"WITH {_CURRENT_BY_LABELER}, "
        "chosen AS (SELECT * FROM current_by_labeler WHERE labeler = ?) ",
        [labeler],
    )


class LabelVerbs(EndpointModels):
    """Mixin of :class:`storage.store.Store`: Triage's labels: add and undo them, the queue, the
    progress bars and the counts behind the false-positive rates."""

    _db: Database  # provided by Store, with ``_query(sql, params)`` and ``_write()``

    # ------------------------------------------------------------ writing labels

    def add_label(self, case_id: str, label: str, note: str = "", labeler: str = "") -> int:
        """Append a label to a case's history and return its id.

        ``label`` must be one of confirmed / fp_invalid_followup / fp_oracle / unsure (use
        ``undo_label`` to retract). Raises ValueError for an unknown label or case, or a case
        that never was a FAIL (labels judge violations).
        """
        label = str(label)
        if label not in LABELS:
            raise ValueError(f"unknown label {label!r}; expected one of {', '.join(LABELS)}")
        with self._write():
            rows = self._query(
                "SELECT verdict, original_verdict FROM cases WHERE id = ?",
                [case_id],
            )
            if not rows:
                raise ValueError(f"unknown case {case_id!r}")
            if "FAIL" not in (rows[0]["verdict"], rows[0]["original_verdict"]):
                raise ValueError(
                    f"case {case_id!r} is {rows[0]['verdict']}: only FAILs are labeled"
                )
            cursor = self._db.execute(
                "INSERT INTO labels (case_id, label, note, labeler, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [case_id, label, (note or "").strip(), (labeler or "").strip(), label_timestamp()],
            )
            return int(cursor.lastrowid)

    def undo_label(self, case_id: str, labeler: str = "", note: str = "") -> dict[str, Any] | None:
        """Cancel ``labeler``'s current label on the case by appending a 'retracted' entry.

        Returns the cancelled label's row, or None when that labeler has no label to undo. Undoing
        again cancels the label before it (a stack); the history keeps every entry.
        """
        labeler = (labeler or "").strip()
        with self._write():
            current = self._query(
                f"WITH {_CURRENT_BY_LABELER} "
                "SELECT * FROM current_by_labeler WHERE case_id = ? AND labeler = ?",
                [case_id, labeler],
            )
            if not current:
                return None
            self._db.execute(
                "INSERT INTO labels (case_id, label, note, labeler, created_at, retracts) "
                "VALUES (?, 'retracted', ?, ?, ?, ?)",
                [case_id, (note or "").strip(), labeler, label_timestamp(), current[0]["id"]],
            )
        return current[0]

    # ------------------------------------------------------------ reading labels

    def current_labels(
        self,
        labeler: str | None = None,
        *,
        per_labeler: bool = False,
        run_ids: Iterable[str] | None = None,
        case_ids: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Current labels: one row per case (latest over labelers), or per case × labeler.

        ``labeler`` restricts to that labeler's labels (then there is one row per case anyway).
        Rows: id, case_id, labeler, label, note, created_at.
        """
        source = "current_by_labeler" if (per_labeler or labeler is not None) else "current_by_case"
        clauses, params = case_conditions(
            CaseFilter.make(run_ids=run_ids, case_ids=case_ids), alias="c"
        )
        if labeler is not None:
            clauses.append("cl.labeler = ?")
            params.append(labeler)
        return self._query(
            f"WITH {_CURRENT_BY_LABELER}, {_CURRENT_BY_CASE} "
            f"SELECT cl.* FROM {source} cl CROSS JOIN cases c ON c.id = cl.case_id {_where(clauses)} "
            "ORDER BY cl.case_id, cl.labeler",
            params,
        )

    def label_history(self, case_id: str) -> list[dict[str, Any]]:
        """Every entry for a case, oldest first, with ``cancelled`` = a later undo retracted it."""
        rows = self._query(
            "SELECT l.id, l.case_id, l.label, l.note, l.labeler, l.created_at, l.retracts, "
            "EXISTS (SELECT 1 FROM labels r WHERE r.retracts = l.id) AS cancelled "
            "FROM labels l WHERE l.case_id = ? ORDER BY l.created_at, l.id",
            [case_id],
        )
        for row in rows:
            row["cancelled"] = bool(row["cancelled"])
        return rows

    def has_labels(self) -> bool:
        """Whether anyone has labeled anything yet (cheap: stops at the first row)."""
        return self._db.execute("SELECT 1 FROM labels LIMIT 1").fetchone() is not None

    def labelers(self) -> list[str]:
        """Everyone who has labeled something, sorted."""
        rows = self._query("SELECT DISTINCT labeler FROM labels WHERE labeler != '' ORDER BY 1")
        return [row["labeler"] for row in rows]

    def all_labels(self, run_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The full label history with case context (for export), oldest first.

        A retraction carries ``retracts_created_at``: the time of the label it cancels, which
        identifies that label across databases (ids do not).
        """
        clauses, params = case_conditions(CaseFilter.make(run_ids=run_ids), alias="c")
        return self._query(
            "SELECT l.case_id, c.run_id, c.model, c.relation_id, l.labeler, l.label, l.note, "
            "l.created_at, t.created_at AS retracts_created_at "
            "FROM labels l CROSS JOIN cases c ON c.id = l.case_id "
            f"LEFT JOIN labels t ON t.id = l.retracts {_where(clauses)} "
            "ORDER BY l.created_at, l.id",
            params,
        )

    def insert_label_rows(self, rows: list[dict[str, Any]]) -> int:
        """Append validated label rows (import); a retraction finds its target by time.

        Rows: case_id, label, note, labeler, created_at[, retracts_created_at]. Runs in one
        transaction; raises ValueError (and writes nothing) if a retraction's target is missing.
        """
        inserted = 0
        with self._write():
            for row in rows:
                retracts = None
                if row["label"] == RETRACTED:
                    target = self._query(
                        "SELECT l.id FROM labels l WHERE l.case_id = ? AND l.labeler = ? "
                        "AND l.created_at = ? AND l.label != 'retracted' "
                        "AND NOT EXISTS (SELECT 1 FROM labels r WHERE r.retracts = l.id) "
                        "ORDER BY l.id DESC LIMIT 1",
                        [row["case_id"], row["labeler"], row["retracts_created_at"]],
                    )
                    if not target:
                        raise ValueError(
                            f"retraction of case {row['case_id']!r} by {row['labeler']!r} points "
                            f"at a label at {row['retracts_created_at']} that does not exist"
                        )
                    retracts = target[0]["id"]
                self._db.execute(
                    "INSERT INTO labels (case_id, label, note, labeler, created_at, retracts) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        row["case_id"],
                        row["label"],
                        row["note"],
                        row["labeler"],
                        row["created_at"],
                        retracts,
                    ],
                )
                inserted += 1
        return inserted

    # ------------------------------------------------------------ queue & progress

    def _fail_filter(
        self,
        run_ids: Iterable[str] | None,
        models: Iterable[str] | None,
        tasks: Iterable[str] | None,
        relation_ids: Iterable[str] | None,
    ) -> tuple[str, list[Any]]:
        """Conditions on ``cases c`` (without WHERE) selecting the FAILs of the filters."""
        flt = CaseFilter.make(
            run_ids=run_ids, models=models, tasks=tasks, relations=relation_ids, verdicts=["FAIL"]
        )
        clauses, params = case_conditions(flt, alias="c")
        return " AND ".join(clauses), params

    def triage_queue(
        self,
        run_ids: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
        relation_ids: Iterable[str] | None = None,
        *,
        unlabeled_only: bool = False,
        labeler: str | None = None,
        labeled_by: str | None = None,
    ) -> list[str]:
        """Ids of the FAIL cases to triage, in a stable order (run, relation, sample, follow-up).

        ``unlabeled_only`` keeps cases without a current label — from ``labeler`` when given
        (so a second reviewer sees cases the first one labeled), from anyone otherwise.
        ``labeled_by`` keeps only cases that labeler currently has a label on.
        """
        conditions, params = self._fail_filter(run_ids, models, tasks, relation_ids)
        extra: list[str] = []
        if unlabeled_only:
            if labeler is None:
                extra.append(
                    "NOT EXISTS (SELECT 1 FROM current_by_labeler cl WHERE cl.case_id = c.id)"
                )
            else:
                extra.append(
                    "NOT EXISTS (SELECT 1 FROM current_by_labeler cl "
                    "WHERE cl.case_id = c.id AND cl.labeler = ?)"
                )
                params.append(labeler)
        if labeled_by is not None:
            extra.append(
                "EXISTS (SELECT 1 FROM current_by_labeler cl "
                "WHERE cl.case_id = c.id AND cl.labeler = ?)"
            )
            params.append(labeled_by)
        where = " AND ".join([conditions, *extra])
        rows = self._db.execute(
            f"WITH {_CURRENT_BY_LABELER} SELECT c.id FROM cases c WHERE {where} "
            f"ORDER BY {_QUEUE_ORDER}",
            params,
        ).fetchall()
        return [row[0] for row in rows]

    def triage_options(self) -> dict[str, list[Any]]:
        """What the queue filters can offer: runs (rows with id, model, task_id, created_at,
        n_fail), models, tasks and relations that have FAIL cases."""
        # Per run from the (run_id, relation_id, verdict) index; models and tasks from the runs.
        fails = dict(
            self._db.execute(
                "SELECT run_id, count(*) FROM cases WHERE verdict = 'FAIL' GROUP BY run_id"
            ).fetchall()
        )
        runs = [
            {**run, "n_fail": fails[run["id"]]}
            for run in self._query(
                "SELECT id, model, task_id, created_at FROM runs ORDER BY created_at DESC, id"
            )
            if run["id"] in fails
        ]
        relations = self._db.execute(
            "SELECT DISTINCT relation_id FROM cases WHERE verdict = 'FAIL' ORDER BY 1"
        ).fetchall()
        return {
            "runs": runs,
            "models": sorted({run["model"] for run in runs}),
            "tasks": sorted({run["task_id"] for run in runs}),
            "relations": [row[0] for row in relations],
        }

    def label_progress(
        self,
        run_ids: Iterable[str] | None = None,
        models: Iterable[str] | None = None,
        tasks: Iterable[str] | None = None,
        relation_ids: Iterable[str] | None = None,
        *,
        labeler: str | None = None,
    ) -> dict[str, Any]:
        """Labeled / total FAILs overall and per relation (labels of ``labeler``, or anyone's).

        Returns {"total", "labeled", "by_relation": [{relation_id, total, labeled, confirmed,
        fp_invalid_followup, fp_oracle, unsure}]}.
        """
        conditions, filter_params = self._fail_filter(run_ids, models, tasks, relation_ids)
        # Totals come from the cases indexes; label counts from the (small) labels side joined
        # to cases by primary key — never a join of every case against the labels.
        totals = self._query(
            f"SELECT c.relation_id, count(*) AS total FROM cases c WHERE {conditions} "
            "GROUP BY c.relation_id ORDER BY c.relation_id",
            filter_params,
        )
        prefix, params = chosen_labels(labeler)
        counts = ", ".join(f"coalesce(sum(ch.label = '{label}'), 0) AS {label}" for label in LABELS)
        labeled = {
            row["relation_id"]: row
            for row in self._query(
                prefix + f"SELECT c.relation_id, count(*) AS labeled, {counts} "
                f"FROM chosen ch CROSS JOIN cases c ON c.id = ch.case_id WHERE {conditions} "
                "GROUP BY c.relation_id",
                params + filter_params,
            )
        }
        empty = {"labeled": 0, **dict.fromkeys(LABELS, 0)}
        rows = [{**row, **labeled.get(row["relation_id"], empty)} for row in totals]
        return {
            "total": sum(row["total"] for row in rows),
            "labeled": sum(row["labeled"] for row in rows),
            "by_relation": rows,
        }

    # ------------------------------------------------------------ false-positive counts

    def false_positive_counts(
        self,
        flt: CaseFilter,
        *,
        labeler: str | None = None,
        by_model: bool = True,
    ) -> list[dict[str, Any]]:
        """Per model × relation (or per relation, ``model`` None): PASS/FAIL counts and how many
        FAILs currently carry each label (of ``labeler``, or anyone's).

        Rows: relation_id, model, n_pass, n_fail, confirmed, fp_invalid_followup, fp_oracle,
        unsure — groups with at least one PASS or FAIL, by relation then model. The rates are
        the engine's (``app.analysis.triage.false_positives.false_positive_rates``).
        """
        where, filter_params = case_where(flt, alias="c")
        model = self._model_column("c")  # "endpoint · model" where endpoints share a model name
        group = f"{model}, c.relation_id" if by_model else "c.relation_id"
        model_column = model if by_model else "NULL"
        # No verdict condition in WHERE: unfiltered, SQLite then scans the covering
        # (model, relation_id, verdict) index instead of looking up every PASS/FAIL row.
        rows = self._query(
            f"SELECT c.relation_id, {model_column} AS model, "
            "coalesce(sum(c.verdict = 'PASS'), 0) AS n_pass, "
            "coalesce(sum(c.verdict = 'FAIL'), 0) AS n_fail "
            f"FROM cases c {where} GROUP BY {group} HAVING n_pass + n_fail > 0 "
            f"ORDER BY c.relation_id, {model_column}",
            filter_params,
        )
        # Labels are few: count them from the labels side (cases joined by primary key;
        # CROSS JOIN makes SQLite keep that order).
        prefix, params = chosen_labels(labeler)
        fail_where, fail_params = case_where(replace(flt, verdicts=("FAIL",)), alias="c")
        counts = ", ".join(f"coalesce(sum(ch.label = '{label}'), 0) AS {label}" for label in LABELS)
        label_counts = {
            (row["relation_id"], row["model"]): row
            for row in self._query(
                prefix + f"SELECT c.relation_id, {model_column} AS model, {counts} "
                f"FROM chosen ch CROSS JOIN cases c ON c.id = ch.case_id {fail_where} "
                f"GROUP BY {group}",
                params + fail_params,
            )
        }
        empty = dict.fromkeys(LABELS, 0)
        return [
            {**row, **label_counts.get((row["relation_id"], row["model"]), empty)} for row in rows
        ]
