"""Known defects of older engines, told by relation (issue 23 leftovers): runs whose rule
relations sent invalid follow-ups are flagged for repair; runs whose follow-ups were valid are not."""

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
    ]


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
