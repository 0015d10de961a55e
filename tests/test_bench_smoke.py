"""`bench/run_all.py --json --quick`: one JSON object with every benchmark's figures and targets.

A plumbing test at tiny sizes: it pins the keys the issue's "must show" reads (the ratios, peak
memory, CLI start, ``targets_met``) and how a missing benchmark script is reported. It asserts
no timing: figures on a shared machine are noise; only their presence and types are pinned, and
that the exit status says whether every measured target was met.

Running every quick benchmark takes a minute or more on 2 cores, so that test is ``slow`` (``make
test`` runs it); the fast suite checks the same collection, targets and exit status on the
benchmarks' JSON as the scripts print it (``test_run_all_reads_each_benchmark_and_exits_by_its_targets``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]


def _run_all_module():
    spec = importlib.util.spec_from_file_location("bench_run_all", ROOT / "bench" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


# The targets whose benchmarks run in quick mode: each must be measured (met or missed, not None).
QUICK_TARGETS = {
    "adaptive_vs_capacity",
    "adaptive_retried_share",
    "cache_rerun_calls",
    "analysis_slowest_query_s",
    "peak_memory_mb",
    "cli_relations_json_s",
    "cli_transform_s",
    "batch_export_s",
    "batch_export_peak_mb",
    "shrink_calls_max",
    "shrink_kept_one_edit_share",
    "shrink_batch_same_edits_share",
}


@pytest.mark.slow
def test_quick_run_prints_every_figure_and_target():
    done = subprocess.run(
        [sys.executable, "bench/run_all.py", "--json", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    result = json.loads(done.stdout)
    # Exit 1 only when a measured target was missed (timings on a shared machine may miss one).
    expected_exit = 0 if result["all_measured_targets_met"] else 1
    assert done.returncode == expected_exit, (result["targets_met"], done.stderr[-2000:])
    missed = {name for name, met in result["targets_met"].items() if met is False}
    assert result["all_measured_targets_met"] == (not missed)
    measured = {name for name, met in result["targets_met"].items() if met is not None}
    assert measured == QUICK_TARGETS, result["not_measured"]
    assert result["mode"] == "quick"
    assert set(result["benchmarks"]) == {
        "engine",
        "adaptive",
        "cache_rerun",
        "analysis",
        "faults",
        "analysis_browser",
        "batch_export",
        "free_text",
        "embedder",
        "shrink",
    }
    statuses = {name: entry["status"] for name, entry in result["benchmarks"].items()}
    # Every quick benchmark ran and printed its figures; the full-size ones are skipped.
    assert statuses == {
        "engine": "skipped",
        "adaptive": "ok",
        "cache_rerun": "ok",
        "analysis": "ok",
        "faults": "skipped",
        "analysis_browser": "skipped",
        "batch_export": "ok",
        "free_text": "skipped",
        "embedder": "skipped",
        "shrink": "ok",
    }
    figures = result["figures"]
    for name in (
        "engine_vs_bare",
        "command_vs_bare",
        "engine_vs_sequential",
        "adaptive_vs_capacity",
        "adaptive_retried_share",
        "cache_rerun_calls",
        "analysis_slowest_query_s",
        "peak_memory_mb",
        "cli_relations_json_s",
        "cli_transform_s",
        "analysis_first_chart_s",
        "batch_export_s",
        "batch_export_peak_mb",
    ):
        assert name in figures
        assert name in result["targets_met"]
    # Measured in quick mode by scripts this checkout always has:
    assert figures["cache_rerun_calls"] == 0
    assert figures["shrink_kept_one_edit_share"] == 1.0  # every case kept its one '3' edit
    assert figures["shrink_batch_same_edits_share"] == 1.0  # batch rounds: the online edits
    assert figures["batch_export_lines"] > 0 and figures["batch_export_s"] > 0
    assert isinstance(figures["analysis_slowest_query_s"], float)
    assert isinstance(figures["peak_memory_mb"], int | float)
    assert result["cli_start"]["status"] == "ok"
    assert result["targets_met"]["cache_rerun_calls"] is True
    assert isinstance(result["all_measured_targets_met"], bool)


def test_targets_met_marks_unmeasured_as_none():
    run_all = _run_all_module()
    met = run_all.targets_met({"engine_vs_bare": 0.97, "command_vs_bare": 0.5})
    assert met["engine_vs_bare"] is True  # min 0.95
    assert met["command_vs_bare"] is False  # min 0.85
    assert met["adaptive_vs_capacity"] is None  # its bench did not run
    assert run_all.targets_met({"cache_rerun_calls": 0})["cache_rerun_calls"] is True
    assert run_all.targets_met({"cache_rerun_calls": 3})["cache_rerun_calls"] is False


def test_a_missing_benchmark_script_is_reported_not_raised():
    run_all = _run_all_module()
    bench = run_all.Benchmark("nope", "bench_does_not_exist.py", ("--json",), ("--json",), 10)
    entry = run_all.run_benchmark(bench, quick=True)
    assert entry["status"] == "missing"
    assert "bench_does_not_exist.py" in entry["reason"]


def test_last_json_object_skips_lines_printed_before_it():
    run_all = _run_all_module()
    text = 'loading model…\n{"a": 1}\nprogress 50%\n{\n  "b": {"c": 2}\n}\n'
    assert run_all.last_json_object(text) == {"b": {"c": 2}}
    assert run_all.last_json_object("no json here") is None


def test_engine_ratios_are_read_from_the_checkout_bench_engine_measured():
    """bench_engine.py reports its ratios per checkout (``--code``); run_all reads this one's."""
    run_all = _run_all_module()
    benchmarks = {
        "engine": {
            "status": "ok",
            "figures": {"code": {"/repo": {"engine_vs_bare": 0.9, "command_vs_bare": 0.7}}},
        }
    }
    assert run_all._engine_figure(benchmarks, "engine_vs_bare") == 0.9
    assert run_all._engine_figure(benchmarks, "command_vs_bare") == 0.7
    assert run_all._engine_figure({"engine": {"status": "failed"}}, "engine_vs_bare") is None


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed")
def test_browser_bench_prints_medians_and_the_bare_page_baseline(tmp_path):
    """`bench_analysis_browser.py --quick --repeat 1 --json`: the Analysis page and the bare
    Streamlit page drawing the same chart are both measured (plumbing only, no timing)."""
    done = subprocess.run(
        [sys.executable, "bench/bench_analysis_browser.py", "--quick", "--repeat", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "MORPHSCOPE_BENCH_CACHE": str(tmp_path)},
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: the target missed
    result = json.loads(done.stdout)
    assert result["cases"] == 20_000 and result["repeats"] == 1
    for name in ("cold", "warm"):
        page, bare = result[name], result["baseline"][name]
        assert page["first_chart_samples_s"] == [page["first_chart_s"]]
        assert 0 < page["first_chart_s"] <= page["all_done_s"]
        assert bare["first_chart_s"] > 0
        ratio = page["first_chart_s"] / bare["first_chart_s"]
        assert result[f"{name}_vs_baseline"] == pytest.approx(ratio, abs=1e-3)
    assert result["first_chart_s"] == max(
        result["cold"]["first_chart_s"], result["warm"]["first_chart_s"]
    )
    assert result["page_error"] is False
    assert set(result["rerun"]) == {"new_filter_s", "filter_back_s"}


# What each quick benchmark prints (a few of its keys, as in its ``--json`` output), and the figure
# run_all reads from it. A line before the JSON is ignored, as a bench may log one.
_PRINTED = {
    "bench_adaptive.py": {"achieved_vs_capacity": 0.97, "retried_share": 0.01, "unanswered": 0},
    "bench_rerun.py": {"rerun_calls": 0, "rerun_vs_first": 0.05, "cases": 8},
    "bench_analysis_scale.py": {
        "cases": 800,
        "slowest_page_query_s": 0.02,
        "slowest_vs_limit": 0.02,
        "peak_memory_mb": 180,
    },
    "bench_batch_export.py": {"requests": 2000, "seconds": 0.8, "peak_rss_mb": 120.0},
    "bench_shrink.py": {
        "calls_max_up_to_10_edits": 7,
        "kept_one_3_share": 1.0,
        "cases": 19,
        "batch_same_edits_share": 1.0,
    },
}
_START_S = {"-c": 0.02, "relations": 0.4, "transform": 0.5}


def _fake_run_measured(run_all, printed, memory_mb=300.0):
    """``run_measured`` answering each benchmark with ``printed`` and the CLI starts at once."""

    def run_measured(argv, timeout_s):
        script = Path(argv[1]).name
        if script in printed:
            stdout = "warming up…\n" + json.dumps(printed[script], indent=2) + "\n"
            return run_all.Finished(0, stdout, "", 1.0, 0.5, memory_mb)
        wall = next(s for word, s in _START_S.items() if word in argv)
        return run_all.Finished(0, "", "", wall, wall, 50.0)

    return run_measured


def _main(run_all, monkeypatch, capsys, printed, memory_mb=300.0):
    monkeypatch.setattr(run_all, "run_measured", _fake_run_measured(run_all, printed, memory_mb))
    monkeypatch.setattr(sys, "argv", ["run_all.py", "--json", "--quick"])
    code = run_all.main()
    return code, json.loads(capsys.readouterr().out)


def test_run_all_reads_each_benchmark_and_exits_by_its_targets(monkeypatch, capsys):
    """The quick run's collection without running the benchmarks: every quick benchmark's
    figures reach the headline figures, each target is judged, and the exit status is 0 only
    when every measured target is met (1 as soon as one is missed)."""
    run_all = _run_all_module()
    for script, printed in _PRINTED.items():  # the keys really are what the scripts print
        source = (ROOT / "bench" / script).read_text()
        assert all(f'"{key}"' in source for key in printed), script
    code, result = _main(run_all, monkeypatch, capsys, _PRINTED)
    assert code == 0 and result["all_measured_targets_met"] is True
    figures = result["figures"]
    assert figures["adaptive_vs_capacity"] == 0.97 and figures["adaptive_retried_share"] == 0.01
    assert figures["cache_rerun_calls"] == 0 and figures["analysis_slowest_query_s"] == 0.02
    assert figures["batch_export_s"] == 0.8 and figures["batch_export_peak_mb"] == 120.0
    assert figures["batch_export_lines"] == 2000
    assert figures["shrink_calls_max"] == 7 and figures["shrink_kept_one_edit_share"] == 1.0
    assert figures["shrink_batch_same_edits_share"] == 1.0
    # the analysis bench's own peak (180), the rerun bench's process tree (300): the larger
    assert figures["peak_memory_mb"] == 300
    assert figures["cli_relations_json_s"] == 0.4 and figures["cli_transform_s"] == 0.5
    assert result["cli_start"]["relations_json_vs_bare_python"] == 20.0
    measured = {name for name, met in result["targets_met"].items() if met is not None}
    assert measured == QUICK_TARGETS
    assert all(result["targets_met"][name] for name in QUICK_TARGETS)
    assert set(result["not_measured"]) == set(run_all.TARGETS) - QUICK_TARGETS

    slow = {"achieved_vs_capacity": 0.5, "retried_share": 0.0}
    slow_adaptive = {**_PRINTED, "bench_adaptive.py": slow}
    code, result = _main(run_all, monkeypatch, capsys, slow_adaptive)
    assert code == 1 and result["all_measured_targets_met"] is False
    assert result["targets_met"]["adaptive_vs_capacity"] is False
    code, result = _main(run_all, monkeypatch, capsys, _PRINTED, memory_mb=2048.0)
    assert code == 1 and result["targets_met"]["peak_memory_mb"] is False


def test_a_benchmark_that_prints_no_figures_is_failed_and_its_targets_unmeasured(
    monkeypatch, capsys
):
    run_all = _run_all_module()
    others = {k: v for k, v in _PRINTED.items() if k != "bench_rerun.py"}
    fake = _fake_run_measured(run_all, others)

    def run_measured(argv, timeout_s):
        if Path(argv[1]).name == "bench_rerun.py":  # crashes before printing any figures
            return run_all.Finished(2, "", "Traceback …\nValueError: boom\n", 0.1, 0.1, 40.0)
        return fake(argv, timeout_s)

    monkeypatch.setattr(run_all, "run_measured", run_measured)
    monkeypatch.setattr(sys, "argv", ["run_all.py", "--json", "--quick"])
    code = run_all.main()
    result = json.loads(capsys.readouterr().out)
    entry = result["benchmarks"]["cache_rerun"]
    assert entry["status"] == "failed" and "exit 2" in entry["reason"] and "boom" in entry["reason"]
    assert result["targets_met"]["cache_rerun_calls"] is None
    assert "cache_rerun_calls" in result["not_measured"]
    assert code == 0  # the measured targets were all met
