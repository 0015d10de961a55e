"""Triage panels rendered alone (AppTest.from_function), without the page around them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from app.analysis.triage.thresholds import Suggestion
from core.types import Verdict
from storage import Store
from tests.triage_data import make_case, save_runs


@pytest.fixture
def db_path(tmp_path, monkeypatch):
    """A database with two FAILs and a PASS, used by the panels and their callbacks alike."""
    path = tmp_path / "panels.db"
    monkeypatch.setenv("MORPHSCOPE_DB", str(path))  # what the callbacks' get_store() opens
    store = Store(path)
    save_runs(
        store,
        [
            make_case("a1", index=1, value=0.2),
            make_case("a2", index=2, relation_id="word.synonym", value=0.3),
            make_case("a3", index=3, verdict="PASS", value=0.9),
        ],
    )
    store.close()
    return path


def _case_panel(case, history):
    from app.ui.triage.case import render_case

    render_case(case, history, "Case 2 of 5")


def test_case_panel_shows_the_case_its_verdicts_and_its_history() -> None:
    case = replace(
        make_case("a1", value=0.25, reason="similarity 0.250 < 0.8"),
        verdict=Verdict.PASS,
        original_verdict=Verdict.FAIL,
    )
    history = [
        {"created_at": "2026-11-20T10:00:00", "labeler": "ann", "label": "confirmed",
         "note": "flip", "cancelled": 1, "retracts": None},
        {"created_at": "2026-11-20T10:01:00", "labeler": "ann", "label": "retracted",
         "note": "", "cancelled": 0, "retracts": 1},
    ]  # fmt: skip
    at = AppTest.from_function(_case_panel, args=(case, history)).run()
    assert not at.exception, at.exception
    heading = at.markdown[0].value
    assert heading.startswith("**Case 2 of 5**") and "`si.paraphrase`" in heading
    assert "automatic verdict" in heading  # a threshold turned the FAIL into a PASS
    assert "measured value **0.250**" in at.markdown[1].value
    assert at.text[0].value == "Reason: similarity 0.250 < 0.8"
    assert any("sitting" in m.value for m in at.markdown)  # follow-up input, side by side
    assert list(at.dataframe[0].value["status"]) == ["undone", "undo"]

    at = AppTest.from_function(_case_panel, args=(make_case("a1"), [])).run()
    assert "No labels yet." in [c.value for c in at.caption]


def _suggestions_panel(suggestions):
    from app.ui.triage.feedback import render_suggestions

    render_suggestions(suggestions)


def test_suggestions_panel_offers_apply_only_for_a_changed_threshold() -> None:
    suggestions = [
        Suggestion("si.paraphrase", "semantic_similar", 4, 2, 2, 0.8, 0.475, 0.5, 1.0, 3),
        Suggestion("word.synonym", "semantic_similar", 1, 1, 0, 0.8, None, 1.0, None,
                   note="too few labels"),
    ]  # fmt: skip
    at = AppTest.from_function(_suggestions_panel, args=(suggestions,)).run()
    assert not at.exception, at.exception
    lines = [t.value for t in at.text]
    assert "suggested 0.475" in lines[0] and "50% → 100%" in lines[0]
    assert lines[1].endswith("— too few labels")
    assert [b.label for b in at.button] == ["Apply 0.475"]
    assert at.button(key="triage_apply_0")

    at = AppTest.from_function(_suggestions_panel, args=([],)).run()
    assert "to get a suggested threshold" in at.caption[0].value


def _current_case_panel(db_path, queue, labeler):
    from app.ui.triage.case import render_current_case
    from storage import Store

    store = Store(db_path)
    render_current_case(store, queue, store.label_progress(), labeler)


def test_current_case_panel_labels_through_its_callback_and_moves_on(db_path) -> None:
    at = AppTest.from_function(_current_case_panel, args=(db_path, ["a1", "a2"], "ann")).run()
    assert not at.exception, at.exception
    assert at.session_state["triage_case_id"] == "a1"
    assert at.button(key="triage_previous").disabled
    at.session_state["triage_labeler"] = "ann"  # the filters panel's widget, absent here
    at.text_input(key="triage_note").input("real flip")
    at.button(key="triage_label_confirmed").click().run()
    assert not at.exception, at.exception
    assert at.session_state["triage_case_id"] == "a2"
    assert at.session_state["triage_flash"] == ("success", "Labeled “confirmed”.")
    store = Store(db_path)
    assert [(r["case_id"], r["label"], r["note"]) for r in store.current_labels()] == [
        ("a1", "confirmed", "real flip")
    ]
    store.close()


def test_current_case_panel_without_a_labeler_or_a_queue(db_path) -> None:
    """Without a name, a label button asks for one (a dialog) and labels once it is given."""
    at = AppTest.from_function(_current_case_panel, args=(db_path, ["a1"], "")).run()
    assert not at.button(key="triage_label_confirmed").disabled
    at.button(key="triage_label_confirmed").click().run()
    assert at.session_state["triage_pending_label"] == ("a1", "confirmed", None)
    at.button(key="triage_name_label").click().run()  # no name typed: nothing happens
    assert Store(db_path).current_labels() == []
    at.button(key="triage_label_confirmed").click().run()
    at.text_input(key="triage_name_asked").input("  ann ").run()
    at.button(key="triage_name_label").click().run()
    assert not at.exception, at.exception
    assert at.session_state["triage_labeler"] == "ann"
    assert [(r["case_id"], r["labeler"]) for r in Store(db_path).current_labels()] == [
        ("a1", "ann")
    ]
    at = AppTest.from_function(_current_case_panel, args=(db_path, [], "ann")).run()
    assert at.info[0].value.startswith("Nothing to triage with these filters")


def _filters_panel(db_path):
    import streamlit as st

    from app.ui.triage.filters import render_filters
    from storage import Store

    store = Store(db_path)
    choice = render_filters(store, store.triage_options(), "ann")
    st.session_state["test_queue"] = choice.queue(store)


def test_filters_panel_narrows_the_queue(db_path) -> None:
    at = AppTest.from_function(_filters_panel, args=(db_path,)).run()
    assert not at.exception, at.exception
    assert at.session_state["test_queue"] == ["a1", "a2"]
    at.multiselect(key="triage_relations").set_value(["word.synonym"]).run()
    assert at.session_state["test_queue"] == ["a2"]
    assert at.radio(key="triage_scope").disabled is False
    at.checkbox(key="triage_unlabeled").uncheck().run()
    assert at.radio(key="triage_scope").disabled
