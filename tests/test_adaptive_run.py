"""`run --precision H` / `--budget N` (app/engine/adaptive_run.py) against the fake OpenAI
server: rounds stop each relation at its precision, the budget caps the calls, and the same
command without them completes the grid from the cache."""

from __future__ import annotations

import pytest

from storage import Store
from tests.test_cli import _run_args, run_json


def test_precision_stops_each_relation_and_a_full_run_completes_the_grid(
    capsys,
    tmp_path,
    fake_server,
    inputs_file,
    bow,
):
    db = tmp_path / "a.db"
    full = _run_args(fake_server.base_url, inputs_file, db, "--json")
    adaptive = run_json(capsys, *full, "--precision", "0.3", "--round-size", "5")
    # Every case of the echo model passes. All passes: n = 5 gives [0, 1 - 120^(-1/5)] =
    # [0, 0.616], ±0.308 > 0.3; n = 10 gives [0, 1 - 220^(-1/10)] = [0, 0.417], ±0.208: stop.
    # 10 inputs: 10 sources + 10 identity samples + 10 upper-cased = 30 calls, 20 cases.
    cells = adaptive["adaptive"]["cells"]
    assert [(c["relation"], c["inputs"], c["violations"]) for c in cells] == [
        ("si.identity", 10, 0),
        ("sentence.uppercase", 10, 0),
    ]
    assert cells[0]["half_width"] == pytest.approx(0.2085, abs=1e-3)
    assert adaptive["adaptive"]["stop_reason"] == "done (every cell reached its precision)"
    assert all(c["stopped"] for c in cells)
    assert adaptive["calls_made"] == adaptive["adaptive"]["calls_sent"] == 30
    # 20 inputs × (1 source + 2 follow-ups) = 60 calls in the full grid; 60 - 30 = 30 saved.
    assert adaptive["adaptive"]["full_grid_calls"] == 60
    assert adaptive["adaptive"]["calls_saved"] == 30
    assert adaptive["cases"] == 20
    # 20 of 40 planned cases: the run is not a complete one, and is stored so.
    store = Store(db)
    assert adaptive["status"] == store.run(adaptive["run_id"]).status == "done (precision reached)"
    stored = store.run_samplings()[adaptive["run_id"]]
    assert (stored.precision, stored.calls_sent, stored.full_grid_calls) == (0.3, 30, 60)
    assert [(c.relation, c.inputs, c.high) for c in stored.cells] == [
        ("si.identity", 10, pytest.approx(0.417, abs=1e-3)),
        ("sentence.uppercase", 10, pytest.approx(0.417, abs=1e-3)),
    ]
    # The same run without --precision: the other 10 inputs, 30 more calls, no case twice.
    rest = run_json(capsys, *full)
    assert rest["run_id"] == adaptive["run_id"]
    assert (rest["calls_made"], rest["cases"]) == (30, 40)
    assert fake_server.stats.chat_calls == 60
    assert len(Store(db).cases_for([rest["run_id"]])) == 40
    # Complete now: a plain "done" run with no adaptive sampling left on it.
    assert Store(db).run(rest["run_id"]).status == "done"
    assert Store(db).run_samplings() == {}


def test_a_budget_caps_the_calls_and_ends_the_run_as_done(
    capsys,
    tmp_path,
    fake_server,
    inputs_file,
    bow,
):
    db = tmp_path / "b.db"
    run = _run_args(fake_server.base_url, inputs_file, db, "--json")
    adaptive = run_json(capsys, *run, "--budget", "25", "--round-size", "5")
    assert adaptive["status"] == "done (budget reached)"
    assert adaptive["adaptive"]["stop_reason"] == "done (budget reached)"
    assert adaptive["adaptive"]["calls_sent"] <= 25
    assert fake_server.stats.chat_calls == adaptive["calls_made"] <= 25


def test_compare_preview_states_the_preview_and_the_calls_and_tokens_used(
    capsys, tmp_path, fake_server, inputs_file, bow
):
    """`run --compare-preview`: the preview before sending, then what the run used beside it.
    20 inputs × (1 source + 1 identity sample + 1 upper-cased follow-up) = 60 calls to send; the
    fake server reports 5 prompt and 1 completion tokens per call: 300 + 60."""
    db = tmp_path / "c.db"
    run = run_json(
        capsys, *_run_args(fake_server.base_url, inputs_file, db, "--json"), "--compare-preview"
    )
    assert run["preview"]["calls_to_send"] == run["calls_made"] == 60
    assert (run["prompt_tokens"], run["completion_tokens"]) == (300, 60)
    from tests.test_cli import _run

    code, out, err = _run(
        capsys, *_run_args(fake_server.base_url, inputs_file, db), "--compare-preview"
    )
    assert code == 0
    # Every case is settled now: the preview, before the run, plans no call, and none is made.
    assert "cases: 40 planned, 40 already settled" in err
    assert "calls: 0 planned, 0 cached, 0 to send" in err
    assert "Used: 0 calls sent, 0 from the cache; the endpoint reported no token counts. " in out
    assert "The preview said 0 to send" in out


def test_the_same_adaptive_command_again_sends_nothing(
    capsys, tmp_path, fake_server, inputs_file, bow
):
    """The settled cases of the first pass are observations at no call: the second pass
    reaches the same stop (10 inputs per relation, ±0.208) without sending anything."""
    db = tmp_path / "again.db"
    adaptive = (*_run_args(fake_server.base_url, inputs_file, db, "--json"), "--precision", "0.3")
    first = run_json(capsys, *adaptive, "--round-size", "5")
    second = run_json(capsys, *adaptive, "--round-size", "5")
    assert (first["calls_made"], second["calls_made"]) == (30, 0)
    assert fake_server.stats.chat_calls == 30
    assert second["status"] == "done (precision reached)"
    assert [c["inputs"] for c in second["adaptive"]["cells"]] == [10, 10]
    # Its cases still stand for 10 sources + 20 follow-ups of the grid's 60 calls.
    assert (second["adaptive"]["calls_used"], second["adaptive"]["calls_saved"]) == (30, 30)
