"""Shrinking through batch files (issue 26 §5): `shrink --batch-export` writes round 1 of every
search, `shrink --batch-import … --batch-export …` answers a round and writes the next, one
ddmin level per round, until every search has ended — and it keeps the very edits the online
shrink keeps (the same state machine; Zeller & Hildebrandt, TSE 2002, §4)."""

from __future__ import annotations

import json
import shutil

import pytest

from app.cli.main import main
from storage import Store
from tests import test_shrink_cli as online_shrink
from tests.test_shrink_cli import three_means_negative

# The online shrink's fixtures: a char.leet run against the fake server that says "negative"
# iff the prompt holds a '3', with the bag-of-words embedder.
bow = online_shrink.bow
leet_run = online_shrink.leet_run

MAX_ROUNDS = 30


def answer_like_a_batch_engine(requests_path, results_path, *, fail_keys=()) -> int:
    """The fake batch engine: every request answered by the model that says "negative" iff
    the prompt holds a '3' (OpenAI Batch output lines); ``fail_keys`` get an error line."""
    lines = []
    for text in requests_path.read_text().splitlines():
        request = json.loads(text)
        key = request["custom_id"]
        if key in fail_keys:
            lines.append({"custom_id": key, "response": None,
                          "error": {"code": "server_error", "message": "overloaded"}})  # fmt: skip
            continue
        answer = three_means_negative(request["body"]["messages"])
        body = {"choices": [{"message": {"role": "assistant", "content": answer}}]}
        lines.append({"custom_id": key, "response": {"status_code": 200, "body": body}})
    results_path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return len(lines)


def sweep(db, run_id, tmp_path, capsys, extra=()) -> tuple[list[dict], list[int]]:
    """Every round until no requests are left: the finished cases' results, and the requests
    per round."""
    out = tmp_path / "round-1.jsonl"
    assert main(["shrink", "--run", run_id, "--db", str(db), "--batch-export", str(out),
                 "--json", *extra]) == 0  # fmt: skip
    outcome = json.loads(capsys.readouterr().out)
    finished, per_round = list(outcome["finished"]), []
    for number in range(2, MAX_ROUNDS):
        if not outcome["requests"]:
            return finished, per_round
        per_round.append(outcome["requests"])
        results = tmp_path / f"results-{number - 1}.jsonl"
        answer_like_a_batch_engine(out, results)
        out = tmp_path / f"round-{number}.jsonl"
        assert main(["shrink", "--batch-import", str(results), "--batch-export", str(out),
                     "--db", str(db), "--json"]) == 0  # fmt: skip
        outcome = json.loads(capsys.readouterr().out)
        finished += outcome["finished"]
    raise AssertionError(f"still searching after {MAX_ROUNDS} rounds")


def test_a_batch_sweep_keeps_the_edits_the_online_shrink_keeps(leet_run, tmp_path, capsys):
    server, db, run_id, fails = leet_run
    online_db = tmp_path / "online.db"
    shutil.copy(db, online_db)
    sent_before = server.stats.chat_calls
    batch, per_round = sweep(db, run_id, tmp_path, capsys)
    assert server.stats.chat_calls == sent_before  # the batch engine answered everything
    assert main(["shrink", "--run", run_id, "--db", str(online_db), "--json"]) == 0
    online = json.loads(capsys.readouterr().out)
    assert sorted(r["case_id"] for r in batch) == sorted(c.id for c in fails)
    by_case = {r["case_id"]: r for r in online}
    for result in batch:
        twin = by_case[result["case_id"]]
        assert result["status"] == twin["status"] == "minimal"
        assert result["kept_edits"] == twin["kept_edits"]
        assert result["minimal_followup"] == twin["minimal_followup"]
        (kept,) = result["kept_edits"]
        assert "3" in kept["new"]
        assert result["calls"] <= 60  # the default budget, counted as requested
    # Round 1 confirms each original: its fresh source and follow-up, 2 requests per case
    # (two cases of one sample would share the source's).
    assert per_round[0] <= 2 * len(fails)
    # One ddmin level per round: a case of n edits ends within about 2·log2(n) + 2 levels.
    assert len(per_round) <= 12
    store = Store(db)
    assert store.shrink_searches() == []  # every search ended and was dropped
    assert [s.case_id for s in store.shrinks_of_run(run_id)] == sorted(c.id for c in fails)
    store.close()


def test_an_error_line_ends_that_search_as_error(leet_run, tmp_path, capsys):
    _server, db, _run_id, fails = leet_run
    out = tmp_path / "round-1.jsonl"
    case = fails[0]
    assert main(["shrink", case.id, "--db", str(db), "--batch-export", str(out), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["pending"] == [case.id] and first["round"] == 1
    keys = [json.loads(line)["custom_id"] for line in out.read_text().splitlines()]
    results = tmp_path / "results-1.jsonl"
    answer_like_a_batch_engine(out, results, fail_keys={keys[-1]})
    nxt = tmp_path / "round-2.jsonl"
    assert main(["shrink", "--batch-import", str(results), "--batch-export", str(nxt),
                 "--db", str(db), "--json"]) == 0  # fmt: skip
    outcome = json.loads(capsys.readouterr().out)
    (ended,) = outcome["finished"]
    assert ended["status"] == "error" and "overloaded" in ended["reason"]
    assert outcome["requests"] == 0 and outcome["pending"] == [] and not nxt.exists()
    assert outcome["line_errors"] == 1 and outcome["answered"] == len(keys) - 1
    # Exporting the case again starts a fresh search: the failed call is asked again (the
    # other one is answered from the cache), and the old error line no longer counts.
    again = tmp_path / "again-1.jsonl"
    assert main(["shrink", case.id, "--db", str(db), "--batch-export", str(again), "--json"]) == 0
    restarted = json.loads(capsys.readouterr().out)
    assert restarted["pending"] == [case.id] and restarted["finished"] == []
    assert [json.loads(line)["custom_id"] for line in again.read_text().splitlines()] == keys[-1:]


def test_results_of_another_database_are_refused_whole(leet_run, tmp_path, capsys):
    _server, db, _run_id, _fails = leet_run
    stranger = tmp_path / "stranger.jsonl"
    body = {"choices": [{"message": {"content": "negative"}}]}
    stranger.write_text(json.dumps({"custom_id": "nope", "response": {"status_code": 200,
                                                                       "body": body}}) + "\n")  # fmt: skip
    code = main(["shrink", "--batch-import", str(stranger), "--batch-export",
                 str(tmp_path / "next.jsonl"), "--db", str(db)])  # fmt: skip
    assert code == 2
    assert "belongs to another run or database" in capsys.readouterr().err


def test_batch_import_without_a_next_file_is_a_usage_error(leet_run, tmp_path):
    _server, db, _run_id, _fails = leet_run
    with pytest.raises(SystemExit) as refused:
        main(["shrink", "--batch-import", str(tmp_path / "r.jsonl"), "--db", str(db)])
    assert refused.value.code == 2
