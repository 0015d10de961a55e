"""The Analysis page's Gate tab and the release-gate parts of Compare runs, through the
entrypoint: the same verdicts as `morphscope gate`, thresholds edited and saved as TOML, the
flipped cases of two runs and "Set as baseline"."""

from __future__ import annotations

import pytest

from app.analysis.release_thresholds import settings_from_toml
from app.cli.main import main
from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.gate_data import add_run
from tests.pages.conftest import open_page

PAGE = "pages/analysis.py"


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


def seed(path) -> None:
    """A baseline run and a newer run of one model on one task. char.leet: 5 → 15 FAIL of 50
    (samples 35–44 flip PASS→FAIL); sentence.uppercase: 10 → 5 (samples 40–44 flip back)."""
    store = Store(path)
    add_run(store, "base", {"si.identity": (50, 0, 0, 0), "char.leet": (45, 5, 0, 0),
                            "sentence.uppercase": (40, 10, 0, 0)},
            created_at="2026-11-20T09:00:00+00:00")  # fmt: skip
    add_run(store, "new", {"si.identity": (50, 0, 0, 0), "char.leet": (35, 15, 0, 0),
                           "sentence.uppercase": (45, 5, 0, 0)},
            created_at="2026-11-21T09:00:00+00:00")  # fmt: skip
    store.close()


def open_tab(at, name: str):
    at.session_state["analysis_tab"] = name
    at.run()
    assert not at.exception, at.exception
    return at


def gate_table(at):
    for element in at.dataframe:
        if "reason" in element.value.columns:
            return element.value.set_index("relation")
    raise AssertionError("no gate table")


def test_gate_tab_shows_the_clis_verdicts_and_follows_edited_thresholds(app_db, capsys):
    seed(app_db)
    at = open_page(PAGE)
    open_tab(at, "Gate")
    # Default: the latest run of each model × task (run "new"), every relation at most 10%.
    assert at.multiselect(key="analysis_gate_runs").value == ["new"]
    table = gate_table(at)
    assert table.loc["char.leet", "verdict"] == "FAIL"  # 30%: interval low ≈ 19% > 10%
    assert table.loc["char.leet", "rate %"] == 30.0
    assert table.loc["sentence.uppercase", "verdict"] == "PASS"  # 10%
    assert table.loc["si.identity", "verdict"] == "REFERENCE"
    # The same verdicts as the command line.
    capsys.readouterr()
    assert main(["gate", "--db", str(app_db), "--run", "new", "--max", "0.10"]) == 1
    assert "FAIL      char.leet" in capsys.readouterr().out
    assert ":red-badge[FAILED] exit code **1**" in " ".join(m.value for m in at.markdown)
    # A higher max lets it pass.
    at.number_input(key="analysis_gate_max").set_value(40.0).run()
    assert gate_table(at).loc["char.leet", "verdict"] == "PASS"
    assert ":green-badge[PASSED]" in " ".join(m.value for m in at.markdown)


def test_gate_thresholds_download_and_save_as_the_gates_toml(app_db, tmp_path):
    seed(app_db)
    at = open_page(PAGE)
    open_tab(at, "Gate")
    at.radio(key="analysis_gate_mode").set_value("strict").run()
    at.number_input(key="analysis_gate_max").set_value(25.0).run()
    target = tmp_path / "gate.toml"
    at.text_input(key="analysis_gate_path").input(str(target)).run()
    at.button(key="analysis_gate_save").click().run()
    assert not at.exception, at.exception
    saved = settings_from_toml(target.read_text())
    assert (saved.mode, saved.max_rate) == ("strict", 0.25)
    assert any(b.label == "Download gate.toml" for b in at.get("download_button"))


def test_compare_runs_shows_flips_significance_and_sets_the_baseline(app_db):
    seed(app_db)
    at = open_page(PAGE)
    open_tab(at, "Compare runs")
    changes = None
    for element in at.dataframe:
        if "PASS→FAIL" in element.value.columns:
            changes = element.value.set_index("relation")
    assert changes is not None
    assert (changes.loc["char.leet", "PASS→FAIL"], changes.loc["char.leet", "FAIL→PASS"]) == (10, 0)
    assert (changes.loc["sentence.uppercase", "FAIL→PASS"]) == 5
    assert bool(changes.loc["char.leet", "significantly worse"])  # 10% → 30% at n = 50
    assert not bool(changes.loc["sentence.uppercase", "significantly worse"])
    flips = at.selectbox(key="analysis_gate_flip")
    assert flips.label == "Flipped cases (15)"
    assert flips.format_func(flips.value).startswith("char.leet · sample ")
    texts = " ".join(m.value for m in at.markdown)
    assert "**Run A**" in texts and "**Run B**" in texts
    at.button(key="analysis_gate_set_baseline").click().run()
    assert not at.exception, at.exception
    store = Store(app_db)
    assert store.baseline_for_task("sentiment").run_id == "new"
    store.close()
