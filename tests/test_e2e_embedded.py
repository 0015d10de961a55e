"""End to end against the real embedded model (SmolLM2-135M via llama.cpp) through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"MORPHSCOPE_DB": str(db), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )


def test_cli_run_against_the_embedded_model_then_cache(tmp_path):
    inputs = tmp_path / "inputs.jsonl"
    rows = [
        {"text": "I absolutely love this little cafe."},
        {"text": "The delivery was late and the box was crushed."},
        {"text": "What a wonderful, kind teacher."},
        {"text": "This phone is terrible and slow."},
    ]
    inputs.write_text("\n".join(json.dumps(r) for r in rows))
    db = tmp_path / "e2e.db"
    args = (
        "run", "--endpoint", "embedded", "--task", "sentiment",
        "--relations", "si.identity,sentence.uppercase", "--inputs", str(inputs),
        "--db", str(db), "--json", "--quiet",
    )  # fmt: skip
    first = _cli(*args, db=db)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["cases"] == 8
    assert summary["calls_made"] >= 8  # real calls to the local model
    assert sum(summary["verdicts"].values()) == 8
    # the real model answers with sentiment labels, so most cases are decided, not errors
    assert summary["verdicts"].get("ERROR", 0) <= 2

    second = _cli(*args, db=db)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["run_id"] == summary["run_id"]
    assert again["calls_made"] == 0 and again["verdicts"] == summary["verdicts"]

    report = _cli("report", "--db", str(db), "--json", db=db)
    assert report.returncode == 0, report.stderr
    assert "rows" in json.loads(report.stdout)
