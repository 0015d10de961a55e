"""NLI: the relations that expect the same label perturb the premise only, unless the run asks
for the hypothesis (issue 23, item 4).

The hypothesis is the claim judged against the premise. LLMorph's NLI relations that keep the
label change the premise ("inference" MRs 9 and 84: ``transform_indices [[0]]``); an edited
hypothesis can claim something else — 'Unrelated note: some bus routes… A woman is preparing
food.' is a new claim the premise says nothing about, so "same label" is wrong there.
"""

from __future__ import annotations

import pytest

from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from relations.apply import SkippedFollowUp, field_targets, generate_followups
from relations.base import Expectation
from relations.registry import get_relation, list_relations

NLI = BUILTIN_TASKS["nli"]
# Hand-made pairs: plain present-tense verbs, objects, commas and an opening clause, so that
# every rule relation finds something to change in some premise.
PAIRS = [
    Sample(
        {
            "premise": "A woman in a red coat is cooking dinner in a small kitchen.",
            "hypothesis": "A woman is preparing food.",
        },
    ),
    Sample(
        {
            "premise": "The committee approved the new budget after a long meeting.",
            "hypothesis": "The budget was approved.",
        },
    ),
    Sample(
        {
            "premise": "Two children play football in the park while their father watches.",
            "hypothesis": "Some children are outside.",
        },
    ),
    Sample(
        {
            "premise": "When the bakery opens, the baker sells fresh bread to the neighbours.",
            "hypothesis": "The baker sells bread.",
        },
    ),
]
# The relations the issue names, which today edited the hypothesis.
NAMED = {"ad.distractor", "ad.format", "si.academic", "si.business", "si.expand", "si.contrastive"}


class Rewriter:
    """A fake transformation endpoint: rewrites whatever text the prompt carries into one fixed,
    plausible sentence (the relations' prompts differ; the field rule does not care)."""

    def __call__(self, prompt: str) -> str:
        return "Someone is doing something ordinary in a familiar place."


def same_label_relations() -> list[str]:
    return [
        r.id
        for r in list_relations(NLI)
        if r.expectation is Expectation.EQUIVALENT and r.fields is None and r.build is None
    ]


def followups(relation_id: str, sample: Sample, target: str = "premise"):
    return generate_followups(
        get_relation(relation_id), sample, NLI, list(NLI.fields), run_seed=7,
        rewrite=Rewriter(), nli_target=target,
    )  # fmt: skip


def test_the_issue_names_are_among_the_same_label_relations():
    # The rule is by expectation, not by a list: the issue's six (and 24 more) fall under it.
    ids = same_label_relations()
    assert set(ids) >= NAMED
    assert len(ids) >= 20
    assert "word.negation" not in ids  # expects a change: picks its own fields


@pytest.mark.parametrize("relation_id", same_label_relations())
def test_a_same_label_relation_changes_the_premise_and_keeps_the_hypothesis(relation_id):
    produced = 0
    for sample in PAIRS:
        for made in followups(relation_id, sample):
            if isinstance(made, SkippedFollowUp):
                continue
            produced += 1
            assert made.target == "premise"
            assert made.fields["hypothesis"] == sample.fields["hypothesis"]
            if not get_relation(relation_id).params.get("allow_identical"):
                assert made.fields["premise"] != sample.fields["premise"]
    assert produced >= 1, f"{relation_id} made no follow-up on any of the 4 pairs"


def test_distractor_goes_to_the_premise_not_the_hypothesis():
    """The issue's example: 'Unrelated note: …' ended up in front of the hypothesis."""
    [made] = followups("ad.distractor", PAIRS[0])
    assert made.fields["hypothesis"] == "A woman is preparing food."
    assert "A woman in a red coat is cooking dinner" in made.fields["premise"]
    assert len(made.fields["premise"]) > len(PAIRS[0].fields["premise"])


def test_the_hypothesis_target_changes_only_the_hypothesis():
    [made] = followups("si.academic", PAIRS[0], target="hypothesis")
    assert made.target == "hypothesis"
    assert made.fields["premise"] == PAIRS[0].fields["premise"]
    assert made.fields["hypothesis"] != "A woman is preparing food."
    [upper] = followups("sentence.uppercase", PAIRS[0], target="hypothesis")
    assert upper.fields["hypothesis"] == "A WOMAN IS PREPARING FOOD."


def test_both_targets_give_each_field_then_both_as_before():
    made = followups("sentence.uppercase", PAIRS[1], target="both")
    assert [m.target for m in made] == ["premise", "hypothesis", "premise+hypothesis"]
    assert made[2].fields == {
        "premise": "THE COMMITTEE APPROVED THE NEW BUDGET AFTER A LONG MEETING.",
        "hypothesis": "THE BUDGET WAS APPROVED.",
    }


def test_the_premise_follow_up_is_the_one_it_was_before_the_rule():
    # Index 0 was the premise follow-up with the same case seed: an old run resumes onto it.
    [now] = followups("char.delete", PAIRS[2])
    before = followups("char.delete", PAIRS[2], target="both")[0]
    assert now == before


def test_added_content_never_reaches_the_hypothesis_even_when_asked():
    # word.insert_random and sentence.add_random keep CLAIM_FIELDS whatever the run says.
    [skip] = followups("word.insert_random", PAIRS[0], target="hypothesis")
    assert isinstance(skip, SkippedFollowUp)
    assert skip.reason == (
        "the run's NLI target is the hypothesis, and this relation never changes it"
    )
    assert [m.target for m in followups("sentence.add_random", PAIRS[0], "both")] == ["premise"]


def test_relations_that_expect_a_change_or_name_their_field_choose_for_themselves():
    antonym, extend = get_relation("word.antonym"), get_relation("nli.extend_hypothesis")
    assert field_targets(antonym, ["premise", "hypothesis"]) == [("premise",), ("hypothesis",)]
    assert field_targets(extend, ["premise", "hypothesis"]) == [("hypothesis",)]


def test_other_two_field_tasks_are_untouched():
    # QA's question is not a claim: a same-label relation still gets each field and both.
    synonym = get_relation("word.synonym")
    assert field_targets(synonym, ["context", "question"]) == [
        ("context",),
        ("question",),
        ("context", "question"),
    ]


@pytest.mark.parametrize("relation_id", ["sentence.shuffle", "word.number"])
def test_shuffle_and_number_do_not_run_on_nli(relation_id):
    """LLMorph applies neither sentence shuffling (19) nor singular/plural (149) to NLI."""
    assert relation_id not in {r.id for r in list_relations(NLI)}
    [skip] = followups(relation_id, PAIRS[2])
    assert skip.reason == "relation does not apply to task nli"
    assert get_relation(relation_id).applies_to(BUILTIN_TASKS["qa"])


ENDPOINT = Endpoint(name="server", base_url="http://127.0.0.1:9/v1", model="m-1")


def test_the_default_target_leaves_run_ids_as_they_were():
    config = RunConfig(ENDPOINT, "nli", ("si.identity",))
    assert "nli_target" not in config.to_dict()
    assert config.run_id(PAIRS) == RunConfig(
        ENDPOINT, "nli", ("si.identity",), nli_target="premise"
    ).run_id(PAIRS)
    both = RunConfig(ENDPOINT, "nli", ("si.identity",), nli_target="both")
    assert both.to_dict()["nli_target"] == "both"
    assert both.run_id(PAIRS) != config.run_id(PAIRS)
    assert RunConfig.from_dict(both.to_dict()) == both
    assert RunConfig.from_dict(config.to_dict()).nli_target == "premise"
    with pytest.raises(ValueError, match="nli_target must be one of premise, hypothesis, both"):
        RunConfig(ENDPOINT, "nli", ("si.identity",), nli_target="claim")


def test_the_run_command_takes_the_target(tmp_path):
    from app.cli.main import build_parser
    from app.cli.plan import run_config_from_args
    from storage import Store

    inputs = tmp_path / "pairs.jsonl"
    inputs.write_text('{"premise": "A dog runs.", "hypothesis": "An animal moves."}\n')
    argv = ["run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "nli",
            "--relations", "si.identity", "--inputs", str(inputs)]  # fmt: skip
    store = Store(tmp_path / "t.db")
    parser = build_parser()
    default, _, _ = run_config_from_args(parser.parse_args(argv), store)
    chosen, _, _ = run_config_from_args(
        parser.parse_args([*argv, "--nli-target", "hypothesis"]), store
    )
    assert (default.nli_target, chosen.nli_target) == ("premise", "hypothesis")
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--nli-target", "claim"])


def test_a_planned_run_follows_the_config(tmp_path):
    from app.clients.batch import BatchClient
    from app.engine.embedder import EmbeddingCache
    from app.engine.runner import Runner
    from storage import Store
    from tests.conftest import BagOfWordsEmbedder

    store = Store(tmp_path / "p.db")
    runner = Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))
    runner.client_factory = BatchClient
    targets = {}
    for target in ("premise", "both"):
        config = RunConfig(ENDPOINT, "nli", ("sentence.uppercase",), nli_target=target)
        plan = runner.plan_sync(config, NLI, PAIRS[:1])
        targets[target] = [case.followup.target for case in plan.cases]
    assert targets == {
        "premise": ["premise"],
        "both": ["premise", "hypothesis", "premise+hypothesis"],
    }
