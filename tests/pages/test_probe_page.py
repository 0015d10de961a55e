"""Probe page through the entrypoint: smoke test and a run against the fake OpenAI server."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.types import Endpoint
from storage import Store
from tests.pages.conftest import APP, open_page


def test_probe_page_renders_with_embedded_model_preselected(app_db):
    at = open_page("pages/probe.py")
    assert not at.exception
    assert at.title[0].value.endswith("Probe")
    assert at.selectbox(key="probe_endpoint").value == "SmolLM2-135M-Instruct (local)"
    # demo dataset and default relations are preselected, so a first probe is one click away
    assert at.radio(key="probe_inputs_source").value == "Demo dataset"
    assert at.selectbox(key="probe_task").value == "sentiment"
    assert "si.identity" in at.multiselect(key="probe_relations_sentiment").value
    assert not at.button(key="probe_run").disabled


def test_probe_run_against_fake_server_shows_verdicts(app_db, fake_server):
    store = Store(app_db)
    store.save_endpoint(Endpoint(name="fake", base_url=fake_server.base_url, model="fake-model"))
    store.close()
    at = open_page("pages/probe.py")
    at.selectbox(key="probe_endpoint").select("fake").run()
    at.selectbox(key="probe_task").select("sentiment").run()
    at.multiselect(key="probe_relations_sentiment").set_value(
        ["si.identity", "sentence.uppercase", "sentence.shuffle"]
    )
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input("I love this.\nThe service was bad.\n").run()
    assert not at.button(key="probe_run").disabled
    assert "No runs yet" in " ".join(m.value for m in at.markdown)
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    markdown = " ".join(m.value for m in at.markdown)
    assert "cases" in markdown and "PASS" in markdown
    # the first run's results are not shown under "No runs yet"
    assert "No runs yet" not in markdown
    store = Store(app_db)
    cases = store.cases_for()
    assert len(cases) == 6
    # one-sentence inputs cannot be shuffled: SKIP cases (no follow-up) render without error
    assert sorted(c.verdict for c in cases if c.relation_id == "sentence.shuffle") == [
        "SKIP",
        "SKIP",
    ]
    assert {c.verdict for c in cases} <= {"PASS", "FAIL", "SKIP"}
    assert fake_server.stats.chat_calls > 0
    calls_before = fake_server.stats.chat_calls
    # The same run again is answered from the cache.
    at.button(key="probe_run").click().run()
    assert fake_server.stats.chat_calls == calls_before
    assert "0 model calls" in " ".join(m.value for m in at.markdown)
    # filters: only FAILs / only one relation
    at.multiselect(key="probe_results_relations").set_value(["si.identity"]).run()
    assert not at.exception
    assert len(at.dataframe) >= 1


def test_custom_task_is_saved_and_selectable(app_db):
    at = open_page("pages/probe.py")
    at.text_input[0].input("toxicity")
    at.text_input[1].input("Toxicity label")
    at.text_area[0].input("Is this toxic? Answer toxic or fine.\n\nComment: {text}")
    form_selects = [s for s in at.selectbox if s.label == "Answer type"]
    form_selects[0].select("label")
    next(t for t in at.text_input if t.label.startswith("Labels")).input("toxic, fine")
    next(b for b in at.button if b.label == "Save task").click().run()
    assert not at.exception
    assert Store(app_db).custom_task_rows()[0]["id"] == "toxicity"
    at.run()
    assert "Toxicity label (toxicity)" in at.selectbox(key="probe_task").options


def test_custom_task_validation_error_is_shown(app_db):
    at = open_page("pages/probe.py")
    at.text_input[0].input("Bad Id!")
    at.text_area[0].input("no placeholders here")
    next(b for b in at.button if b.label == "Save task").click().run()
    assert not at.exception
    assert at.error and "task id" in at.error[0].value
    assert Store(app_db).custom_task_rows() == []


def test_interrupted_run_is_announced_with_its_partial_cases(app_db, fake_server):
    from app.engine.embedder import EmbeddingCache
    from app.engine.runner import Runner
    from core.run_config import RunConfig
    from core.tasks import BUILTIN_TASKS
    from core.types import Sample
    from tests.conftest import BagOfWordsEmbedder

    store = Store(app_db)
    endpoint = Endpoint(name="fake", base_url=fake_server.base_url, model="fake-model")
    runner = Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))

    def interrupt(progress):
        if progress.done >= 1:
            raise KeyboardInterrupt  # what a Streamlit rerun or Ctrl-C does mid-run

    samples = [Sample({"text": f"Item {i} was good."}) for i in range(30)]
    config = RunConfig(endpoint, "sentiment", ("si.identity",))
    with pytest.raises(KeyboardInterrupt):
        runner.run_sync(config, BUILTIN_TASKS["sentiment"], samples, progress=interrupt)
    (run,) = store.runs()
    assert run.status == "interrupted" and run.n_cases < 30
    at = open_page("pages/probe.py")
    assert not at.exception
    assert any("was interrupted" in w.value for w in at.warning)


def test_the_form_keeps_its_choices_across_page_switches_and_reloads(app_db):
    """Streamlit forgets a widget's value on a page that is not shown, and a reload starts a
    new session: before, coming back to Probe (or reloading) reset the form to its defaults."""
    at = open_page("pages/probe.py")
    at.selectbox(key="probe_task").select("qa").run()
    at.multiselect(key="probe_relations_qa").set_value(["si.identity"]).run()
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input("Where is Paris? ||| Paris is in France.").run()
    at.switch_page("pages/relations.py").run()
    at.switch_page("pages/probe.py").run()
    assert not at.exception
    assert at.selectbox(key="probe_task").value == "qa"
    assert at.multiselect(key="probe_relations_qa").value == ["si.identity"]
    assert at.radio(key="probe_inputs_source").value == "Paste"
    assert at.text_area(key="probe_inputs_paste").value.startswith("Where is Paris?")
    # The simple choices are in the URL, so a reload (a new session) starts from them.
    assert at.query_params["probe_task"] == "qa"
    reloaded = AppTest.from_file(APP, default_timeout=120)
    reloaded.query_params["probe_task"] = "qa"
    reloaded.query_params["probe_inputs_source"] = "Paste"
    reloaded.query_params["probe_relations_qa"] = "si.identity,char.delete"
    reloaded.run()
    reloaded.switch_page("pages/probe.py").run()
    assert reloaded.selectbox(key="probe_task").value == "qa"
    assert reloaded.multiselect(key="probe_relations_qa").value == ["si.identity", "char.delete"]
    assert reloaded.radio(key="probe_inputs_source").value == "Paste"
    # A hand-edited URL naming no such task falls back to the default.
    odd = AppTest.from_file(APP, default_timeout=120)
    odd.query_params["probe_task"] = "nope"
    odd.run()
    odd.switch_page("pages/probe.py").run()
    assert not odd.exception
    assert odd.selectbox(key="probe_task").value == "sentiment"


def test_cases_and_calls_are_shown_before_run_and_results_follow_the_form(app_db, fake_server):
    """The results shown belong to the form's current configuration: before, changing the
    relations after a run kept showing the previous run's results as if they were this one's."""
    store = Store(app_db)
    store.save_endpoint(Endpoint(name="fake", base_url=fake_server.base_url, model="fake-model"))
    store.close()
    at = open_page("pages/probe.py")
    at.selectbox(key="probe_endpoint").select("fake").run()
    at.multiselect(key="probe_relations_sentiment").set_value(["si.identity", "char.leet"]).run()
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input("I love this.\nThe service was bad.\n").run()
    captions = " ".join(c.value for c in at.caption)
    # 2 relations × 2 inputs = 4 cases; 2 source calls + 4 follow-ups = at most 6 calls.
    assert "2 relation(s) × 2 input(s) → about 4 cases, at most 6 model calls" in captions
    assert "2 chosen: si.identity, char.leet" in captions
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    assert any("— 4 cases" in m.value for m in at.markdown)
    # "Open Analysis" is a real link (before: words in a message).
    assert [link.proto.label for link in at.get("page_link")] == ["Open Analysis"]
    at.multiselect(key="probe_relations_sentiment").set_value(["si.identity"]).run()
    assert not any("— 4 cases" in m.value for m in at.markdown)
    assert any("The form has changed since the last run" in c.value for c in at.caption)
    at.multiselect(key="probe_relations_sentiment").set_value(["si.identity", "char.leet"]).run()
    assert any("— 4 cases" in m.value for m in at.markdown)


def test_a_saved_custom_task_is_chosen_in_the_task_list_at_once(app_db):
    """Before, the Task list above the form was drawn before the save and lacked the new task
    until the next click."""
    at = open_page("pages/probe.py")
    at.text_input[0].input("toxicity")
    at.text_input[1].input("Toxicity label")
    at.text_area[0].input("Is this toxic? Answer toxic or fine.\n\nComment: {text}")
    next(t for t in at.text_input if t.label.startswith("Labels")).input("toxic, fine")
    next(b for b in at.button if b.label == "Save task").click().run()
    assert not at.exception
    assert at.selectbox(key="probe_task").value == "toxicity"
    assert any(s.value.startswith("Saved task toxicity") for s in at.success)


def test_verdict_badges_need_no_emoji_font():
    from app.ui.components import verdict_badge

    for verdict in ("PASS", "FAIL", "SKIP", "ERROR"):
        badge = verdict_badge(verdict)
        assert badge.isascii() and ":material/" in badge, badge


def test_the_probe_title_is_drawn_before_the_heavy_panels_are_imported():
    """A cold first load showed a blank skeleton while the runner and the model clients were
    imported (seconds): the page now draws its title first, then imports its panels."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(APP).with_name("pages").joinpath("probe.py").read_text())
    title_line = next(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "title"
    )
    panels_lines = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("app.ui.probe_")
    ]
    assert panels_lines and title_line < min(panels_lines)


@pytest.mark.parametrize(
    ("pasted", "message"),
    [
        ("I love this.\nThe service\x00 was bad.\n", "line 2 holds a control character (U+0000)"),
        ("I love this.\x1b[2J\n", "line 1 holds a control character (U+001B)"),
        ('{"text": "fine"}\n{"text": "half \\ud800"}\n', "line 2: the value of 'text' holds a"),
    ],
    ids=["NUL", "escape sequence", "lone surrogate escape"],
)
def test_pasted_text_follows_the_upload_rule_for_characters(app_db, pasted, message):
    """Issue 20, item 14: the paste box took NUL and control characters that an upload of the
    same text refused. Now both say the same, and nothing can be run from such a paste."""
    at = open_page("pages/probe.py")
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input(pasted).run()
    assert not at.exception
    errors = " ".join(error.value for error in at.error).replace("\\", "")  # Markdown escapes
    assert "Cannot use these inputs" in errors and message in errors, errors
    assert at.button(key="probe_run").disabled
