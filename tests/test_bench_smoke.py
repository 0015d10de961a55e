"""`bench/run_all.py --json --quick`: one JSON object with every benchmark's figures and targets.

A plumbing test at tiny sizes: it pins the keys the issue's "must show" reads (the ratios, peak
memory, CLI start, ``targets_met``) and how a missing benchmark script is reported. It asserts
no timing: figures on a shared machine are noise; only their presence and types are pinned.
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


def test_quick_run_prints_every_figure_and_target():
    done = subprocess.run(
        [sys.executable, "bench/run_all.py", "--json", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a measured target missed
    result = json.loads(done.stdout)
    assert result["mode"] == "quick"
    assert set(result["benchmarks"]) == {
        "engine",
        "adaptive",
        "cache_rerun",
        "analysis",
        "faults",
        "analysis_browser",
        "batch_export",
    }
    for entry in result["benchmarks"].values():
        assert entry["status"] in ("ok", "missing", "skipped", "failed")
        assert entry["status"] != "failed", entry
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
