"""Reports tell the truth about sampling (issue 27, item 3): `report --json`, the `report`
table and the HTML report mark adaptive runs, give each cell the confidence-sequence interval
that stopped it beside the Wilson interval of its cases, count the calls saved against the full
grid, and say so when one model × relation cell pools an adaptive and a full-grid run."""

from __future__ import annotations

import pytest

from tests.test_cli import _run, _run_args, run_json

# All 10 observations pass: the uniform-prior mixture's sequence is [0, 1 - (20·11)^(-1/10)]
# = [0, 1 - e^(-0.1·ln 220)] = [0, 1 - e^(-0.53936)] = [0, 1 - 0.58312] = [0, 0.41688]
# (tests/test_rounds.py); Wilson's for 0 of 10 cases is [0, z²/(n + z²)] = [0, 3.8415/13.8415]
# = [0, 0.2775].
CS_HIGH_AT_10 = 0.41688
WILSON_HIGH_0_OF_10 = 0.2775


@pytest.fixture
def adaptive_db(capsys, tmp_path, fake_server, inputs_file, bow):
    """One adaptive run (`--precision 0.3`, rounds of 5): each relation stops after 10 of the
    20 inputs, 30 of the full grid's 60 calls."""
    db = tmp_path / "a.db"
    run = run_json(
        capsys,
        *_run_args(fake_server.base_url, inputs_file, db, "--json"),
        "--precision",
        "0.3",
        "--round-size",
        "5",
    )
    return db, run["run_id"]


def _report(capsys, db) -> dict:
    return run_json(capsys, "report", "--db", str(db), "--json")


def test_report_json_marks_the_adaptive_run_and_its_intervals(capsys, adaptive_db):
    db, run_id = adaptive_db
    report = _report(capsys, db)
    rows = {row["relation_id"]: row for row in report["rows"]}
    identity = rows["si.identity"]
    assert (identity["n"], identity["violation_rate"], identity["sampling"]) == (10, 0, "adaptive")
    assert identity["ci_high"] == pytest.approx(WILSON_HIGH_0_OF_10, abs=1e-4)
    assert (identity["cs_low"], identity["cs_high"]) == (0, pytest.approx(CS_HIGH_AT_10, abs=1e-4))
    [adaptive] = report["sampling"]["adaptive_runs"]
    assert adaptive["run_id"] == run_id
    assert adaptive["status"] == "done (precision reached)"
    assert (adaptive["precision"], adaptive["calls_used"], adaptive["full_grid_calls"]) == (
        0.3,
        30,
        60,
    )
    assert adaptive["calls_saved"] == report["sampling"]["calls_saved"] == 30
    assert report["sampling"]["mixed_cells"] == []
    table = _run(capsys, "report", "--db", str(db))[1]
    assert f"adaptive run {run_id} (fake-model): done (precision reached); 30 of the full " in table
    assert "fake-model × si.identity: confidence sequence [0.00, 0.42] over 10 inputs" in table


def test_a_cell_mixing_adaptive_and_full_grid_runs_says_so(
    capsys, tmp_path, adaptive_db, fake_server
):
    db, run_id = adaptive_db
    other = tmp_path / "other.csv"
    other.write_text("text\n" + "".join(f"Another review {i}: fine.\n" for i in range(6)))
    full = run_json(capsys, *_run_args(fake_server.base_url, other, db, "--json"))
    assert full["status"] == "done" and full["run_id"] != run_id
    report = _report(capsys, db)
    rows = {row["relation_id"]: row for row in report["rows"]}
    # 10 adaptive + 6 full-grid cases per relation; the one adaptive interval still shown.
    assert (rows["si.identity"]["n"], rows["si.identity"]["sampling"]) == (16, "mixed")
    assert rows["si.identity"]["cs_high"] == pytest.approx(CS_HIGH_AT_10, abs=1e-4)
    assert sorted(report["sampling"]["mixed_cells"]) == [
        ["fake-model", "sentence.uppercase"],
        ["fake-model", "si.identity"],
    ]
    cell = report["sampling"]["cells"][0]
    assert (cell["adaptive_runs"], cell["full_grid_runs"]) == ([run_id], [full["run_id"]])
    assert "pools adaptive and full-grid runs" in cell["note"]
    table = _run(capsys, "report", "--db", str(db))[1]
    assert "note: fake-model × si.identity pools adaptive and full-grid runs" in table


def test_the_html_report_marks_adaptive_runs_and_mixed_cells(
    capsys, tmp_path, adaptive_db, fake_server
):
    db, _ = adaptive_db
    out = tmp_path / "report.html"
    assert _run(capsys, "export", "--db", str(db), "--format", "html", "--out", str(out))[0] == 0
    page = out.read_text()
    assert '<span class="adaptive-marker">adaptive</span> 1 run(s)' in page
    assert "30 calls saved against the full grid" in page
    assert "0–42% over 10 inputs (stopped)" in page  # the confidence sequence, in percent
    assert "0–28%" in page  # Wilson's, beside it
    assert "sampling-mixed" not in page
    other = tmp_path / "other.csv"
    other.write_text("text\nA review: fine.\n")
    run_json(capsys, *_run_args(fake_server.base_url, other, db, "--json"))
    assert _run(capsys, "export", "--db", str(db), "--format", "html", "--out", str(out))[0] == 0
    mixed = out.read_text()
    assert mixed.count('class="note sampling-mixed"') == 2  # both relations pool the two runs
    assert "<b>fake-model × si.identity</b> pools adaptive and full-grid runs" in mixed


def test_a_full_grid_report_has_no_sampling_section(
    capsys, tmp_path, fake_server, inputs_file, bow
):
    db = tmp_path / "full.db"
    run_json(capsys, *_run_args(fake_server.base_url, inputs_file, db, "--json"))
    report = _report(capsys, db)
    assert "sampling" not in report
    assert all("sampling" not in row for row in report["rows"])
