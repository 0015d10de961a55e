"""The Probe form's NLI target box: shown for an NLI task only, premise by default."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _picker(task_id: str) -> None:
    import streamlit as st

    from app.ui.probe_form import nli_target_picker
    from core.tasks import BUILTIN_TASKS

    st.session_state["chosen"] = nli_target_picker(BUILTIN_TASKS[task_id], "probe_nli_target")


def test_the_box_is_there_for_nli_and_defaults_to_the_premise() -> None:
    at = AppTest.from_function(_picker, args=("nli",)).run()
    [box] = at.selectbox
    assert box.label == "Perturb which NLI input"
    assert list(box.options) == ["premise", "hypothesis", "both"]
    assert at.session_state["chosen"] == "premise"
    box.select("hypothesis").run()
    assert at.session_state["chosen"] == "hypothesis"


def test_other_tasks_get_no_box_and_the_default() -> None:
    at = AppTest.from_function(_picker, args=("qa",)).run()
    assert len(at.selectbox) == 0
    assert at.session_state["chosen"] == "premise"
