"""Probe and Endpoints panels rendered alone (AppTest.from_function)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.ui.probe_form import ProbeChoices
from core.tasks import BUILTIN_TASKS
from core.types import Sample
from storage import Store
from tests.triage_data import make_case, save_runs
from tests.ui.panels import FAKE, run_panel


def test_run_panel_waits_for_choices_and_reports_a_bad_one(db_path) -> None:
    empty = ProbeChoices(FAKE, BUILTIN_TASKS["sentiment"], (), (), None, 1, 0, FAKE)
    at = AppTest.from_function(run_panel, args=(empty,)).run()
    assert not at.exception, at.exception
    assert at.button(key="probe_run").disabled
    assert at.info[0].value.startswith("Choose at least one relation")

    # A relation deleted since the form was filled: the run set-up's message, nothing run.
    stale = ProbeChoices(
        FAKE, BUILTIN_TASKS["sentiment"], ("custom.gone",), (Sample({"text": "Hi."}),),
        "pasted", 1, 0, FAKE,
    )  # fmt: skip
    at = AppTest.from_function(run_panel, args=(stale,)).run()
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    assert at.error[0].value == "Cannot run: unknown relation(s): custom.gone"
    assert Store(db_path).runs() == []


def _results_panels():
    from app.ui.data import get_store
    from app.ui.probe_results import render_latest_results
    from app.ui.probe_run import render_interrupted_notice

    store = get_store()
    render_interrupted_notice(store, key="probe")
    render_latest_results(store, key="probe")


def test_an_interrupted_run_is_announced_and_its_cases_shown(db_path) -> None:
    store = Store(db_path)
    save_runs(store, [make_case("a1", index=1), make_case("a2", index=2, verdict="PASS")])
    store.finish_run("run-a", "interrupted")
    store.close()
    at = AppTest.from_function(_results_panels).run()
    assert not at.exception, at.exception
    assert "Run `run-a` was interrupted" in at.warning[0].value
    assert at.session_state["probe_run_id"] == "run-a"
    assert list(at.dataframe[0].value["verdict"]) == ["FAIL", "PASS"]
    at.multiselect(key="probe_results_verdicts").set_value(["PASS"]).run()
    assert list(at.dataframe[0].value["verdict"]) == ["PASS"]


def _new_endpoint_panel():
    from app.ui.data import get_store
    from app.ui.endpoints_view import render_new_endpoint

    render_new_endpoint(get_store())


def test_new_endpoint_panel_refuses_a_name_in_use(db_path) -> None:
    store = Store(db_path)
    store.save_endpoint(FAKE)
    store.close()
    at = AppTest.from_function(_new_endpoint_panel).run()
    by_label = {widget.label: widget for widget in at.text_input}
    by_label["Name"].input("fake")
    by_label["Base URL"].input("http://127.0.0.1:8000/v1")
    by_label["Model"].input("other")
    next(b for b in at.button if b.label == "Save endpoint").click().run()
    assert not at.exception, at.exception
    assert at.error[0].value == "An endpoint named 'fake' exists already; edit it above."
    assert Store(db_path).endpoint("fake").model == "fake-model"


def _gate_cases() -> list:
    """si.paraphrase: 3 follow-ups, 2 rejected by the gate (one of them with 2 repeats), 1 sent;
    char.delete: 2 follow-ups, 1 identical, and a SKIP that is not the gate's."""
    import dataclasses

    def case(case_id, relation_id, index, verdict, reason, repeat=0):
        made = make_case(case_id, relation_id=relation_id, index=index, verdict=verdict)
        return dataclasses.replace(made, reason=reason, repeat_index=repeat)

    return [
        case("p1", "si.paraphrase", 1, "SKIP", "invalid_followup: sentiment lost (negative)"),
        case("p1r", "si.paraphrase", 1, "SKIP", "invalid_followup: sentiment lost (negative)", 1),
        case("p2", "si.paraphrase", 2, "SKIP", 'invalid_followup: meta-commentary ("Here is")'),
        case("p3", "si.paraphrase", 3, "PASS", "automatic"),
        case("d1", "char.delete", 1, "SKIP", "identical_followup"),
        case("d2", "char.delete", 2, "SKIP", "no letters to perturb"),
    ]


def test_gate_counts_count_each_followup_once(db_path) -> None:
    from storage.gate_verbs import GateCount

    store = Store(db_path)
    save_runs(store, _gate_cases())
    assert store.gate_counts("run-a") == [
        GateCount("char.delete", followups=2, rejected=1, skipped_otherwise=1),
        GateCount("si.paraphrase", followups=3, rejected=2, skipped_otherwise=0),
    ]
    assert store.gate_counts("no-such-run") == []


def test_results_show_the_gate_rejections_and_a_note_when_the_rewriter_is_too_weak(db_path) -> None:
    """Issue 9 item 9, issue 23 item 9: per relation, how many follow-ups the gate rejected; the
    rewrite yield of si.paraphrase is 1 valid of 3 attempts (p1 with its repeat counts once) =
    33 % < 50 %, so a note says the rewriter is too weak and points to a stronger transformation
    endpoint. char.delete (rule-based, 1 of 2 rejected) gets neither yield nor note."""
    store = Store(db_path)
    save_runs(store, _gate_cases())
    store.finish_run("run-a", "interrupted")  # the panels then open this run's results
    store.close()
    at = AppTest.from_function(_results_panels).run()
    assert not at.exception, at.exception
    gate = at.dataframe[0].value
    assert list(gate["relation"]) == ["char.delete", "si.paraphrase"]
    assert list(gate["rejected"]) == [1, 2]
    assert list(gate["follow-ups"]) == [2, 3]
    assert list(gate["other SKIPs"]) == [1, 0]  # d2's "no letters to perturb" is not the gate's
    [note] = [w.value for w in at.warning if "too weak" in w.value]
    assert "too weak for si.paraphrase: 1 of 3 rewrites (33%)" in note
    assert "Transformation endpoint" in note
    assert "check its FAILs in Triage" in note  # what passed the gate may still be unfaithful
    yields = at.dataframe[-1].value
    assert list(yields["relation"]) == ["si.paraphrase"]
    assert list(yields["attempts"]) == [3] and list(yields["valid rewrites"]) == [1]
    assert list(yields["SKIP reasons"]) == ["meta-commentary ×1; sentiment lost ×1"]


def test_results_without_gate_rejections_show_no_gate_summary(db_path) -> None:
    store = Store(db_path)
    save_runs(store, [make_case("a1", index=1), make_case("a2", index=2, verdict="PASS")])
    store.finish_run("run-a", "interrupted")
    store.close()
    at = AppTest.from_function(_results_panels).run()
    assert not at.exception, at.exception
    # The cases table, and si.paraphrase's yield: 2 valid of 2, no note.
    assert len(at.dataframe) == 2
    assert list(at.dataframe[1].value["valid rewrites"]) == [2]
    assert not [w for w in at.warning if "validity gate" in w.value]


def _results_panel(db, run_id):
    from app.ui.probe_results import render_results
    from storage import Store

    render_results(Store(db), run_id, key="probe")


def test_results_table_writes_values_and_missing_cells_readably(db_path) -> None:
    """Issue 12 item 8: one format per value, "—" for what is missing, never "None"."""
    store = Store(db_path)
    save_runs(
        store,
        [
            make_case("a1", value=0.123456, reason="cosine 0.123 < θ 0.800"),
            make_case("a2", index=2, verdict="SKIP", value=None, reason="invalid_followup: x"),
        ],
    )
    store.close()
    at = AppTest.from_function(_results_panel, args=(str(db_path), "run-a")).run()
    assert not at.exception, at.exception
    (frame,) = [d.value for d in at.dataframe if "verdict" in d.value.columns]
    by_verdict = dict(zip(frame["verdict"], frame["value"], strict=True))
    assert by_verdict == {"FAIL": "0.123", "SKIP": "—"}
    assert "None" not in frame.astype(str).to_numpy().ravel().tolist()


def _one_sided(left, right):
    from app.ui.components import side_by_side

    side_by_side("Source input", left, "Follow-up input", right)


@pytest.mark.parametrize(("left", "right"), [("The cat sat.", None), (None, "The cat sat.")])
def test_a_missing_side_is_not_shown_as_deleted_or_inserted(left, right) -> None:
    """Regression: a SKIP case without a follow-up showed its whole source struck through as
    if the relation had deleted it. The present side is plain, the missing one "—"."""
    from app.reports.diffing import DELETED_STYLE, INSERTED_STYLE

    at = AppTest.from_function(_one_sided, args=(left, right)).run()
    html = " ".join(m.value for m in at.markdown)
    assert "The cat sat." in html and "—" in html
    assert DELETED_STYLE not in html and INSERTED_STYLE not in html


def test_a_case_title_names_the_relation_and_formats_the_value() -> None:
    """Issue 28 item 4: "FAIL · word.negation · text · value 0.000" read as internal ids."""
    from app.ui.probe_results import case_title

    case = {"verdict": "FAIL", "relation_id": "word.negation", "target": "text", "value": 0.3125}
    assert case_title(case) == "FAIL · Negation on text · measured 0.312"
    unknown = {**case, "relation_id": "custom.mine", "value": None}
    assert case_title(unknown) == "FAIL · custom.mine on text"
