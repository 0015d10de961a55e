"""``batch export --submit`` and ``batch status``: the Files + Batches exchange with a server.

Everything runs against the fake OpenAI server on 127.0.0.1 (tests/fake_openai.py), whose batch
lines are answered exactly as its ``/v1/chat/completions`` answers them; never the internet.
Waits are injected (``sleep``, ``clock``), so no test sleeps for real.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from app.batch import remote
from app.batch.remote import NO_BATCH_API, RemoteBatchError, RemoteJob, RequestCounts
from app.batch.remote_cli import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_RUNNING,
    batch_status_command,
    configure_remote_batch,
    status_lines,
    submit_and_import,
    submit_export,
    wait_and_import,
)
from core.records import Run
from core.types import Endpoint
from tests.fake_openai import BatchApiError, FakeBehaviour, FakeOpenAIServer

SECRET = "sk-test-never-show-me-0123456789"


def no_sleep(seconds: float) -> None:
    pass


def request_line(custom_id: str, text: str, model: str = "fake-model") -> dict:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": model,
            "messages": [{"role": "user", "content": text}],
            "temperature": 0.0,
        },
    }


def write_part(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def two_parts(tmp_path) -> list[Path]:
    """Two exported parts: 3 requests and 2 requests."""
    return [
        write_part(
            tmp_path / "out-001.jsonl",
            [
                request_line("k1", "I love this film"),
                request_line("k2", "A dull, bad film"),
                request_line("k3", "great acting"),
            ],
        ),
        write_part(
            tmp_path / "out-002.jsonl",
            [request_line("k4", "good fun"), request_line("k5", "boring")],
        ),
    ]


def serve(**behaviour) -> FakeOpenAIServer:
    return FakeOpenAIServer(FakeBehaviour(**behaviour))


def endpoint_of(server: FakeOpenAIServer, **fields) -> Endpoint:
    return Endpoint(name="fake", base_url=server.base_url, model="fake-model", **fields)


def test_two_parts_are_submitted_polled_to_completion_and_downloaded(tmp_path, two_parts):
    """The whole exchange: one batch per part, progress reported as the counts grow, the
    output file answers each line as /v1/chat/completions does, a failed line is in the error
    file."""
    with serve(batch_failing_ids=frozenset({"k5"})) as server:
        endpoint = endpoint_of(server)
        jobs = remote.submit_parts(endpoint, two_parts, run_id="run-1", sleep=no_sleep)
        assert [job.part for job in jobs] == [1, 2]
        assert [job.status for job in jobs] == ["validating", "validating"]
        assert len({job.remote_batch_id for job in jobs}) == 2

        progress: list[tuple[int, str, RequestCounts]] = []
        jobs = remote.poll(
            endpoint,
            jobs,
            interval_s=0,
            sleep=no_sleep,
            on_progress=lambda job: progress.append((job.part, job.status, job.counts)),
        )
        assert [job.status for job in jobs] == ["completed", "completed"]
        part1 = [(status, counts) for part, status, counts in progress if part == 1]
        assert [status for status, _ in part1] == [
            "in_progress",
            "in_progress",
            "finalizing",
            "completed",
        ]
        answered = [counts.completed + counts.failed for _, counts in part1]
        assert answered == sorted(answered) and answered[-1] == 3  # counts only grow
        assert jobs[0].counts == RequestCounts(completed=3, failed=0, total=3)
        assert jobs[1].counts == RequestCounts(completed=1, failed=1, total=2)

        paths = remote.download_results(endpoint, jobs, tmp_path / "results")
        names = sorted(path.name for path in paths)
        assert names == [
            "results-calls-001-output.jsonl",
            "results-calls-002-errors.jsonl",
            "results-calls-002-output.jsonl",
        ]
        online = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        output = read_jsonl(tmp_path / "results" / "results-calls-001-output.jsonl")
        assert [line["custom_id"] for line in output] == ["k1", "k2", "k3"]
        texts = ["I love this film", "A dull, bad film", "great acting"]
        for line, text in zip(output, texts, strict=True):
            assert line["error"] is None
            assert line["response"]["status_code"] == 200
            expected = online.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": text}]
            )
            assert (
                line["response"]["body"]["choices"][0]["message"]["content"]
                == expected.choices[0].message.content
            )
        [error_line] = read_jsonl(tmp_path / "results" / "results-calls-002-errors.jsonl")
        assert error_line["custom_id"] == "k5"
        assert error_line["response"]["status_code"] == 500
        assert not list((tmp_path / "results").glob("*.part"))  # no half-written files left


def test_submit_and_import_hands_every_result_file_to_import(tmp_path, two_parts):
    with serve(batch_failing_ids=frozenset({"k2"})) as server:
        imported: list[list[Path]] = []
        seen: list[str] = []
        outcome = submit_and_import(
            endpoint_of(server),
            two_parts,
            import_results=lambda paths: imported.append(paths) or "imported",
            results_dir=tmp_path / "results",
            run_id="run-1",
            poll_interval_s=0,
            on_line=seen.append,
            sleep=no_sleep,
        )
    assert outcome.exit_code == EXIT_DONE
    assert outcome.imported == "imported"
    assert imported == [outcome.result_files]
    assert {path.name for path in outcome.result_files} == {
        "results-calls-001-output.jsonl",
        "results-calls-001-errors.jsonl",
        "results-calls-002-output.jsonl",
    }
    assert seen == outcome.lines
    assert "part 1/2: out-001.jsonl submitted as batch" in seen[0]
    assert any("part 2/2" in line and "in_progress" in line for line in seen)
    assert any(line.startswith("downloaded 3 result file(s)") for line in seen)


@pytest.mark.parametrize("status", [404, 405])
def test_a_server_without_the_batch_api_gets_one_clear_line(tmp_path, two_parts, status):
    with serve(batch_api=False, batch_api_missing_status=status) as server:
        with pytest.raises(RemoteBatchError) as caught:
            remote.submit_parts(endpoint_of(server), two_parts, sleep=no_sleep)
        assert caught.value.message == NO_BATCH_API
        called = []
        outcome = submit_and_import(
            endpoint_of(server),
            two_parts,
            import_results=called.append,
            results_dir=tmp_path,
            sleep=no_sleep,
        )
    assert outcome.exit_code == EXIT_FAILED
    assert outcome.lines == [f"error: {NO_BATCH_API}"]
    assert called == []


def test_a_server_answering_html_is_not_taken_for_a_batch_api(two_parts):
    with (
        serve(non_openai=True) as server,
        pytest.raises(RemoteBatchError, match="does not offer the Batch API"),
    ):
        remote.submit_parts(endpoint_of(server), two_parts, sleep=no_sleep)


def test_a_batch_that_fails_validation_lists_its_errors_and_imports_nothing(tmp_path):
    """The server refuses a file with a repeated custom_id: the batch ends `failed` and its
    errors (line, code, message) are shown; there is nothing to import."""
    bad = write_part(
        tmp_path / "out.jsonl", [request_line("k1", "good"), request_line("k1", "bad")]
    )
    with serve() as server:
        called = []
        outcome = submit_and_import(
            endpoint_of(server),
            [bad],
            import_results=called.append,
            results_dir=tmp_path / "results",
            poll_interval_s=0,
            sleep=no_sleep,
        )
    [job] = outcome.jobs
    assert job.status == "failed"
    assert job.errors == ("line 2: duplicate_custom_id: custom_id 'k1' is repeated",)
    assert outcome.exit_code == EXIT_FAILED
    assert called == []
    assert "part 1: the batch failed" in outcome.lines
    assert "  error: line 2: duplicate_custom_id: custom_id 'k1' is repeated" in outcome.lines
    assert "  error: line 2: duplicate_custom_id" in "\n".join(status_lines(outcome.jobs))


def test_an_expired_batch_imports_what_was_answered_and_the_lines_that_never_ran(
    tmp_path, two_parts
):
    with serve(batch_end="expired") as server:
        imported = []
        outcome = submit_and_import(
            endpoint_of(server),
            two_parts[:1],
            import_results=imported.append,
            results_dir=tmp_path / "results",
            poll_interval_s=0,
            sleep=no_sleep,
        )
    [job] = outcome.jobs
    assert job.status == "expired"
    assert outcome.exit_code == EXIT_FAILED
    assert "part 1: the batch expired" in outcome.lines
    [paths] = imported
    by_kind = {path.name.rsplit("-", 1)[1]: read_jsonl(path) for path in paths}
    assert [line["custom_id"] for line in by_kind["output.jsonl"]] == ["k1"]
    never_ran = by_kind["errors.jsonl"]
    assert [line["custom_id"] for line in never_ran] == ["k2", "k3"]
    assert {line["error"]["code"] for line in never_ran} == {"batch_expired"}
    assert all(line["response"] is None for line in never_ran)


def test_a_batch_failed_by_the_server_shows_the_servers_error(tmp_path, two_parts):
    with serve(batch_end="failed") as server:
        outcome = submit_and_import(
            endpoint_of(server),
            two_parts[:1],
            import_results=lambda paths: pytest.fail("nothing to import"),
            results_dir=tmp_path,
            poll_interval_s=0,
            sleep=no_sleep,
        )
    assert [job.status for job in outcome.jobs] == ["failed"]
    assert outcome.jobs[0].errors == ("server_error: the batch failed",)
    assert "the server returned no results to import" in outcome.lines


def test_cancel_stops_a_running_batch_and_keeps_what_was_answered(tmp_path, two_parts):
    with serve(batch_steps=2) as server:
        endpoint = endpoint_of(server)
        jobs = remote.submit_parts(endpoint, two_parts[:1], sleep=no_sleep)
        jobs = remote.refresh(endpoint, jobs)  # one poll: in_progress, 1 of 3 answered
        assert jobs[0].status == "in_progress"
        jobs = remote.cancel(endpoint, jobs)
        assert jobs[0].status == "cancelling"
        jobs = remote.poll(endpoint, jobs, interval_s=0, sleep=no_sleep)
        assert jobs[0].status == "cancelled"
        assert jobs[0].counts == RequestCounts(completed=1, failed=2, total=3)
        paths = remote.download_results(endpoint, jobs, tmp_path)
        errors = read_jsonl(next(path for path in paths if path.name.endswith("errors.jsonl")))
        assert {line["error"]["code"] for line in errors} == {"batch_cancelled"}
        # Cancelling a batch that has ended asks nothing more of it: it stays as it was.
        assert remote.cancel(endpoint, jobs) == jobs


def test_cancelling_a_batch_that_has_just_ended_shows_how_it_ended(two_parts):
    """The server refuses (409) to cancel a batch that ended since the last poll: the job
    then shows the batch as it ended, not an error."""
    with serve(batch_steps=1) as server:
        endpoint = endpoint_of(server)
        submitted = remote.submit_parts(endpoint, two_parts[:1], sleep=no_sleep)
        ended = remote.poll(endpoint, submitted, interval_s=0, sleep=no_sleep)
        assert ended[0].status == "completed"
        [job] = remote.cancel(endpoint, submitted)  # still "validating" as far as we knew
    assert job == ended[0]


def test_transient_errors_while_polling_are_retried_with_a_growing_pause(two_parts):
    """A 500, a 429 and a dropped connection on the poll are tried again (after 1, 2, 4 s);
    the batch still completes."""
    with serve() as server:
        endpoint = endpoint_of(server)
        jobs = remote.submit_parts(endpoint, two_parts[:1], sleep=no_sleep)
        server.behaviour.batch_faults.extend(["500", "429", "reset"])
        pauses: list[float] = []
        retries: list[str] = []
        jobs = remote.poll(
            endpoint, jobs, interval_s=0, sleep=pauses.append, on_retry=retries.append
        )
    assert jobs[0].status == "completed"
    assert pauses[:3] == [1.0, 2.0, 4.0]
    assert pauses[3:] == [0] * len(pauses[3:])  # back to the interval once it answers
    assert retries[0] == "the server answered 500: boom"
    assert retries[1] == "the server answered 429: slow down"
    assert retries[2].startswith("cannot reach http://127.0.0.1")


def test_a_server_that_stays_down_ends_the_poll_after_the_patience(two_parts):
    with serve() as server:
        endpoint = endpoint_of(server)
        jobs = remote.submit_parts(endpoint, two_parts[:1], sleep=no_sleep)
        server.behaviour.batch_faults.extend(["500"] * 50)
        now = [0.0]

        def sleep(seconds: float) -> None:
            now[0] += seconds

        with pytest.raises(RemoteBatchError, match=r"answered 500.*for 60 s") as caught:
            remote.poll(
                endpoint, jobs, interval_s=5, patience_s=60, sleep=sleep, clock=lambda: now[0]
            )
    assert caught.value.jobs == jobs  # the jobs go back with the error: they exist remotely


def test_polling_stops_at_the_timeout_and_says_how_to_come_back(tmp_path, two_parts):
    with serve(batch_steps=50) as server:
        now = [0.0]

        def sleep(seconds: float) -> None:
            now[0] += seconds

        outcome = submit_and_import(
            endpoint_of(server),
            two_parts,
            import_results=lambda paths: pytest.fail("still running"),
            results_dir=tmp_path,
            run_id="run-1",
            poll_interval_s=10,
            timeout_s=25,
            sleep=sleep,
            clock=lambda: now[0],
        )
    assert outcome.exit_code == EXIT_RUNNING
    assert {job.status for job in outcome.jobs} == {"in_progress"}
    assert outcome.lines[-1] == (
        "2 of 2 batches still running; check again later: morphscope batch status run-1 --wait"
    )


def test_a_failed_upload_is_retried_but_a_failed_batch_creation_is_not(two_parts):
    """A 500 on the upload is tried again. A 500 on creating the batch is not (the batch may
    exist already, and would run twice): the error carries the parts already submitted."""
    with serve(batch_faults=["500"]) as server:
        jobs = remote.submit_parts(endpoint_of(server), two_parts, sleep=no_sleep)
        assert [job.part for job in jobs] == [1, 2]
        assert server.stats.batch_calls == 5  # the failed upload, 2 uploads, 2 creations
    with serve() as server:
        create = server.batches.create
        creations: list[dict] = []

        def second_creation_fails(request: dict) -> dict:
            creations.append(request)
            if len(creations) == 2:
                raise BatchApiError(500, "boom")
            return create(request)

        server.batches.create = second_creation_fails
        with pytest.raises(RemoteBatchError, match="answered 500: boom") as caught:
            remote.submit_parts(endpoint_of(server), two_parts, sleep=no_sleep)
    assert len(creations) == 2  # not tried again
    assert [job.part for job in caught.value.jobs] == [1]


def test_the_api_key_is_never_in_a_message_a_saved_job_or_the_log(
    tmp_path, two_parts, monkeypatch, caplog
):
    monkeypatch.setenv("MORPHSCOPE_TEST_BATCH_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    saved: list[dict] = []
    with serve(batch_faults=["500", "401"]) as server:
        endpoint = endpoint_of(server, api_key_env="MORPHSCOPE_TEST_BATCH_KEY")
        refused = submit_and_import(
            endpoint,
            two_parts,
            import_results=lambda paths: None,
            results_dir=tmp_path,
            sleep=no_sleep,
        )
        done = submit_and_import(
            endpoint,
            two_parts,
            import_results=lambda paths: None,
            results_dir=tmp_path,
            save=lambda job: saved.append(job.stored_fields()),
            poll_interval_s=0,
            sleep=no_sleep,
        )
    assert refused.lines == [
        "error: the server refused the API key (401); check $MORPHSCOPE_TEST_BATCH_KEY"
    ]
    assert done.exit_code == EXIT_DONE
    everything = "\n".join(
        [*refused.lines, *done.lines, json.dumps(saved), repr(done.jobs), caplog.text]
    )
    for path in tmp_path.rglob("*.jsonl"):
        everything += path.read_text(encoding="utf-8")
    assert SECRET not in everything


# ---------------------------------------------------------------- store glue and the commands


def stored_run(config: dict) -> Run:
    """Run "run-1" as the store would hand it out, made with ``config``."""
    return Run(
        id="run-1", created_at="2026-01-01T00:00:00", finished_at=None, status="awaiting_batch",
        endpoint_name="m", model="target", task_id="sentiment", dataset=None, config=config,
        n_planned=0, n_cases=0,
    )  # fmt: skip


class FakeJobStore:
    """The store verbs ``--submit`` and ``batch status`` use, kept in memory (``counts``
    decoded, as ``Store.batch_jobs`` hands them out)."""

    def __init__(self, runs: dict[str, Run]) -> None:
        self.runs = runs
        self.rows: dict[tuple[str, int], dict] = {}
        self.recorded: list[tuple[str, int]] = []

    def run(self, run_id: str) -> Run | None:
        return self.runs.get(run_id)

    def record_batch_job(self, run_id, part, *, stage, remote_batch_id, input_file_id, status):
        assert (run_id, part) not in self.rows
        self.recorded.append((run_id, part))
        self.rows[(run_id, part)] = {
            "run_id": run_id,
            "part": part,
            "stage": stage,
            "remote_batch_id": remote_batch_id,
            "input_file_id": input_file_id,
            "status": status,
            "output_file_id": None,
            "error_file_id": None,
            "counts": {},
        }

    def update_batch_job(self, run_id, part, **fields):
        self.rows[(run_id, part)].update(fields)

    def batch_jobs(self, run_id: str) -> list[dict]:
        return [dict(row) for key, row in sorted(self.rows.items()) if key[0] == run_id]


def command_args(parser_name: str, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    status = sub.add_parser("status")
    export = sub.add_parser("export")
    export.add_argument("--db")
    configure_remote_batch(status, export)
    return parser.parse_args([parser_name, *argv])


def test_the_options_parse():
    args = command_args("export", ["--submit", "--poll-interval", "5", "--db", "x.db"])
    assert (args.submit, args.poll_interval, args.poll_timeout) == (True, 5.0, None)
    args = command_args("status", ["RUN", "--wait", "--json", "--results-dir", "r"])
    assert (args.run_id, args.wait, args.json, args.results_dir) == ("RUN", True, True, Path("r"))
    assert command_args("export", []).submit is False


def test_submit_saves_each_job_and_status_picks_them_up_again(tmp_path, two_parts):
    """`batch export --submit` that stops waiting keeps its jobs; `batch status RUN` shows
    them as the server has them now; `batch status RUN --wait` finishes and imports."""
    with serve(batch_steps=3) as server:
        run = stored_run({"endpoint": endpoint_of(server).to_dict()})
        store = FakeJobStore({"run-1": run})
        export = argparse.Namespace(run_id="run-1", stage="calls", files=two_parts)
        lines: list[str] = []
        now = [0.0]
        args = command_args(
            "export",
            ["--submit", "--poll-interval", "0", "--poll-timeout", "0", "--db", str(tmp_path / "m.db")],
        )  # fmt: skip
        code = submit_export(
            args,
            export,
            store=store,
            import_results=lambda paths: pytest.fail("not yet"),
            on_line=lines.append,
            sleep=lambda s: now.__setitem__(0, now[0] + s),
        )
        assert code == EXIT_RUNNING
        assert store.recorded == [("run-1", 1), ("run-1", 2)]  # recorded once, then updated
        assert [row["status"] for row in store.batch_jobs("run-1")] == ["in_progress"] * 2
        assert remote.stored_jobs(store, "run-1")[0].counts.total == 3

        lines.clear()
        args = command_args("status", ["run-1", "--db", str(tmp_path / "m.db")])
        code = batch_status_command(
            args, store=store, import_results=lambda paths: None, on_line=lines.append
        )
        assert code == EXIT_RUNNING
        assert lines[0].startswith("part 1/2 (batch_fake")
        assert lines[0].endswith(": in_progress, 1 of 3 answered")
        assert lines[-2] == "2 batches: 2 in_progress"
        assert lines[-1] == "wait for them and import: morphscope batch status run-1 --wait"

        imported: list[list[Path]] = []
        args = command_args(
            "status",
            ["run-1", "--wait", "--poll-interval", "0", "--json", "--db", str(tmp_path / "m.db")],
        )
        lines.clear()
        code = batch_status_command(
            args, store=store, import_results=imported.append, on_line=lines.append
        )
    assert code == EXIT_DONE
    [paths] = imported
    assert len(paths) == 2
    assert all(path.parent == tmp_path / "batch-results" / "run-1" for path in paths)
    [printed] = lines  # --json: the JSON alone
    report = json.loads(printed)
    assert [job["status"] for job in report["jobs"]] == ["completed", "completed"]
    assert [row["status"] for row in store.batch_jobs("run-1")] == ["completed"] * 2


def test_status_of_an_unknown_run_or_a_run_with_no_batches(tmp_path):
    store = FakeJobStore({"run-1": stored_run({})})
    lines: list[str] = []
    unknown = command_args("status", ["nope"])
    assert batch_status_command(unknown, store=store, import_results=print, on_line=lines.append) == 2  # fmt: skip
    assert lines == ["error: no run nope in this database"]
    lines.clear()
    none = command_args("status", ["run-1"])
    assert batch_status_command(none, store=store, import_results=print, on_line=lines.append) == 0  # fmt: skip
    assert lines == ["no batches were submitted for this run (`batch export --submit` sends them)"]


def test_status_shows_the_stored_jobs_when_the_server_cannot_be_reached(two_parts):
    with serve() as server:
        endpoint = endpoint_of(server)
        jobs = remote.submit_parts(endpoint, two_parts[:1], sleep=no_sleep)
    # the server is gone now
    store = FakeJobStore({"run-1": stored_run({"endpoint": endpoint.to_dict()})})
    remote.store_saver(store, "run-1")(jobs[0])
    lines: list[str] = []
    args = command_args("status", ["run-1"])
    code = batch_status_command(args, store=store, import_results=print, on_line=lines.append)
    assert code == EXIT_RUNNING
    assert lines[0].startswith("cannot reach http://127.0.0.1")
    assert lines[0].endswith("; showing the stored status")
    assert "validating" in lines[1]


def test_a_rewrites_stage_goes_to_the_transformation_endpoint():
    main = Endpoint(name="m", base_url="http://a/v1", model="target")
    transform = Endpoint(name="t", base_url="http://b/v1", model="rewriter")
    run = stored_run({"endpoint": main.to_dict(), "transformation_endpoint": transform.to_dict()})
    assert remote.endpoint_for_run(run, "rewrites").base_url == "http://b/v1"
    assert remote.endpoint_for_run(run, "calls").base_url == "http://a/v1"
    assert remote.endpoint_for_run(stored_run({"endpoint": main.to_dict()}), "rewrites") == main


def test_a_job_survives_the_round_trip_through_a_stored_row():
    job = RemoteJob(
        part=2,
        remote_batch_id="batch_1",
        input_file_id="file-1",
        status="completed",
        output_file_id="file-2",
        error_file_id=None,
        counts=RequestCounts(3, 1, 4),
        stage="rewrites",
    )
    row = {"part": 2, **job.stored_fields()}
    assert RemoteJob.from_row(row) == job


def test_wait_and_import_with_nothing_left_running_downloads_at_once(tmp_path, two_parts):
    with serve() as server:
        endpoint = endpoint_of(server)
        jobs = remote.poll(
            endpoint,
            remote.submit_parts(endpoint, two_parts, sleep=no_sleep),
            interval_s=0,
            sleep=no_sleep,
        )
        polls = server.stats.batch_polls
        outcome = wait_and_import(
            endpoint, jobs, import_results=len, results_dir=tmp_path, sleep=no_sleep
        )
        assert server.stats.batch_polls == polls  # ended batches are not asked about again
    assert outcome.imported == 2
    assert outcome.exit_code == EXIT_DONE


def test_building_the_command_line_does_not_import_the_sdk():
    """The options are added to every command's parser: they must not pull in the openai SDK
    (about half a second of imports) before a batch command actually runs."""
    code = (
        "import argparse, sys\n"
        "from app.batch.remote_cli import configure_remote_batch\n"
        "sub = argparse.ArgumentParser().add_subparsers()\n"
        "configure_remote_batch(sub.add_parser('status'), sub.add_parser('export'))\n"
        "print('openai' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_the_fake_server_serves_batches_from_its_own_process(tmp_path, two_parts):
    """``python -m tests.fake_openai`` (for end-to-end runs of the CLI) answers the Batch API."""
    root = Path(__file__).resolve().parents[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai", "--batch-steps", "1"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        endpoint = Endpoint(name="fake", base_url=base_url, model="fake-model")
        outcome = submit_and_import(
            endpoint,
            two_parts,
            import_results=len,
            results_dir=tmp_path / "results",
            poll_interval_s=0,
            sleep=no_sleep,
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert outcome.exit_code == EXIT_DONE
    assert outcome.imported == 2


def test_the_next_stage_replaces_the_earlier_stages_jobs(tmp_path):
    """A run exported in two stages (rewrites, then calls) submits parts numbered from 1 each
    time: the calls stage's jobs must not mix with the rewrites' under the same part numbers."""
    from app.batch.remote import RemoteJob, store_saver, stored_jobs
    from storage import Store

    store = Store(tmp_path / "jobs.db")
    for part in (1, 2):
        store_saver(store, "run1")(
            RemoteJob(part, f"b{part}", f"f{part}", "completed", stage="rewrites")
        )
    store_saver(store, "run1")(RemoteJob(1, "c1", "g1", "in_progress", stage="calls"))
    jobs = stored_jobs(store, "run1")
    assert [(job.part, job.stage, job.remote_batch_id) for job in jobs] == [(1, "calls", "c1")]
