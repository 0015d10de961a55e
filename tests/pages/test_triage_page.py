"""Triage page through the entrypoint: labeling flow, undo, navigation, filters, thresholds."""

from __future__ import annotations

from storage import Store
from tests.pages.conftest import open_page
from tests.triage_data import make_case, save_runs

PAGE = "pages/triage.py"


def seed(path) -> None:
    store = Store(path)
    save_runs(
        store,
        [
            make_case("a1", index=1, value=0.2),
            make_case("a2", index=2, value=0.3),
            make_case("a3", index=3, value=0.65),
            make_case("a4", index=4, relation_id="word.synonym", value=0.4),
            make_case("a5", index=5, verdict="PASS", value=0.9),
            make_case("b1", index=1, run_id="run-b", model="model-b", task_id="nli"),
            make_case("b2", index=2, run_id="run-b", model="model-b", task_id="nli"),
        ],
    )
    store.close()


def current(at) -> str:
    return at.session_state["triage_case_id"]


def texts(at) -> str:
    return " ".join(
        [element.value for element in at.markdown]
        + [element.value for element in at.text]
        + [element.value for element in at.caption]
    )


def test_empty_database_shows_a_friendly_message(app_db) -> None:
    at = open_page(PAGE)
    assert not at.exception
    assert "No violations recorded yet" in at.info[0].value


def test_labeling_flow_undo_next_and_filters(app_db) -> None:
    seed(app_db)
    at = open_page(PAGE)
    assert not at.exception, at.exception
    assert at.text_input(key="triage_labeler").value == ""
    assert at.button(key="triage_label_confirmed").proto.shortcut == "1"
    assert at.button(key="triage_undo").proto.shortcut == "u"
    assert current(at) == "a1"
    assert "0 of 6 labeled" in texts(at)
    assert any("sitting" in m.value for m in at.markdown)  # follow-up input side by side

    # The first label asks who is labeling; the label waits for the name.
    at.text_input(key="triage_note").input("a real flip").run()
    at.button(key="triage_label_confirmed").click().run()
    assert not at.exception, at.exception
    assert current(at) == "a1" and Store(app_db).current_labels() == []
    at.text_input(key="triage_name_asked").input("ann").run()
    at.button(key="triage_name_label").click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="triage_labeler").value == "ann"
    assert current(at) == "a2"  # moved on
    assert "1 of 6 labeled" in texts(at)  # progress counts labels; the queue shrank to 5
    assert at.text_input(key="triage_note").value == ""  # note cleared for the next case
    at.button(key="triage_label_fp_oracle").click().run()
    at.button(key="triage_label_unsure").click().run()
    assert current(at) == "a4"

    store = Store(app_db)
    assert {
        r["case_id"]: (r["label"], r["note"], r["labeler"]) for r in store.current_labels()
    } == {
        "a1": ("confirmed", "a real flip", "ann"),
        "a2": ("fp_oracle", "", "ann"),
        "a3": ("unsure", "", "ann"),
    }
    assert at.get("progress")[0].proto.text == "3 of 6 FAILs labeled"

    # Undo takes back the last label and returns to its case.
    at.button(key="triage_undo").click().run()
    assert current(at) == "a3"
    assert store.current_labels(case_ids=["a3"]) == []
    assert [row["label"] for row in store.label_history("a3")] == ["unsure", "retracted"]
    # Flash messages are toasts: they float over the page instead of pushing the case down.
    assert at.toast[0].value == "Undid “unsure”: the case is back in the queue."
    assert not at.success

    # Next / previous walk the queue without labeling.
    at.button(key="triage_next").click().run()
    assert current(at) == "a4"
    at.button(key="triage_previous").click().run()
    assert current(at) == "a3"

    # Filters: one relation, then another run with all cases (labeled ones included).
    at.multiselect(key="triage_relations").set_value(["word.synonym"]).run()
    assert current(at) == "a4" and "0 of 1 labeled" in texts(at)
    at.multiselect(key="triage_relations").set_value([]).run()
    at.multiselect(key="triage_runs").set_value(["run-a"]).run()
    at.checkbox(key="triage_unlabeled").uncheck().run()
    assert "2 of 4 labeled" in texts(at)  # a1..a4, labeled or not (a1, a2 labeled)
    at.multiselect(key="triage_models").set_value(["model-b"]).run()
    assert at.info[0].value.startswith("Nothing to triage")  # run-a has no model-b cases

    # Label everything left in run-b: the queue empties with a congratulation.
    at.multiselect(key="triage_runs").set_value(["run-b"]).run()
    at.checkbox(key="triage_unlabeled").check().run()
    at.button(key="triage_label_confirmed").click().run()
    at.button(key="triage_label_fp_invalid_followup").click().run()
    assert not at.exception, at.exception
    assert "Every FAIL matching these filters is labeled" in at.success[-1].value
    assert [row["label"] for row in store.current_labels(case_ids=["b2"])] == [
        "fp_invalid_followup"
    ]
    store.close()


def test_labeler_name_is_the_sessions_own(app_db) -> None:
    """Issue 28 item 7: a colleague in another browser is never given the last labeler's name."""
    seed(app_db)
    store = Store(app_db)
    store.add_label("a1", "confirmed", "", "ann")
    store.add_label("a2", "unsure", "", "bob")
    store.close()
    at = open_page(PAGE)
    assert at.text_input(key="triage_labeler").value == ""
    at.text_input(key="triage_labeler").input("bob").run()
    # 'Unlabeled by me' shows bob the case only ann has labeled.
    assert current(at) == "a3" and "2 of 6 labeled" in texts(at)
    at.radio(key="triage_scope").set_value("me").run()
    assert current(at) == "a3"  # the current case stays put
    at.button(key="triage_previous").click().run()
    assert current(at) == "a1"


def test_threshold_suggestion_apply_button(app_db) -> None:
    seed(app_db)
    store = Store(app_db)
    store.record_cases([make_case("a6", index=6, value=0.7)])
    store.add_label("a1", "confirmed", "", "ann")
    store.add_label("a2", "confirmed", "", "ann")
    store.add_label("a3", "fp_oracle", "", "ann")
    store.add_label("a6", "fp_oracle", "", "ann")
    store.close()
    at = open_page(PAGE)
    assert not at.exception, at.exception
    line = next(
        t.value
        for t in at.text
        if t.value.startswith("si.paraphrase (semantic similar): 4 labeled")
    )
    assert "suggested 0.475" in line and "50% → 100%" in line
    assert "4 stored verdict(s) would change" in line  # a3, a6 and run-b's b1, b2 (cosine 0.5)
    at.button(key="triage_apply_0").click().run()
    assert not at.exception, at.exception
    assert "Threshold 0.475 applied to Paraphrase: 4 of 7 verdicts changed" in at.toast[0].value
    store = Store(app_db)
    assert store.case("a3").verdict == "PASS"
    assert store.case("a3").original_verdict == "FAIL"
    assert store.threshold_overrides() == {"si.paraphrase": 0.475}
    store.close()


def test_the_case_comes_first_and_needs_no_emoji_font(app_db) -> None:
    """At 1280×800 the label buttons and the case must be above the fold: the filters start
    folded (before, their two rows of pickers came first), and the label buttons carry Material
    icons rather than emoji, which a machine without an emoji font draws as boxes."""
    seed(app_db)
    at = open_page(PAGE)
    assert not at.exception, at.exception
    filters = next(e for e in at.expander if e.label == "Filters")
    assert filters.proto.expanded is False
    labels = [b for b in at.button if b.key.startswith("triage_label_")]
    assert len(labels) == 4
    for button in labels:
        assert button.label.isascii(), button.label
        assert button.proto.icon.startswith(":material/")
