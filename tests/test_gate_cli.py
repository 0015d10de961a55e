"""`morphscope gate` and `morphscope baseline` on hand-made databases: every exit code, the
settings it refuses (naming the key), and the stored baseline."""

from __future__ import annotations

import json

import pytest

from app.cli.main import main
from storage import Store
from tests.gate_data import add_run

# char.leet 40 / 10 (20%, net 10% over the 10% floor: net interval ≈ [0.012, 0.233]).
PASSING = {"si.identity": (45, 5, 0, 0), "char.leet": (40, 10, 0, 0)}


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "gate.db"
    store = Store(path)
    add_run(store, "run-1", PASSING)
    store.close()
    return str(path)


def gate(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["gate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_exit_0_when_every_relation_holds(db, capsys):
    code, out, _ = gate(capsys, "--db", db, "--max", "0.3")
    assert code == 0
    assert out.startswith("gate PASSED (significant)")
    assert "char.leet" in out


def test_exit_1_when_a_relation_is_over_its_max(db, capsys):
    code, out, _ = gate(capsys, "--db", db, "--relation-max", "char.*=0.005")
    assert code == 1
    assert "FAIL      char.leet" in out and "above the max 0.5%" in out


def test_exit_1_on_a_regression_against_the_baseline(tmp_path, capsys):
    path = str(tmp_path / "r.db")
    store = Store(path)
    add_run(store, "base", {"char.leet": (45, 5, 0, 0)}, created_at="2026-11-20T09:00:00+00:00")
    add_run(store, "new", {"char.leet": (35, 15, 0, 0)}, created_at="2026-11-21T09:00:00+00:00")
    store.close()
    code, out, _ = gate(capsys, "--db", path, "--run", "new", "--baseline", "base")
    assert code == 1
    assert "REGRESSED char.leet" in out and "10.0% → 30.0%" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max", "1.5"], "--max: 1.5 is not a rate from 0 to 1"),
        (["--relation-max", "char.leet"], "expected RELATION=RATE"),
        (["--relation-max", "char.leet=lots"], "'lots' is not a number"),
        (["--max", "0.1", "--run", "nope"], "no run 'nope'"),
        ([], "nothing to judge against"),
        (["--max", "0.1", "--baseline", "x", "--baseline-model", "y"], "not both"),
        (["--max", "0.1", "--baseline", "nope"], "--baseline: no run 'nope'"),
    ],
)
def test_exit_2_on_bad_settings_or_input(db, capsys, args, message):
    code, _, err = gate(capsys, "--db", db, *args)
    assert code == 2
    assert message in err and err.count("\n") == 1  # one line


def test_exit_2_names_the_bad_key_of_the_config_file(db, tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text("max = 0.1\n[tasks.sentiment]\nmaxx = 0.2\n")
    code, _, err = gate(capsys, "--db", db, "--config", str(config))
    assert code == 2 and "tasks.sentiment.maxx: unknown key" in err
    config.write_text('mode = "sometimes"\n')
    code, _, err = gate(capsys, "--db", db, "--config", str(config))
    assert code == 2 and "mode: 'sometimes' is not one of significant, strict" in err


def test_exit_2_when_there_is_nothing_to_judge(tmp_path, capsys):
    empty = tmp_path / "empty.db"
    Store(empty).close()
    code, _, err = gate(capsys, "--db", str(empty), "--max", "0.1")
    assert code == 2 and "no run to judge" in err
    code, _, err = gate(capsys, "--db", str(tmp_path / "missing.db"), "--max", "0.1")
    assert code == 2 and "no such database" in err
    only_errors = tmp_path / "errors.db"
    store = Store(only_errors)
    add_run(store, "broken", {"char.leet": (0, 0, 0, 4)})
    store.close()
    code, _, err = gate(capsys, "--db", str(only_errors), "--max", "0.1")
    assert code == 2 and "no PASS or FAIL case" in err


def test_exit_3_on_error_cases_unless_allowed(tmp_path, capsys):
    path = str(tmp_path / "e.db")
    store = Store(path)
    add_run(store, "run-e", {"char.leet": (45, 5, 0, 2)})
    store.close()
    code, out, _ = gate(capsys, "--db", path, "--max", "0.5")
    assert code == 3 and "2 ERROR case(s)" in out
    code, out, _ = gate(capsys, "--db", path, "--max", "0.5", "--allow-errors")
    assert code == 0 and "(allowed)" in out
    # A failure outranks the errors: the rate is judged on the PASS/FAIL cases alone.
    code, _, _ = gate(capsys, "--db", path, "--max", "0.0")
    assert code == 1


def test_config_file_sets_the_thresholds_and_the_command_line_overrides_them(db, tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text('[relations]\n"char.*" = 0.005\n')
    assert gate(capsys, "--db", db, "--config", str(config))[0] == 1
    assert gate(capsys, "--db", db, "--config", str(config), "--relation-max", "char.*=0.5")[0] == 0


def test_default_runs_are_the_latest_of_each_model_and_task(db, capsys):
    store = Store(db)
    add_run(store, "run-2", {"char.leet": (50, 0, 0, 0)}, created_at="2026-11-22T09:00:00+00:00")
    add_run(store, "run-b", {"char.leet": (0, 50, 0, 0)}, model="model-b")
    store.close()
    code, out, _ = gate(capsys, "--db", db, "--max", "0.2", "--json")
    verdict = json.loads(out)
    assert sorted(r["run_id"] for r in verdict["runs"]) == ["run-2", "run-b"]
    assert code == 1 and verdict["exit_code"] == 1 and verdict["failed"] == 1


def test_baseline_set_and_show(db, capsys):
    capsys.readouterr()
    assert main(["baseline", "show", "--db", db]) == 0
    assert "no baseline set" in capsys.readouterr().out
    assert main(["baseline", "set", "run-1", "--db", db, "--note", "release 1"]) == 0
    assert "run run-1 (model-a) is the baseline of task sentiment" in capsys.readouterr().out
    assert main(["baseline", "show", "--db", db, "--json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)
    assert (shown["task_id"], shown["run_id"], shown["note"]) == ("sentiment", "run-1", "release 1")
    assert main(["baseline", "set", "nope", "--db", db]) == 2
    # The stored baseline is the run itself: nothing to compare, so thresholds are still needed.
    assert gate(capsys, "--db", db)[0] == 2


def test_exit_2_on_a_missing_config_file_and_on_json_with_github(db, tmp_path, capsys):
    code, _, err = gate(capsys, "--db", db, "--config", str(tmp_path / "none.toml"))
    assert code == 2 and "none.toml: no such file" in err
    with pytest.raises(SystemExit) as refused:  # both would print on stdout
        main(["gate", "--db", db, "--max", "0.1", "--json", "--github"])
    assert refused.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
