"""Store basics: write transactions (BEGIN IMMEDIATE), the typed case and its one codec."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace

import pytest

from core.types import Case, Verdict
from storage import Store
from tests.triage_data import make_case, save_runs


def _other_connection(store: Store) -> sqlite3.Connection:
    # A second writer that gives up at once instead of waiting for the lock.
    return sqlite3.connect(store.path, timeout=0, isolation_level=None)


def test_write_takes_the_write_lock_up_front(store: Store) -> None:
    """Inside ``_write()`` no other connection can start a write, even before the first write."""
    other = _other_connection(store)
    try:
        with store._write(), pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")  # released at commit
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_write_rolls_back_on_exception(store: Store) -> None:
    with pytest.raises(RuntimeError), store._write():
        store.save_task("t1", "T1", "{text}", "label", ["a"])
        raise RuntimeError("boom")
    assert store.custom_task_rows() == []
    assert not store._db.conn.in_transaction


def test_nested_write_joins_the_outer_transaction(store: Store) -> None:
    with pytest.raises(RuntimeError), store._write():
        store.save_task("t1", "T1", "{text}", "label", ["a"])  # a nested _write()
        store.save_custom_relations([{"id": "custom.x", "kind": "template"}])
        raise RuntimeError("boom")
    # Both inner writes went with the outer rollback.
    assert store.custom_task_rows() == []
    assert store.custom_relation_specs() == {}


def test_write_commits(store: Store) -> None:
    with store._write():
        store.save_task("t1", "T1", "{text}", "label", ["a"])
    reader = Store(store.path, read_only=True)
    try:
        assert [row["id"] for row in reader.custom_task_rows()] == ["t1"]
    finally:
        reader.close()


def test_verbs_leave_no_transaction_open(store: Store) -> None:
    save_runs(store, [make_case("a1"), make_case("a2", index=2)])
    store.add_label("a1", "confirmed", "", "ann")
    store.undo_label("a1", "ann")
    assert not store._db.conn.in_transaction


def test_case_round_trips_through_the_store(store: Store) -> None:
    case = replace(
        make_case("a1", value=0.25),
        details={"theta": 0.8, "note": "é ü"},
        followup_input=None,
        created_at="2026-11-02T10:00:00+00:00",
    )
    save_runs(store, [case])
    assert store.case("a1") == case
    assert store.case("missing") is None
    assert store.cases_for(["run-a"]) == [case]
    (row,) = store._query("SELECT * FROM cases WHERE id = 'a1'")
    assert row["details"] == '{"note": "é ü", "theta": 0.8}'  # sorted keys, UTF-8 kept
    assert Case.from_row(row) == case


def test_record_cases_fills_created_at_and_decodes_rows(store: Store) -> None:
    save_runs(store, [make_case("a1")])
    assert store.case("a1").created_at
    row = make_case("a2", index=2).to_row()
    del row["created_at"], row["original_verdict"], row["trace_sim"]
    store.record_cases([Case.from_row(row)])
    assert store.case("a2") == replace(
        make_case("a2", index=2), created_at=store.case("a2").created_at
    )
    with pytest.raises(ValueError, match="not columns"):
        Case.from_row({**row, "bogus": 1})


def test_recording_again_updates_in_place_and_keeps_history(store: Store) -> None:
    """An upsert, not a replace: labels and the first automatic verdict survive."""
    save_runs(store, [make_case("a1")])
    store.add_label("a1", "confirmed", "", "ann")
    store.record_verdict_changes(
        "si.paraphrase",
        0.4,
        [
            {
                "id": "a1",
                "old_verdict": "FAIL",
                "new_verdict": "PASS",
                "old_reason": "automatic",
                "new_reason": "recomputed",
            }
        ],
    )
    store.record_cases([make_case("a1", reason="again")])
    case = store.case("a1")
    assert case.reason == "again" and case.verdict is Verdict.FAIL
    assert case.original_verdict is Verdict.FAIL
    assert [row["label"] for row in store.current_labels(case_ids=["a1"])] == ["confirmed"]


def test_run_verdict_counts_and_existing_ids(store: Store) -> None:
    save_runs(store, [make_case("a1"), make_case("a2", index=2, verdict="PASS")])
    assert store.run_verdict_counts("run-a") == {"FAIL": 1, "PASS": 1}
    assert store.existing_case_ids(["a1", "zz", "a2"]) == {"a1", "a2"}
    assert store.existing_case_ids([]) == set()


def test_threads_sharing_a_store_take_turns_at_writing(store: Store) -> None:
    """A second thread waits for the first one's transaction instead of joining it half-way."""
    errors: list[BaseException] = []

    def save(prefix: str) -> None:
        try:
            for i in range(40):
                store.save_task(f"{prefix}{i}", "T", "{text}", "label", ["a"])
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=save, args=(prefix,)) for prefix in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not store._db.conn.in_transaction
    assert len(store.custom_task_rows()) == 80


def test_deleting_a_run_forgets_its_remote_batches_but_keeps_its_exported_requests(tmp_path):
    """A deleted run has no batches to follow (`batch status` would name a run that is gone),
    but its exported requests stay: a result file that arrives later still fills the cache."""
    from core.types import CallRequest, Endpoint
    from storage.run_verbs import RunDefinition

    store = Store(tmp_path / "s.db")
    endpoint = Endpoint(name="e", base_url="http://x/v1", model="m")
    store.save_run(
        RunDefinition("r1", endpoint=endpoint, task_id="sentiment", config={}, samples=[])
    )
    messages = [{"role": "user", "content": "hi"}]
    store.record_batch_requests(
        "r1", "calls", [CallRequest("k1", "http://x/v1", "m", {}, messages, 0)]
    )
    store.record_batch_job(
        "r1", 1, stage="calls", remote_batch_id="b", input_file_id="f", status="completed"
    )
    store.delete_run("r1")
    assert store.batch_jobs("r1") == []
    assert "k1" in store.batch_requests_for_keys(["k1"])


def test_a_migration_script_runs_statement_by_statement_inside_its_transaction(tmp_path):
    """m001's script is cut into statements at each ';' (sqlite-utils cut it at every character:
    ~40 ms of CPU per new database). A ';' in a string or a comment stays in its statement, and
    the statements run in the migration's transaction, so a failing one leaves nothing behind."""
    from sqlite_utils import Database

    from storage.migrations import _execute_script

    db = Database(tmp_path / "script.db")
    with db.atomic():
        _execute_script(
            db,
            """
            CREATE TABLE t (a TEXT DEFAULT 'x;y');  -- a comment; with a semicolon
            INSERT INTO t (a) VALUES ('1;2');
            INSERT INTO t DEFAULT VALUES;
            """,
        )
    assert [row[0] for row in db.execute("SELECT a FROM t ORDER BY rowid")] == ["1;2", "x;y"]
    with pytest.raises(sqlite3.OperationalError, match="nowhere"), db.atomic():
        _execute_script(db, "CREATE TABLE u (b); INSERT INTO nowhere VALUES (1);")
    assert db.table_names() == ["t"]
    with pytest.raises(ValueError, match="incomplete"), db.atomic():
        _execute_script(db, "CREATE TABLE v (c TEXT DEFAULT 'open")
    assert db.table_names() == ["t"]
    db.close()


def test_a_new_database_records_each_migration_once_in_the_listed_order(tmp_path):
    """The migrations run in the order of our own list (m003 before m002, as databases already
    hold them); opening the database again applies nothing twice."""
    from storage.migrations import MIGRATIONS, unknown_migrations

    def recorded(store: Store) -> list[str]:
        return [
            row["name"] for row in store._query("SELECT name FROM _sqlite_migrations ORDER BY id")
        ]

    store = Store(tmp_path / "m.db")
    assert recorded(store) == [migration.__name__ for migration in MIGRATIONS]
    assert recorded(store)[1:3] == ["m003_triage", "m002_analysis"]
    store.close()
    reopened = Store(tmp_path / "m.db")
    assert recorded(reopened) == [migration.__name__ for migration in MIGRATIONS]
    assert unknown_migrations(reopened._db) == []
    reopened.close()
