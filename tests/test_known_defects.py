"""Known defects of older engines, told by relation or by stored cases (issue 23 leftovers): runs
whose rule relations sent invalid follow-ups, and NLI runs whose same-label relations edited the
hypothesis, are flagged for repair; runs whose follow-ups were valid are not."""

from __future__ import annotations

import json
import sqlite3

import pytest

from app.clients.mock import MockClient
from app.engine.embedder import EmbeddingCache
from app.engine.repairs import flagged_runs
from app.engine.runner import Runner
from core.engine_version import (
    ENGINE_VERSION,
    INVALID_RULE_OUTPUTS,
    MIXED_KINDS_PAIRING,
    NLI_CLAIM_EDITS,
    defects_touching,
)
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder


@pytest.mark.parametrize(
    ("version", "relation_ids", "touched"),
    [
        (2, ("word.negation", "char.leet"), True),  # one of the six, before version 3
        (None, ("word.tense",), True),  # unstamped runs are version 1
        (3, ("word.negation",), False),  # judged by the fixed engine
        (2, ("char.leet", "sentence.uppercase"), False),  # none of the six
    ],
)
def test_the_rule_output_defect_touches_runs_by_relation_and_version(
    version, relation_ids, touched
):
    assert INVALID_RULE_OUTPUTS.touches(version, {"rule"}, relation_ids) is touched


def test_the_mixed_kinds_defect_still_needs_mixed_kinds_and_ignores_relation_ids():
    assert MIXED_KINDS_PAIRING.touches(1, {"llm", "rule"}, ("si.paraphrase", "char.leet"))
    assert not MIXED_KINDS_PAIRING.touches(1, {"rule"}, ("word.negation",))
    assert defects_touching(1, {"llm", "rule"}, ("word.synonym", "si.paraphrase")) == [
        MIXED_KINDS_PAIRING,
        INVALID_RULE_OUTPUTS,
        NLI_CLAIM_EDITS,  # any old run: its cases tell (app.engine.repairs)
    ]
    assert NLI_CLAIM_EDITS not in defects_touching(3, {"rule"}, ("ad.format",))


REVIEWS = (
    "The soup was good and the waiter was friendly.",
    "The hotel room was dirty.",
)
# A follow-up of the kind the engine before issue 23 sent under word.negation ("John never does not
# eat"): a clause negated twice, an input no reader would write.
OLD_INVALID = "The soup was not good and the waiter was not not friendly."


def _run(db) -> str:
    """A sentiment run of the two reviews under word.negation and char.leet, judged today."""
    store = Store(db)
    try:
        endpoint = Endpoint(name="mock", base_url="http://mock/v1", model="m")
        config = RunConfig(endpoint, "sentiment", ("word.negation", "char.leet"))
        runner = Runner(
            store,
            EmbeddingCache(BagOfWordsEmbedder(), store),
            client_factory=MockClient(lambda messages: "positive").factory,
        )
        samples = [Sample({"text": text}) for text in REVIEWS]
        return runner.run_sync(config, BUILTIN_TASKS["sentiment"], samples).run_id
    finally:
        store.close()


def _age(db, run_id: str, followup: str | None = None) -> None:
    """Make the run look judged by engine 2; with ``followup``, as that engine wrote the first
    review's word.negation follow-up."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET engine_version = 2 WHERE id = ?", [run_id])
        if followup is not None:
            row = conn.execute(
                "SELECT id, source_input FROM cases WHERE run_id = ? AND relation_id = ?",
                [run_id, "word.negation"],
            ).fetchall()
            case_id = next(cid for cid, source in row if REVIEWS[0] in source)
            conn.execute(
                "UPDATE cases SET followup_input = ? WHERE id = ?",
                [json.dumps({"text": followup}), case_id],
            )
    conn.close()


def test_a_run_with_valid_rule_outputs_is_not_flagged_though_its_engine_is_old(tmp_path):
    """Replaying word.negation on the run's samples makes exactly the stored follow-ups ("The soup
    was not good …", "The hotel room was not dirty."): nothing to repair."""
    db = tmp_path / "valid.db"
    run_id = _run(db)
    _age(db, run_id)
    store = Store(db)
    try:
        assert store.run(run_id).engine_version == 2
        assert flagged_runs(store) == []
    finally:
        store.close()


def test_a_run_built_on_an_invalid_rule_output_is_flagged_then_repaired(tmp_path):
    """The stored follow-up "… was not not friendly." is not one today's word.negation makes from
    that review, so the run is flagged with the rule-output defect; rerunning it replaces that
    case with today's follow-up and stamps the current engine, after which nothing is flagged."""
    db = tmp_path / "invalid.db"
    run_id = _run(db)
    _age(db, run_id, OLD_INVALID)
    store = Store(db)
    try:
        (flagged,) = flagged_runs(store)
        assert flagged.run_id == run_id
        assert flagged.defects == (INVALID_RULE_OUTPUTS.summary,)
    finally:
        store.close()
    assert _run(db) == run_id
    store = Store(db)
    try:
        assert store.run(run_id).engine_version == ENGINE_VERSION == 3
        followups = {
            c.followup_input["text"]
            for c in store.cases_for([run_id], relation_ids=["word.negation"])
        }
        assert followups == {
            "The soup was not good and the waiter was friendly.",
            "The hotel room was not dirty.",
        }
        assert flagged_runs(store) == []
    finally:
        store.close()


PAIRS = (
    ("A woman is slicing tomatoes in a restaurant kitchen.", "A woman is preparing food."),
    ("Two boys are kicking a football across a muddy field.", "Two children are playing outside."),
)


def _nli_run(db, nli_target: str = "premise") -> str:
    """An NLI run of two pairs under ad.format and char.leet (both expect the same label),
    judged today."""
    store = Store(db)
    try:
        endpoint = Endpoint(name="mock", base_url="http://mock/v1", model="m")
        config = RunConfig(endpoint, "nli", ("ad.format", "char.leet"), nli_target=nli_target)
        runner = Runner(
            store,
            EmbeddingCache(BagOfWordsEmbedder(), store),
            client_factory=MockClient(lambda messages: "entailment").factory,
        )
        samples = [Sample({"premise": p, "hypothesis": h}) for p, h in PAIRS]
        return runner.run_sync(config, BUILTIN_TASKS["nli"], samples).run_id
    finally:
        store.close()


def _age_nli(db, run_id: str, hypothesis_edit: bool) -> None:
    """Make the run look judged by engine 2; with ``hypothesis_edit``, as that engine stored an
    ad.format case that edited the first pair's hypothesis."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET engine_version = 2 WHERE id = ?", [run_id])
        if hypothesis_edit:
            case_id = conn.execute(
                "SELECT id FROM cases WHERE run_id = ? AND relation_id = 'ad.format' "
                "AND target = 'premise' LIMIT 1",
                [run_id],
            ).fetchone()[0]
            conn.execute("UPDATE cases SET target = 'hypothesis' WHERE id = ?", [case_id])
    conn.close()


def _targets(db, run_id: str) -> dict[str, set[str]]:
    store = Store(db)
    try:
        targets: dict[str, set[str]] = {}
        for case in store.cases_for([run_id]):
            targets.setdefault(case.relation_id, set()).add(case.target)
        return targets
    finally:
        store.close()


def test_today_same_label_relations_leave_the_hypothesis(tmp_path):
    """The premise of the NLI defect's check: today ad.format and char.leet edit the premise
    only (the run's default target), and the run is not flagged."""
    db = tmp_path / "today.db"
    run_id = _nli_run(db)
    assert _targets(db, run_id) == {"ad.format": {"premise"}, "char.leet": {"premise"}}
    store = Store(db)
    try:
        assert flagged_runs(store) == []
    finally:
        store.close()


@pytest.mark.parametrize(
    ("nli_target", "hypothesis_edit", "flagged"),
    [
        ("premise", True, True),  # ad.format edited the hypothesis the run kept: the defect
        ("premise", False, False),  # an old engine, but every same-label edit was the premise's
        ("hypothesis", True, False),  # the run asked for hypothesis edits
    ],
)
def test_old_nli_runs_whose_same_label_relations_edited_the_hypothesis_are_flagged(
    tmp_path, nli_target, hypothesis_edit, flagged
):
    """Engine 2 runs are flagged with the NLI defect only where a stored case of a relation that
    expects the same label changed a field the run's NLI target keeps."""
    db = tmp_path / "nli.db"
    run_id = _nli_run(db, nli_target)
    _age_nli(db, run_id, hypothesis_edit and nli_target == "premise")
    if nli_target == "hypothesis" and hypothesis_edit:
        assert _targets(db, run_id)["ad.format"] == {"hypothesis"}
    store = Store(db)
    try:
        found = flagged_runs(store)
    finally:
        store.close()
    if flagged:
        (run,) = found
        assert run.run_id == run_id and run.defects == (NLI_CLAIM_EDITS.summary,)
    else:
        assert found == []


def test_a_flagged_nli_run_is_repaired_by_rerunning_it(tmp_path):
    """Rerunning the flagged run replaces the hypothesis-edit case with today's premise edit and
    stamps the current engine; then nothing is flagged."""
    db = tmp_path / "repair.db"
    run_id = _nli_run(db)
    _age_nli(db, run_id, hypothesis_edit=True)
    assert _targets(db, run_id)["ad.format"] == {"premise", "hypothesis"}
    assert _nli_run(db) == run_id
    assert _targets(db, run_id)["ad.format"] == {"premise"}
    store = Store(db)
    try:
        assert store.run(run_id).engine_version == ENGINE_VERSION
        assert flagged_runs(store) == []
    finally:
        store.close()
