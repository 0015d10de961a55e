"""Schema migrations, applied in the order of ``MIGRATIONS``; never edit an applied one — add a
new function at the end of the list.

sqlite-utils' migration runner applies them and records each in ``_sqlite_migrations``; the
list itself is ours, so the store can also tell a database written by a newer Morphscope
(``unknown_migrations``)."""

from __future__ import annotations

import hashlib
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

try:  # POSIX; elsewhere opening a new database from several processes at once is not guarded
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

MIGRATION_SET = "morphscope"

# Switching to WAL needs a moment with no other connection mid-transaction; a few tries cover it.
WAL_TRIES = 20


@contextmanager
def database_setup_lock(path: str) -> Iterator[None]:
    """A cross-process lock for one database file, held while it is set up.

    Two processes opening a new database at once would both see "no migrations applied" and
    both create the tables ("table endpoints already exists"). SQLite cannot hold its own lock
    across sqlite-utils' migration runner (``executescript`` commits), so the lock is an
    ``flock`` on a small file in the temp folder, named after the database's resolved path,
    which leaves nothing next to the user's database.
    """
    if fcntl is None:
        yield
        return
    name = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / "morphscope-locks"
    try:
        folder.mkdir(exist_ok=True)
        handle = open(folder / f"{name}.lock", "a+b")  # noqa: SIM115 - closed below
    except OSError:
        # No usable temp folder (read-only, another user's): open unguarded, as before.
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def prepare_database(db: Database, path: str) -> None:
    """Switch a file database to WAL and apply pending migrations, safely under concurrency."""
    with database_setup_lock(path):
        _enable_wal(db)
        apply_migrations(db)


def _enable_wal(db: Database) -> None:
    for attempt in range(WAL_TRIES):
        try:
            db.enable_wal()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or attempt == WAL_TRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def _execute_script(db: Database, script: str) -> None:
    """Run ``script``'s statements one by one, inside the migration's transaction.

    What ``Database.executescript`` does inside a transaction, the same statements in the same
    order, but cut at each ';' instead of at each character: sqlite-utils joins the statement so
    far again at every character, which made m001 alone cost ~40 ms of CPU per new database (every
    new CLI database, and most tests).
    """
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):  # not a ';' inside a string or a comment
            statement = pending.strip()
            if statement != ";":
                db.execute(statement)
            pending = ""
    if pending.strip().rstrip(";").strip():
        raise ValueError(f"incomplete SQL statement in a migration: {pending.strip()[:80]!r}")


def m001_initial(db: Database) -> None:
    _execute_script(
        db,
        """
        CREATE TABLE endpoints (
            name TEXT PRIMARY KEY,
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            api_key_env TEXT,            -- the variable's NAME, never the key
            params TEXT NOT NULL DEFAULT '{}',
            embedded INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            template TEXT NOT NULL,
            answer_type TEXT NOT NULL,
            labels TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL
        );
        CREATE TABLE custom_relations (
            id TEXT PRIMARY KEY,
            spec TEXT NOT NULL,          -- JSON: kind, rule, expectation, thresholds …
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE samples (
            id TEXT PRIMARY KEY,
            fields TEXT NOT NULL,
            reference TEXT,
            reference_steps TEXT NOT NULL DEFAULT '[]',
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL,        -- running / done / cancelled / interrupted
            endpoint_name TEXT NOT NULL,
            model TEXT NOT NULL,
            task_id TEXT NOT NULL,
            dataset TEXT,
            config TEXT NOT NULL,        -- the full RunConfig (re-runnable)
            n_planned INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE run_samples (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            sample_id TEXT NOT NULL REFERENCES samples(id),
            PRIMARY KEY (run_id, position)
        );
        CREATE TABLE calls (
            key TEXT PRIMARY KEY,        -- hash of base URL, model, params, messages, repeat
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            params TEXT NOT NULL,
            messages TEXT NOT NULL,
            repeat_index INTEGER NOT NULL,
            response TEXT NOT NULL,
            latency_ms REAL,
            usage TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE TABLE embeddings (
            text_hash TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,        -- float32, L2-normalised
            PRIMARY KEY (text_hash, model)
        );
        CREATE TABLE cases (
            id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            sample_id TEXT NOT NULL,
            relation_id TEXT NOT NULL,
            family TEXT NOT NULL,
            side TEXT,                   -- AgentDiff: meaning / presentation
            target TEXT NOT NULL,        -- field(s) transformed
            followup_index INTEGER NOT NULL,
            repeat_index INTEGER NOT NULL,
            model TEXT NOT NULL,
            task_id TEXT NOT NULL,
            source_input TEXT NOT NULL,  -- JSON fields
            followup_input TEXT,
            source_prompt TEXT,
            followup_prompt TEXT,
            source_output TEXT,
            followup_output TEXT,
            source_answer TEXT,
            followup_answer TEXT,
            verdict TEXT NOT NULL CHECK (verdict IN ('PASS','FAIL','SKIP','ERROR')),
            oracle TEXT,
            value REAL,                  -- the measured value (similarity, |Δ| …)
            reason TEXT NOT NULL DEFAULT '',
            details TEXT NOT NULL DEFAULT '{}',
            score_source REAL,           -- Score(M(p), s*) when a reference exists
            score_followup REAL,
            delta REAL,                  -- Δ = score_followup − score_source
            output_similarity REAL,      -- cos(source output, follow-up output)
            trace_sim REAL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX idx_cases_run ON cases(run_id, relation_id, verdict);
        CREATE INDEX idx_cases_model_relation ON cases(model, relation_id, verdict);
        CREATE INDEX idx_cases_task ON cases(task_id);
        CREATE INDEX idx_cases_verdict ON cases(verdict, relation_id);
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            case_id TEXT NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
            label TEXT NOT NULL CHECK (label IN
                ('confirmed','fp_invalid_followup','fp_oracle','unsure','retracted')),
            note TEXT NOT NULL DEFAULT '',
            labeler TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
        CREATE INDEX idx_labels_case ON labels(case_id, id);
        CREATE TABLE threshold_overrides (
            relation_id TEXT PRIMARY KEY,
            threshold REAL NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    )


def m003_triage(db: Database) -> None:
    """Triage: undo links, the original automatic verdict, and a verdict change log.

    ``labels.retracts`` points a 'retracted' entry at the label it cancels, so the current label
    of a case is a plain SQL query. ``cases.original_verdict`` is set the first time a threshold
    override recomputes a verdict; ``verdict_history`` keeps every such change.
    """
    # Separate statements (not executescript) so the migration stays inside its transaction.
    db.execute("ALTER TABLE labels ADD COLUMN retracts INTEGER")
    db.execute("CREATE INDEX idx_labels_retracts ON labels(retracts)")
    db.execute("CREATE INDEX idx_labels_labeler ON labels(labeler, case_id)")
    db.execute("ALTER TABLE cases ADD COLUMN original_verdict TEXT")
    db.execute(
        """
        CREATE TABLE verdict_history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            case_id TEXT NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
            relation_id TEXT NOT NULL,
            old_verdict TEXT NOT NULL,
            new_verdict TEXT NOT NULL,
            old_reason TEXT NOT NULL DEFAULT '',
            new_reason TEXT NOT NULL DEFAULT '',
            threshold REAL NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX idx_verdict_history_case ON verdict_history(case_id, id)")


def m002_analysis(db: Database) -> None:
    """Covering indexes for the Analysis aggregations (bench/bench_analysis_scale.py: < 1 s at
    500k cases).

    ``idx_cases_analysis`` holds every column the model × relation, cell (Δ), breakdown and
    filter queries read, in GROUP BY order (model, relation, task, sample, run), so they scan the
    index instead of the wide rows. ``idx_cases_side`` is partial: only AgentDiff cases (side set)
    for the meaning-vs-presentation gap.
    """
    db.execute(
        "CREATE INDEX IF NOT EXISTS idx_cases_analysis ON cases(model, relation_id, task_id, "
        "sample_id, run_id, verdict, delta, output_similarity, side, source_answer, "
        "followup_answer)"
    )
    db.execute(
        "CREATE INDEX IF NOT EXISTS idx_cases_side ON cases(side, model, task_id, sample_id, "
        "run_id, relation_id, source_answer, followup_answer) WHERE side IS NOT NULL"
    )


def m004_endpoint_kind(db: Database) -> None:
    """Endpoints name their kind (the client that talks to them: ``openai``, ``embedded``, …).

    The ``embedded`` flag stays, kept in step, so an older build still reads the table.
    """
    db.execute("ALTER TABLE endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'openai'")
    db.execute("UPDATE endpoints SET kind = 'embedded' WHERE embedded = 1")


def m005_step_scores(db: Database) -> None:
    """AvgStepScore per output (SI paper eq. 4): nullable, filled for samples with reference
    steps; cases recorded before stay NULL."""
    db.execute("ALTER TABLE cases ADD COLUMN step_score_source REAL")
    db.execute("ALTER TABLE cases ADD COLUMN step_score_followup REAL")


def m006_run_liveness(db: Database) -> None:
    """Runs say who runs them and when they last made progress.

    ``owner`` is ``host:pid`` of the process running it, ``heartbeat_at`` the time of its last
    sign of life: a run whose process was killed (``kill -9``) is then read as interrupted instead
    of "running" forever.
    """
    db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN heartbeat_at TEXT")


def m007_batch(db: Database) -> None:
    """Batch mode: the requests a ``batch export`` wrote, and the remote batch jobs.

    ``batch_requests`` keeps, per run and call key, what ``batch import`` needs to cache an answer
    (a result line carries only the key) and the per-line error a result file reported for it.
    A key may belong to several runs that share a call. ``batch_jobs`` follows each part file
    submitted to a Files + Batches server.
    """
    db.execute(
        """
        CREATE TABLE batch_requests (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            stage TEXT NOT NULL,
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            params TEXT NOT NULL,
            messages TEXT NOT NULL,
            repeat_index INTEGER NOT NULL,
            error TEXT,
            exported_at TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        )
        """
    )
    db.execute("CREATE INDEX idx_batch_requests_key ON batch_requests(key)")
    db.execute(
        """
        CREATE TABLE batch_jobs (
            run_id TEXT NOT NULL,
            part INTEGER NOT NULL,
            stage TEXT NOT NULL,
            remote_batch_id TEXT,
            input_file_id TEXT,
            output_file_id TEXT,
            error_file_id TEXT,
            status TEXT NOT NULL,
            counts TEXT NOT NULL DEFAULT '{}',
            updated_at TEXT NOT NULL,
            PRIMARY KEY (run_id, part)
        )
        """
    )


def m008_engine_version(db: Database) -> None:
    """Runs keep the version of the engine that judged them (``core.engine_version``).

    Runs recorded before stay NULL (read as version 1), so the known defects of older engines
    can flag the runs they touched, and a rerun can repair them.
    """
    db.execute("ALTER TABLE runs ADD COLUMN engine_version INTEGER")


def m009_release_baselines(db: Database) -> None:
    """The run approved as each task's baseline for the release gate (``morphscope baseline
    set``): later runs of the task are compared with it. Deleting the run drops its approval."""
    db.execute(
        """
        CREATE TABLE release_baselines (
            task_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            note TEXT NOT NULL DEFAULT '',
            set_at TEXT NOT NULL
        )
        """
    )


def m010_shrink_results(db: Database) -> None:
    """Shrunk violations (``morphscope shrink``): the fewest of a case's edits that still flip
    the answer, one row per case, kept beside the case and never replacing it."""
    db.execute(
        """
        CREATE TABLE shrink_results (
            case_id TEXT PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
            run_id TEXT NOT NULL,
            relation_id TEXT NOT NULL,
            status TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            edits_total INTEGER NOT NULL,
            kept_edits TEXT NOT NULL,
            minimal_followup TEXT NOT NULL,
            calls INTEGER NOT NULL,
            confirmed TEXT NOT NULL,
            shrunk_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX shrink_results_run ON shrink_results(run_id, relation_id)")


def m011_shrink_batch(db: Database) -> None:
    """Shrinking through batch files (``morphscope shrink --batch-export``): each case's ddmin
    search as data between rounds (``shrink_searches``, dropped when the search ends and its
    result is in ``shrink_results``), and the requests its rounds wrote (``shrink_requests``,
    which a result line's ``custom_id`` is matched to, with the error a result line gave)."""
    db.execute(
        """
        CREATE TABLE shrink_searches (
            case_id TEXT PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
            run_id TEXT NOT NULL,
            state TEXT NOT NULL,
            round INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE shrink_requests (
            case_id TEXT NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            round INTEGER NOT NULL,
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            params TEXT NOT NULL,
            messages TEXT NOT NULL,
            repeat_index INTEGER NOT NULL,
            error TEXT,
            PRIMARY KEY (case_id, key)
        )
        """
    )
    db.execute("CREATE INDEX shrink_requests_key ON shrink_requests(key)")


def m012_adaptive_sampling(db: Database) -> None:
    """How an adaptive run (`run --precision` / `--budget`) sampled its grid, as JSON
    (``core.sampling.RunSampling``); NULL for a run that sent its whole grid."""
    db.execute("ALTER TABLE runs ADD COLUMN sampling TEXT")


def m013_step_score_index(db: Database) -> None:
    """A partial covering index of the cases with both step scores, for ``step_score_stats``.

    Without it the query reads every case's table row to find the few (often none) that have
    step scores: about a sixth of the Analysis overview's work at 500k cases. The filter's
    columns are in it, so a filtered query stays on the index too.
    """
    db.execute(
        "CREATE INDEX IF NOT EXISTS idx_cases_step_scores ON cases(model, relation_id, task_id, "
        "run_id, verdict, step_score_source, step_score_followup, id) "
        "WHERE step_score_source IS NOT NULL AND step_score_followup IS NOT NULL"
    )


# The order they are applied in. m003 was written, and applied to databases, before m002.
MIGRATIONS: tuple[Callable[[Database], None], ...] = (
    m001_initial,
    m003_triage,
    m002_analysis,
    m004_endpoint_kind,
    m005_step_scores,
    m006_run_liveness,
    m007_batch,
    m008_engine_version,
    m009_release_baselines,
    m010_shrink_results,
    m011_shrink_batch,
    m012_adaptive_sampling,
    m013_step_score_index,
)


def _runner() -> Migrations:
    runner = Migrations(MIGRATION_SET)
    for migration in MIGRATIONS:
        runner()(migration)
    return runner


_RUNNER = _runner()


def apply_migrations(db: Database) -> None:
    """Apply the migrations the database has not had yet, each in its own transaction."""
    _RUNNER.apply(db)


def unknown_migrations(db: Database) -> list[str]:
    """The migrations recorded in the database that this version does not know (a newer
    Morphscope wrote them), sorted by name."""
    if Migrations.migrations_table not in db.table_names():
        return []
    applied = {
        row["name"]
        for row in db.query(
            f"SELECT name FROM {Migrations.migrations_table} WHERE migration_set = ?",
            [MIGRATION_SET],
        )
    }
    return sorted(applied - {migration.__name__ for migration in MIGRATIONS})
