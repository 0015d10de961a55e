"""A source outside a relation's precondition is stored as SKIP ``precondition: …`` by a real run.

LLMorph tool paper §II.D / §III.B: a metamorphic group whose outputs break the relation's
verification is a verification failure, not a violation. LLMorph's catalogue verifies, for its
"should change" relation 25 (replace keywords) on NLI, that the source output is not 'neutral'.
"""

from __future__ import annotations

from app.clients.mock import MockClient
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample, Verdict
from relations.oracles import is_precondition_skip

NLI = BUILTIN_TASKS["nli"]
ENDPOINT = Endpoint(name="mock", base_url="mock://model", model="mock-model", kind="mock")
SAMPLES = [
    Sample({"premise": "A chef is slicing fresh tomatoes.", "hypothesis": "A chef is cooking."}),
    Sample({"premise": "Two dogs run across a field.", "hypothesis": "Animals are outside."}),
]


def neutral_model(messages) -> str:
    """Says 'neutral' to every pair: no source decides anything a relation could change."""
    return "neutral"


def test_a_neutral_nli_source_is_stored_as_skip_never_fail(store, embeddings):
    runner = Runner(store, embeddings, client_factory=MockClient(neutral_model).factory)
    config = RunConfig(ENDPOINT, "nli", ("word.replace_keywords", "si.identity"))
    summary = runner.run_sync(config, NLI, SAMPLES)
    cases = store.cases_for([summary.run_id])
    should_change = [c for c in cases if c.relation_id == "word.replace_keywords"]
    assert should_change and all(c.verdict is Verdict.SKIP for c in should_change)
    for case in should_change:
        # Sent and answered, then judged out of scope: the outputs are kept for inspection.
        assert case.source_output == "neutral" and case.followup_output == "neutral"
        assert is_precondition_skip(case.reason)
        assert case.reason == (
            "precondition: the source label is 'neutral': there is no decision to change"
        )
        assert case.oracle == "precondition" and case.value is None
    # An invariance relation has no such precondition: neutral → neutral is a PASS.
    identity = [c for c in cases if c.relation_id == "si.identity"]
    assert identity and all(c.verdict is Verdict.PASS for c in identity)
    assert Verdict.FAIL.value not in summary.verdicts
