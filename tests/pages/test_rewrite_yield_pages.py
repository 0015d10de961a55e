"""The rewrite yield on the Analysis and Probe pages, through the entrypoint (issue 23, item 9)."""

from __future__ import annotations

import pytest

from storage import Store
from tests.conftest import BagOfWordsEmbedder
from tests.pages.conftest import open_page
from tests.test_rewrite_yield import CASES
from tests.triage_data import save_runs


@pytest.fixture(autouse=True)
def _fast_input_embedder(monkeypatch):
    monkeypatch.setattr("app.ui.analysis_view.default_embedder", BagOfWordsEmbedder)


def _seed(path, *, interrupted: bool = False) -> None:
    store = Store(path)
    save_runs(store, CASES)
    if interrupted:
        store.finish_run("run-a", "interrupted")  # the Probe page then opens its results
    store.close()


def _yield_table(at):
    tables = [e.value for e in at.dataframe if "valid rewrites" in e.value.columns]
    assert len(tables) == 1
    return tables[0]


def _notes(at) -> list[str]:
    return [w.value for w in at.warning if "too weak" in w.value]


def test_analysis_shows_each_llm_relations_yield_and_the_weak_rewriter_note(app_db) -> None:
    """si.paraphrase: 2 valid of 6 attempts (33 % < 50 %, a note); si.expand: 2 of 2 (no note),
    as ``tests/test_rewrite_yield.py`` works out by hand."""
    _seed(app_db)
    at = open_page("pages/analysis.py")
    at.session_state["analysis_tab"] = "Robustness"
    at.run()
    assert not at.exception, at.exception
    table = _yield_table(at)
    assert list(table["relation"]) == ["si.expand", "si.paraphrase"]
    assert list(table["attempts"]) == [2, 6] and list(table["valid rewrites"]) == [2, 2]
    assert table["SKIP reasons"].iloc[1] == (
        "dropped ×2; numbers added ×1; the transformation endpoint returned an empty paraphrase ×1"
    )
    [note] = _notes(at)
    assert note.startswith("The rewriter is too weak for si.paraphrase: 2 of 6 rewrites (33%)")
    assert "transformation endpoint" in note


def test_probe_results_show_the_yield_of_the_opened_run(app_db) -> None:
    _seed(app_db, interrupted=True)
    at = open_page("pages/probe.py")
    assert not at.exception, at.exception
    table = _yield_table(at)
    assert list(table["valid rewrites"]) == [2, 2]
    assert len(_notes(at)) == 1
