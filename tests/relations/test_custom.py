"""Custom relations: spec validation, transformations, store round trip, all-or-nothing import."""

from __future__ import annotations

import json

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import ParsedOutput, Verdict
from relations.apply import SkippedFollowUp, transform_text
from relations.base import CheckInput, Expectation, FollowUp, RelationKind
from relations.custom import (
    PRESERVE,
    custom_relations,
    export_specs,
    import_specs,
    parse_specs,
    relation_from_spec,
    save_spec,
    slugify,
    validate_spec,
)
from relations.registry import get_relation, list_relations


def spec(**overrides):
    base = {
        "id": "custom.us_spelling",
        "name": "US spelling",
        "kind": "replace",
        "rules": [{"find": "colour", "replace": "color"}, {"find": "centre", "replace": "center"}],
        "expectation": "equivalent",
    }
    base.update(overrides)
    return base


def apply(relation_spec, text, rewrite=None):
    return transform_text(
        relation_from_spec(relation_spec), text, rewrite=rewrite, task=BUILTIN_TASKS["qa"]
    )


# ---------------------------------------------------------------- validation


def test_validate_spec_normalises():
    checked = validate_spec(spec(name="  US spelling ", threshold=1))
    assert checked == {
        "id": "custom.us_spelling",
        "name": "US spelling",
        "description": "",
        "kind": "replace",
        "expectation": "equivalent",
        "threshold": 1.0,
        "rules": [{"find": "colour", "replace": "color"}, {"find": "centre", "replace": "center"}],
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"id": "us_spelling"}, "must look like 'custom.<slug>'"),
        ({"id": "custom.Bad Id"}, "must look like 'custom.<slug>'"),
        ({"name": ""}, "name is required"),
        ({"kind": "magic"}, "kind 'magic' is not one of"),
        ({"expectation": "similarish"}, "expectation 'similarish' is not one of"),
        ({"expectation": "order_preserved"}, "needs a multi-input relation"),
        ({"rules": []}, "rules must be a non-empty list"),
        ({"rules": [{"find": "", "replace": "x"}]}, "rule 1: 'find' must be non-empty"),
        ({"rules": [{"find": "a", "replace": "a"}]}, "rule 1: 'find' and 'replace' are the same"),
        ({"kind": "regex", "rules": [{"find": "(unclosed", "replace": "x"}]}, "bad regular"),
        ({"kind": "regex", "rules": [{"find": "(a)", "replace": r"\2"}]}, "bad replacement"),
        ({"kind": "llm_rewrite", "instruction": "  "}, "needs an instruction"),
        ({"kind": "template", "prefix": "", "suffix": ""}, "needs a prefix, a suffix"),
        ({"threshold": "high"}, "threshold must be a number"),
        ({"threshold": -0.5}, "finite number ≥ 0"),
        ({"colour": "blue"}, "unknown key(s): colour"),
    ],
)
def test_validate_spec_errors(overrides, message):
    with pytest.raises(ValueError) as excinfo:
        validate_spec(spec(**overrides))
    assert message in str(excinfo.value)


def test_validate_spec_rejects_non_objects():
    with pytest.raises(ValueError, match="JSON object"):
        validate_spec(["custom.x"])


def test_slugify():
    assert slugify("US spelling (v2)!") == "custom.us_spelling_v2"
    assert slugify("???") == "custom.relation"


# ---------------------------------------------------------------- transformations


def test_replace_relation():
    relation = relation_from_spec(spec())
    assert (relation.family, relation.category, relation.kind) == ("custom", "custom", "rule")
    assert relation.expectation is Expectation.EQUIVALENT
    result = apply(spec(), "The colour of the centre square.")
    assert isinstance(result, FollowUp)
    assert result.fields == {"text": "The color of the center square."}


def test_rule_that_changes_nothing_is_not_applicable():
    result = apply(spec(), "A plain sentence.")
    assert isinstance(result, SkippedFollowUp)
    assert result.reason == "no rule changed the text"


def test_regex_relation_with_groups():
    regex = spec(
        id="custom.swap_names",
        kind="regex",
        rules=[{"find": r"(\w+) and (\w+)", "replace": r"\2 and \1"}],
        expectation="equivalent",
    )
    assert apply(regex, "Ana and Ben share 12 apples.").fields == {
        "text": "Ben and Ana share 12 apples."
    }


def test_template_relation_adds_prefix_and_suffix_exactly():
    template = spec(kind="template", prefix="Please answer: ", suffix=" Thanks!", rules=None)
    del template["rules"]
    assert apply(template, "What is 2+2?").fields == {"text": "Please answer: What is 2+2? Thanks!"}


def test_llm_rewrite_uses_the_instruction_and_our_preservation_wording():
    prompts = []

    def rewrite(prompt):
        prompts.append(prompt)
        return '"Rewritten text: What is two plus two?"'

    llm = {
        "id": "custom.formal",
        "name": "Formal",
        "kind": "llm_rewrite",
        "instruction": "Make it sound formal.",
        "expectation": "equivalent",
    }
    relation = relation_from_spec(llm)
    assert relation.kind is RelationKind.LLM
    result = transform_text(relation, "whats 2+2", rewrite=rewrite, task=BUILTIN_TASKS["qa"])
    assert result.fields == {"text": "What is two plus two?"}
    assert prompts[0].startswith(PRESERVE)
    assert "Instruction: Make it sound formal." in prompts[0]
    assert "whats 2+2" in prompts[0]
    skipped = transform_text(relation, "whats 2+2", task=BUILTIN_TASKS["qa"])
    assert isinstance(skipped, SkippedFollowUp)
    assert "transformation endpoint" in skipped.reason


def test_no_polar_flip_custom_relation_gets_the_checker():
    relation = relation_from_spec(spec(expectation="no_polar_flip"))
    ci = CheckInput(
        ParsedOutput("entailment"), ParsedOutput("contradiction"), {}, "label", None, lambda *a: 0
    )
    assert relation.check(ci).verdict is Verdict.FAIL
    assert relation_from_spec(spec()).check is None


# ---------------------------------------------------------------- store round trip, import/export


def test_custom_relations_from_the_store(store):
    save_spec(store, spec())
    store.save_custom_relation("custom.broken", {"id": "custom.broken", "kind": "nope"})
    relations = custom_relations(store)
    assert [r.id for r in relations] == ["custom.us_spelling"]
    assert "custom.us_spelling" in [r.id for r in list_relations(extra=relations)]
    assert get_relation("custom.us_spelling", extra=relations).threshold is None


def test_export_then_import_round_trip(store, tmp_path):
    from storage import Store

    save_spec(store, spec())
    save_spec(store, spec(id="custom.shout", kind="template", prefix="", suffix="!!!", rules=None))
    text = export_specs(store)
    payload = json.loads(text)
    assert payload["format"] == "morphscope.custom_relations"
    assert [r["id"] for r in payload["relations"]] == ["custom.shout", "custom.us_spelling"]

    other = Store(tmp_path / "other.db")
    try:
        assert import_specs(other, text) == ["custom.shout", "custom.us_spelling"]
        assert other.custom_relation_specs() == store.custom_relation_specs()
    finally:
        other.close()


def test_import_is_all_or_nothing(store):
    good = spec()
    bad = spec(id="custom.bad", kind="regex", rules=[{"find": "[", "replace": ""}])
    with pytest.raises(ValueError) as excinfo:
        import_specs(store, json.dumps([good, bad]))
    assert "relation 2 (custom.bad)" in str(excinfo.value)
    assert "bad regular expression" in str(excinfo.value)
    assert store.custom_relation_specs() == {}


def test_import_rejects_duplicates_and_bad_json(store):
    with pytest.raises(ValueError, match="appears more than once"):
        import_specs(store, json.dumps([spec(), spec()]))
    with pytest.raises(ValueError, match="not valid JSON"):
        import_specs(store, "{not json")
    with pytest.raises(ValueError, match="non-empty list"):
        import_specs(store, "[]")
    assert store.custom_relation_specs() == {}


def test_import_and_uploads_say_alike_why_valid_json_is_unreadable(store):
    """One wording (core/json_text.py) for JSON that parses but cannot be read, in relation
    imports and in uploaded inputs."""
    from app.inputs.errors import InputError
    from app.inputs.uploads import read_upload

    too_deep = "[" * 100_000 + "]" * 100_000
    huge = '{"text": %s}' % ("9" * 5000)
    for text, message in (
        (too_deep, "the JSON is nested too deeply"),
        (huge, "a value cannot be read"),
    ):
        with pytest.raises(ValueError, match=message):
            import_specs(store, text)
        with pytest.raises(InputError, match=message):
            read_upload("inputs.json", text.encode())
    assert store.custom_relation_specs() == {}


def test_import_accepts_a_single_spec_and_overwrites(store):
    save_spec(store, spec(name="Old name"))
    assert import_specs(store, json.dumps(spec(name="New name"))) == ["custom.us_spelling"]
    assert store.custom_relation_specs()["custom.us_spelling"]["name"] == "New name"
    assert parse_specs(json.dumps({"relations": [spec()]}))[0]["id"] == "custom.us_spelling"


# ---------------------------------------------------------------- guarded regexes, blank follow-ups


def catastrophic(pattern: str = r"(a|aa)+$") -> dict:
    return spec(id="custom.slow", kind="regex", rules=[{"find": pattern, "replace": "x"}])


def test_catastrophic_regex_is_refused_when_saved_or_imported(store):
    """Pins the save-time probe: `(a|aa)+$` backtracks exponentially on 'a'*30 + '!' (2^30 ways
    to split the run), so saving or importing it is refused with a message naming the pattern;
    `re` would have frozen the process instead of answering."""
    with pytest.raises(ValueError, match=r"backtracks catastrophically"):
        validate_spec(catastrophic())
    with pytest.raises(ValueError, match=r"nothing imported .*\(a\|aa\)\+\$"):
        import_specs(store, json.dumps([spec(), catastrophic()]))
    assert store.custom_relation_specs() == {}


def test_a_regex_that_runs_past_its_budget_is_a_skip_with_reason(monkeypatch):
    """Pins the run-time bound: a pattern that slipped past the probes (here the probe is
    disabled) and backtracks on a real text becomes a SKIP naming the pattern, within about
    REGEX_BUDGET_S (1 s), instead of hanging the caller."""
    import relations.custom as custom

    monkeypatch.setattr(custom, "_catastrophic_probe", lambda pattern: None)
    monkeypatch.setattr(custom, "REGEX_BUDGET_S", 0.2)
    result = apply(catastrophic(), "a" * 40 + "!")
    assert isinstance(result, SkippedFollowUp)
    assert "took longer than 0.2 s" in result.reason
    assert "(a|aa)+$" in result.reason


def test_nested_plus_regex_answers_quickly():
    """`(a+)+$` (the pattern of the issue) on 30 × 'a' + 'b': the `regex` engine answers at once;
    it does not match (the text ends in 'b'), so the case is a plain SKIP."""
    result = apply(catastrophic(r"(a+)+$"), "a" * 30 + "b")
    assert isinstance(result, SkippedFollowUp)
    assert result.reason == "no rule changed the text"


@pytest.mark.parametrize(
    ("overrides", "text"),
    [
        ({"kind": "regex", "rules": [{"find": r"^.*$", "replace": ""}]}, "Delete me."),
        ({"kind": "regex", "rules": [{"find": r"\S", "replace": " "}]}, "abc"),
        ({"rules": [{"find": "word", "replace": "  "}]}, "word"),
    ],
)
def test_blank_follow_up_is_skipped_never_sent(overrides, text):
    """Pins: a custom relation whose follow-up is empty or whitespace is a SKIP, not a call."""
    result = apply(spec(**overrides), text)
    assert isinstance(result, SkippedFollowUp)
    assert "empty or only whitespace" in result.reason


def test_llm_rewrite_that_returns_whitespace_is_skipped():
    relation = spec(kind="llm_rewrite", instruction="Rephrase", rules=None)
    del relation["rules"]
    result = apply(relation, "Some text.", rewrite=lambda prompt: '"   "')
    assert isinstance(result, SkippedFollowUp)
