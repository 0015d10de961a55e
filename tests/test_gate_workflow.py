"""The README's GitHub Actions workflow, its commands run here: the workflow is parsed from the
README (so it is valid YAML with the four steps the issue asks for), its `morphscope` steps are
run in-process against the fake OpenAI-compatible server with the README's own gate.toml, and
what it uploads is checked."""

from __future__ import annotations

import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from app.cli.main import main
from tests.xsd_subset import Schema

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_block(language: str, containing: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)
    (block,) = [b for b in blocks if containing in b]
    return block


def workflow_steps() -> list[dict]:
    workflow = yaml.safe_load(readme_block("yaml", "morphscope gate"))
    (job,) = workflow["jobs"].values()
    return job["steps"]


def test_the_workflow_installs_runs_gates_and_uploads():
    steps = workflow_steps()
    runs = [step.get("run", "") for step in steps]
    assert runs[steps.index(next(s for s in steps if s.get("name") == "Install"))] == "make install"
    assert any(r.lstrip().startswith(".venv/bin/morphscope run ") for r in runs)
    assert any(r.lstrip().startswith(".venv/bin/morphscope gate ") and "--junit" in r for r in runs)
    upload = next(s for s in steps if "upload-artifact" in s.get("uses", ""))
    assert upload["if"] == "always()" and "gate.xml" in upload["with"]["path"]


def test_the_workflows_commands_run_against_a_served_model(
    tmp_path, monkeypatch, fake_server, capsys
):
    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MODEL_API_KEY", "not-a-real-key")
    (tmp_path / "datasets").mkdir()
    shutil.copy(ROOT / "datasets" / "sentiment.jsonl", tmp_path / "datasets")
    (tmp_path / "gate.toml").write_text(readme_block("toml", "max_increase"))
    summary = tmp_path / "step_summary.md"
    values = {
        '"${{ vars.MODEL_URL }}"': fake_server.base_url,
        '"${{ vars.MODEL_NAME }}"': "fake-model",
        '"$GITHUB_STEP_SUMMARY"': str(summary),
    }
    codes = {}
    for step in workflow_steps():
        command = step.get("run", "")
        if ".venv/bin/morphscope" not in command:
            continue
        for placeholder, value in values.items():
            command = command.replace(placeholder, value)
        argv = shlex.split(command)
        assert argv[0] == ".venv/bin/morphscope"
        codes[argv[1]] = main(argv[1:])
    out = capsys.readouterr()
    assert codes["run"] == 0, out.err
    # The fake model reads "good" as positive: a negated "good" review keeps its label, so
    # word.negation (should change) fails the file's max of 5%.
    assert codes["gate"] == 1
    assert "::error title=morphscope gate%3A word.negation" in out.out
    report = ET.parse(tmp_path / "gate.xml").getroot()
    Schema(ROOT / "tests" / "junit.xsd").validate(report)
    suites = {s.get("name") for s in report.findall("testsuite")}
    assert suites == {"si.identity", "char.leet", "sentence.uppercase", "word.negation"}
    assert summary.read_text().startswith("## Morphscope gate: gate FAILED")
