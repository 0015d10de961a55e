"""Best of k for LLM-prompted relations (issue 23, item 8)."""

from __future__ import annotations

import pytest

from app.engine.calls import TRANSFORM_PARAMS, candidate_params
from core.identity import call_key
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from relations.apply import Candidates, generate_followups
from relations.registry import get_relation

SOURCE = "Tom has 3 marbles and gives 2 to Ann. How many marbles does Tom have now?"
# Candidate n of the small rewriter, as its n-th seed would answer.
ANSWERS = {
    0: "Tom has 1 marble left.",  # the answer: 3, 2 and Ann dropped, the question gone
    1: "Tom owns 3 marbles and hands 2 to Ann. How many marbles does Tom have now?",
    2: "Tom has 3 marbles and gives Ann 2. How many marbles does Tom have now?",
}
# Input similarities of each candidate to the source (a stand-in for MiniLM's cosine).
SIMILARITY = {ANSWERS[0]: 0.55, ANSWERS[1]: 0.86, ANSWERS[2]: 0.97}
MATH = BUILTIN_TASKS["math"]


# Each sentence of the source against a candidate or its sentences (the gate's dropped-claim
# check): every candidate says both sentences again.
CLAUSE_SIMILARITY = 0.9


def _similarity(a: str, b: str) -> float:
    if a == b:
        return 1.0
    return SIMILARITY[b] if a == SOURCE else SIMILARITY.get(a, CLAUSE_SIMILARITY)


def _followups(relation_id: str, answers: dict[int, str], count: int = 3, calls=None):
    asked = calls if calls is not None else []

    def rewrite(prompt: str, candidate: int) -> str:
        asked.append(candidate)
        return answers[candidate]

    candidates = Candidates(count, rewrite, _similarity)
    return generate_followups(
        get_relation(relation_id),
        Sample({"problem": SOURCE}),
        MATH,
        ["problem"],
        rewrite=lambda prompt: rewrite(prompt, 0),
        candidates=candidates,
    )


def test_the_most_similar_passing_candidate_is_kept():
    """Issue 23 item 8: of 3 candidates, #0 fails the gate (3, 2, Ann dropped), #1 and #2 pass;
    #2 is the more similar to the source (0.97 > 0.86), so it is kept. The details say 3 were
    tried, 2 were valid and #2 was chosen."""
    calls: list[int] = []
    (followup,) = _followups("si.paraphrase", ANSWERS, calls=calls)
    assert calls == [0, 1, 2]
    assert followup.fields["problem"] == ANSWERS[2]
    rewrite = followup.details["rewrite"]
    assert (rewrite["tried"], rewrite["valid"], rewrite["chosen"]) == (3, 2, 2)
    assert rewrite["candidates"][0]["gate"] == "invalid_followup: dropped 3, 2, Ann"
    assert [c["similarity"] for c in rewrite["candidates"]] == [0.55, 0.86, 0.97]


def test_with_no_passing_candidate_the_first_is_kept_for_the_gate_to_skip():
    answers = {n: ANSWERS[0] for n in range(3)}
    (followup,) = _followups("si.paraphrase", answers)
    assert followup.fields["problem"] == ANSWERS[0]
    assert followup.details["rewrite"]["valid"] == 0
    assert followup.details["rewrite"]["chosen"] == 0


def test_a_tie_keeps_the_earliest_candidate():
    answers = {0: ANSWERS[1], 1: ANSWERS[1], 2: ANSWERS[0]}
    (followup,) = _followups("ad.paraphrase", answers)
    assert followup.details["rewrite"]["chosen"] == 0


def test_k_of_one_asks_once_as_before():
    calls: list[int] = []
    (followup,) = _followups("si.paraphrase", ANSWERS, count=1, calls=calls)
    assert calls == [0]
    assert followup.fields["problem"] == ANSWERS[0]
    assert followup.details["rewrite"]["tried"] == 1


def test_the_same_config_gives_the_same_followups():
    """Deterministic: each candidate is the n-th seed's answer, so a rerun keeps the same one."""
    assert _followups("si.paraphrase", ANSWERS) == _followups("si.paraphrase", ANSWERS)


def test_back_translation_asks_two_calls_per_candidate():
    calls: list[int] = []

    def rewrite(prompt: str, candidate: int) -> str:
        calls.append(candidate)
        if "into English" in prompt:
            return ANSWERS[candidate]
        return "Tom a 3 billes et en donne 2 à Ann. Combien de billes Tom a-t-il maintenant ?"

    (followup,) = generate_followups(
        get_relation("sentence.back_translation"),
        Sample({"problem": SOURCE}),
        MATH,
        ["problem"],
        rewrite=lambda prompt: rewrite(prompt, 0),
        candidates=Candidates(3, rewrite, _similarity),
    )
    assert calls == [0, 0, 1, 1, 2, 2]
    assert followup.fields["problem"] == ANSWERS[2]


def test_a_failing_candidate_call_fails_the_case_after_every_candidate_was_asked():
    calls: list[int] = []

    def rewrite(prompt: str, candidate: int) -> str:
        calls.append(candidate)
        if candidate == 1:
            raise RuntimeError("endpoint down")
        return ANSWERS[candidate]

    with pytest.raises(RuntimeError, match="endpoint down"):
        generate_followups(
            get_relation("si.paraphrase"),
            Sample({"problem": SOURCE}),
            MATH,
            ["problem"],
            rewrite=lambda prompt: rewrite(prompt, 0),
            candidates=Candidates(3, rewrite, _similarity),
        )
    assert calls == [0, 1, 2]


def test_empty_candidates_skip_with_the_relations_reason():
    (skipped,) = _followups("si.paraphrase", {0: "", 1: " ", 2: "```\n```"})
    assert skipped.reason == (
        "the transformation endpoint returned an empty paraphrase (all 3 candidates)"
    )
    assert skipped.details["rewrite"]["tried"] == 3


def test_the_first_candidate_keeps_the_call_key_a_single_rewrite_had():
    """Existing call-cache entries (and batch results) still answer the first candidate; the
    others differ only in their seed: 0 + 1, 0 + 2."""
    messages = [{"role": "user", "content": "Paraphrase: hi"}]
    single = call_key("http://x/v1", "m", TRANSFORM_PARAMS, messages, 0)
    assert call_key("http://x/v1", "m", candidate_params(TRANSFORM_PARAMS, 0), messages, 0) == (
        single
    )
    assert [candidate_params(TRANSFORM_PARAMS, n)["seed"] for n in (1, 2)] == [1, 2]
    assert call_key("http://x/v1", "m", candidate_params(TRANSFORM_PARAMS, 1), messages, 0) != (
        single
    )


def test_the_default_k_keeps_run_ids_and_another_k_is_another_run():
    endpoint = Endpoint(name="e", base_url="http://x/v1", model="m")
    samples = [Sample({"text": "hi"})]
    default = RunConfig(endpoint, "sentiment", ("si.paraphrase",))
    assert "rewrite_candidates" not in default.to_dict()
    assert RunConfig.from_dict(default.to_dict()).rewrite_candidates == 3
    five = RunConfig(endpoint, "sentiment", ("si.paraphrase",), rewrite_candidates=5)
    assert five.to_dict()["rewrite_candidates"] == 5
    assert RunConfig.from_dict(five.to_dict()) == five
    assert five.run_id(samples) != default.run_id(samples)


NLI = BUILTIN_TASKS["nli"]
PREMISE = "A man is riding a red bicycle in the park."
HYPOTHESIS = "A man is riding a bicycle."
# Candidates of nli.weaken_premise (LLMorph 80): #0 a question (refused when it is made), #1 and
# #2 statements the premise implies; #2 the closer to the premise (0.91 > 0.62).
NLI_ANSWERS = {
    0: "What is the man doing in the park?",
    1: "A man is outside.",
    2: "A man is riding a bicycle in the park.",
}
NLI_SIMILARITY = {NLI_ANSWERS[1]: 0.62, NLI_ANSWERS[2]: 0.91}


def _nli_followups(relation_id: str, answers: dict[int, str], similarities=NLI_SIMILARITY):
    asked: list[int] = []

    def rewrite(prompt: str, candidate: int) -> str:
        asked.append(candidate)
        return answers[candidate]

    def similarity(a: str, b: str) -> float:
        return 1.0 if a == b else similarities[b]

    followups = generate_followups(
        get_relation(relation_id),
        Sample({"premise": PREMISE, "hypothesis": HYPOTHESIS}),
        NLI,
        ["premise", "hypothesis"],
        rewrite=lambda prompt: rewrite(prompt, 0),
        candidates=Candidates(3, rewrite, similarity),
    )
    return followups, asked


def test_nli_relations_ask_for_k_candidates_and_keep_the_most_similar_valid_one():
    """Issue 23 leftovers: the NLI relations (LLMorph 77–80) use best of k like the other
    LLM-prompted relations. #0 is a question, refused as it is made (counted as tried, not kept);
    of #1 (0.62) and #2 (0.91), #2 is kept: 3 tried, 2 valid, #2 chosen."""
    (followup,), asked = _nli_followups("nli.weaken_premise", NLI_ANSWERS)
    assert asked == [0, 1, 2]
    assert followup.fields == {"premise": NLI_ANSWERS[2], "hypothesis": HYPOTHESIS}
    rewrite = followup.details["rewrite"]
    assert (rewrite["tried"], rewrite["valid"], rewrite["chosen"]) == (3, 2, 2)
    assert [c["n"] for c in rewrite["candidates"]] == [1, 2]


def test_nli_extend_premise_appends_the_chosen_candidate_to_the_premise():
    """LLMorph 77: the appended sentence must keep the hypothesis' names; #0 is a question, and
    of the two statements the more similar premise + sentence is kept."""
    answers = {0: NLI_ANSWERS[0], 1: "A man is riding a bicycle to work.", 2: "A man rides."}
    extended = {f"{PREMISE} {answers[1]}": 0.9, f"{PREMISE} {answers[2]}": 0.8}
    (followup,), asked = _nli_followups("nli.extend_premise", answers, extended)
    assert asked == [0, 1, 2]
    assert followup.fields["premise"] == f"{PREMISE} {answers[1]}"
    assert followup.details["rewrite"]["chosen"] == 1


def test_nli_relations_with_no_usable_candidate_skip_with_the_first_reason():
    (skipped,), asked = _nli_followups("nli.weaken_premise", {n: NLI_ANSWERS[0] for n in range(3)})
    assert asked == [0, 1, 2]
    assert skipped.reason == (
        "invalid_followup: the generated line is a question, not a statement: "
        "'What is the man doing in the park?' (all 3 candidates)"
    )


def test_a_custom_llm_rewrite_relation_asks_for_k_candidates():
    """Custom ``llm_rewrite`` relations use best of k too: #0 is empty (refused), #1 and #2 are
    rewrites; #2 is the more similar (0.97 > 0.86) and is kept."""
    from relations.custom import relation_from_spec

    relation = relation_from_spec(
        {
            "id": "custom.plain",
            "name": "Plain",
            "kind": "llm_rewrite",
            "instruction": "Say it in plain words.",
            "expectation": "equivalent",
        }
    )
    asked: list[int] = []
    answers = {0: "  ", 1: ANSWERS[1], 2: f'"Rewritten text: {ANSWERS[2]}"'}

    def rewrite(prompt: str, candidate: int) -> str:
        asked.append(candidate)
        return answers[candidate]

    (followup,) = generate_followups(
        relation,
        Sample({"problem": SOURCE}),
        MATH,
        ["problem"],
        rewrite=lambda prompt: rewrite(prompt, 0),
        candidates=Candidates(3, rewrite, _similarity),
    )
    assert asked == [0, 1, 2]
    assert followup.fields["problem"] == ANSWERS[2]
    assert followup.details["rewrite"]["tried"] == 3
    assert followup.details["rewrite"]["chosen"] == 2
