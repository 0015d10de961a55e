"""The Relations page through the entrypoint: catalog, filters, try-it, custom relation editor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app.reports.diffing import diff_html
from app.ui.custom_relation_editor import rules_from_text, spec_from_form
from app.ui.relations_view import (
    ANY_TASK,
    catalog_frame,
    changed_fields,
    filter_relations,
    try_relation,
)
from core.tasks import BUILTIN_TASKS
from relations.catalog import describe_relation
from relations.registry import get_relation, list_relations
from storage import Store

PAGE = "pages/relations.py"
ENTRYPOINT = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


@pytest.fixture(autouse=True)
def _fresh_caches():
    st.cache_data.clear()
    yield
    st.cache_data.clear()


@pytest.fixture
def db_path(tmp_path, monkeypatch):
    path = tmp_path / "page.db"
    monkeypatch.setenv("MORPHSCOPE_DB", str(path))
    return path


def open_page() -> AppTest:
    at = AppTest.from_file(ENTRYPOINT, default_timeout=60)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


# ---------------------------------------------------------------- pure helpers


def test_catalog_frame_columns_and_filters():
    relations = list_relations()
    frame = catalog_frame(relations)
    assert list(frame.columns)[:8] == [
        "id",
        "name",
        "family",
        "category",
        "kind",
        "output relation",
        "tasks",
        "ref",
    ]
    row = frame.set_index("id").loc["sentiment.exclamation"]
    assert row["output relation"] == "at_least_as_extreme"
    assert row["ref"] == "LLMorph 150"
    assert row["tasks"] == "sentiment, sentiment_score"
    sentiment = filter_relations(relations, families=["sentiment"])
    assert {r.id for r in sentiment} == {
        "sentiment.exclamation",
        "sentiment.emphasis",
        "sentiment.capitalise_keywords",
    }
    nli_only = filter_relations(relations, task="nli")
    assert all(r.applies_to(BUILTIN_TASKS["nli"]) for r in nli_only)
    assert "re.swap_symmetric" not in {r.id for r in nli_only}
    assert len(filter_relations(relations, task=ANY_TASK)) == len(relations)


def test_try_relation_with_extra_fields_and_partners():
    swap = try_relation(
        get_relation("re.swap_symmetric"),
        "Ana and her sister Eva run a shop.",
        fields={"head": "Ana", "tail": "Eva"},
    )
    assert swap.followup.fields == {
        "text": "Ana and her sister Eva run a shop.",
        "head": "Eva",
        "tail": "Ana",
    }
    assert changed_fields(swap) == [("head", "Ana", "Eva"), ("tail", "Eva", "Ana")]
    pair = try_relation(
        get_relation("multi.pairwise_order"), "Dull and long.", partner_texts=["Sharp and funny."]
    )
    assert pair.followup.companions["partner_source"] == {"text": "Sharp and funny."}
    llm = try_relation(get_relation("nli.weaken_premise"), "A dog runs.")
    assert llm.followup is None and "transformation endpoint" in llm.outcome.reason


def test_spec_from_form():
    spec = spec_from_form(
        relation_id="",
        name="Metric units",
        description="",
        example="",
        kind="replace",
        rules_text="miles => kilometres\n\nfeet=>metres",
        expectation="different",
        threshold_text="0.7",
    )
    assert spec == {
        "id": "custom.metric_units",
        "name": "Metric units",
        "description": "",
        "kind": "replace",
        "expectation": "different",
        "threshold": 0.7,
        "rules": [
            {"find": "miles", "replace": "kilometres"},
            {"find": "feet", "replace": "metres"},
        ],
    }
    with pytest.raises(ValueError, match="rule line 1"):
        rules_from_text("no separator here")
    with pytest.raises(ValueError, match="threshold must be a number"):
        spec_from_form(
            relation_id="custom.x",
            name="x",
            description="",
            example="",
            kind="template",
            prefix="A ",
            expectation="equivalent",
            threshold_text="lots",
        )


# ---------------------------------------------------------------- the page


def test_page_renders_catalog(db_path):
    at = open_page()
    table = at.dataframe[0].value
    assert {"nli.extend_premise", "re.swap_asymmetric", "multi.pairwise_order"} <= set(table["id"])
    assert {"id", "name", "family", "kind", "output relation", "tasks", "ref", "available"} <= set(
        table.columns
    )


def test_filter_by_family(db_path):
    at = open_page()
    at.multiselect(key="relations_family").set_value(["sentiment"]).run()
    assert not at.exception
    ids = set(at.dataframe[0].value["id"])
    assert ids == {"sentiment.exclamation", "sentiment.emphasis", "sentiment.capitalise_keywords"}
    assert at.selectbox(key="relations_detail").options == [
        "sentiment.capitalise_keywords — Capitalise key words",
        "sentiment.emphasis — Add emphasis words",
        "sentiment.exclamation — Replace '.' with '!'",
    ]
    at.selectbox(key="relations_detail").set_value(
        "sentiment.exclamation — Replace '.' with '!'"
    ).run()
    # the worked example's follow-up is computed live (changed words are highlighted spans)
    shown = markdown_text(at)
    assert "wonderful!</span>" in shown and "times!</span>" in shown


@pytest.mark.parametrize("family", ["rrb", "char", "si", "sentiment"])
def test_try_it_shows_a_followup(db_path, family):
    candidates = [
        r
        for r in list_relations()
        if r.family == family and r.kind == "rule" and describe_relation(r)["available"]
    ]
    if not candidates:
        pytest.skip(f"no rule relation registered in family {family!r} yet")
    relation = get_relation("sentiment.exclamation") if family == "sentiment" else candidates[0]
    text = "The hall seats 120 people. The concert was good. How many seats are empty?"
    expected = try_relation(relation, text, seed=3)
    assert expected.followup is not None, expected.outcome

    at = open_page()
    picker = at.selectbox(key="relations_try_relation")
    label = next(option for option in picker.options if option.startswith(f"{relation.id} —"))
    picker.set_value(label).run()
    at.text_area(key="relations_try_text").input(text).run()
    at.number_input(key="relations_try_seed").set_value(3).run()
    assert not at.exception
    # the follow-up panel holds exactly the highlighted follow-up of that relation and seed
    _, source, followup = changed_fields(expected)[0]
    assert followup != source
    assert diff_html(source, followup, for_markdown=True)[1] in markdown_text(at)


def test_try_it_llm_relation_explains_the_missing_endpoint(db_path):
    at = open_page()
    at.toggle(key="relations_try_use_model").set_value(False).run()
    picker = at.selectbox(key="relations_try_relation")
    picker.set_value(next(o for o in picker.options if o.startswith("nli.weaken_premise"))).run()
    infos = " ".join(i.value for i in at.info)
    assert "transformation endpoint" in infos


def test_create_custom_find_replace_relation(db_path):
    at = open_page()
    assert at.selectbox(key="relations_custom_kind_new").value == "replace"
    by_label = {w.label: w for w in at.text_input}
    by_label["Name"].input("US spelling")
    rules = next(w for w in at.text_area if w.label.startswith("Rules"))
    rules.input("colour => color\ncentre => center")
    expectation = next(w for w in at.selectbox if w.label == "Expected output relation")
    expectation.set_value("equivalent")
    next(b for b in at.button if b.label == "Save custom relation").click().run()
    assert not at.exception
    assert any("Saved custom.us_spelling" in s.value for s in at.success)

    store = Store(db_path)
    try:
        specs = store.custom_relation_specs()
    finally:
        store.close()
    assert specs == {
        "custom.us_spelling": {
            "id": "custom.us_spelling",
            "name": "US spelling",
            "description": "",
            "kind": "replace",
            "expectation": "equivalent",
            "threshold": None,
            "rules": [
                {"find": "colour", "replace": "color"},
                {"find": "centre", "replace": "center"},
            ],
        }
    }
    # the new relation is in the catalog and can be tried
    assert "custom.us_spelling" in set(at.dataframe[0].value["id"])
    assert at.selectbox(key="relations_custom_pick").value == "custom.us_spelling"


def test_invalid_custom_relation_shows_error_and_writes_nothing(db_path):
    at = open_page()
    at.selectbox(key="relations_custom_kind_new").set_value("regex").run()
    next(w for w in at.text_input if w.label == "Name").input("Broken")
    next(w for w in at.text_area if w.label.startswith("Rules")).input("(unclosed => x")
    next(b for b in at.button if b.label == "Save custom relation").click().run()
    errors = " ".join(e.value for e in at.error)
    assert "Not saved" in errors and "bad regular expression" in errors
    store = Store(db_path)
    try:
        assert store.custom_relation_specs() == {}
    finally:
        store.close()


def test_import_pasted_json_and_delete(db_path):
    at = open_page()
    payload = json.dumps(
        [
            {
                "id": "custom.shout",
                "name": "Shout",
                "kind": "template",
                "suffix": "!!",
                "expectation": "equivalent",
            }
        ]
    )
    at.text_area(key="relations_custom_paste").input(payload)
    at.button(key="relations_custom_import").click().run()
    assert any("Imported custom.shout" in s.value for s in at.success)
    at.selectbox(key="relations_custom_pick").set_value("custom.shout").run()
    at.button(key="relations_custom_delete").click().run()
    assert not at.exception
    store = Store(db_path)
    try:
        assert store.custom_relation_specs() == {}
    finally:
        store.close()


def test_try_it_starts_a_custom_relation_on_its_own_example(db_path):
    """Issue 28 item 9: a custom relation's example input was not used in Try it."""
    example = "Our shop opens at 8 am on weekdays."
    Store(db_path).save_custom_relation(
        "custom.shout",
        {"id": "custom.shout", "name": "Shout", "kind": "template", "example": example,
         "prefix": "", "suffix": "!!!", "expectation": "equivalent"},
    )  # fmt: skip
    at = open_page()
    picker = at.selectbox(key="relations_try_relation")
    picker.set_value(next(o for o in picker.options if o.startswith("custom.shout"))).run()
    assert not at.exception, at.exception
    assert at.text_area(key="relations_try_text_custom.shout").value == example
    assert "!!!" in markdown_text(at)  # its follow-up, made from the example
