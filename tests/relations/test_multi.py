"""Multi-input relations: pairwise order (systematicity) and NLI transitivity."""

from __future__ import annotations

import pytest

from core.answers import AnswerType
from core.tasks import BUILTIN_TASKS
from core.types import ParsedOutput, Sample, Verdict
from relations.apply import SkippedFollowUp, generate_followups
from relations.base import CheckInput, Expectation, FollowUp
from relations.multi import NEUTRAL_SENTENCES, order_preserved, transitive
from relations.oracles import evaluate
from relations.registry import get_relation

X1 = Sample(fields={"text": "Light, cute and forgettable."})
X2 = Sample(fields={"text": "A masterpiece four years in the making."})


def pairwise(sample=X1, partners=(X2,), seed=0):
    relation = get_relation("multi.pairwise_order")
    return generate_followups(
        relation,
        sample,
        BUILTIN_TASKS["sentiment_score"],
        ["text"],
        run_seed=seed,
        partners=partners,
    )


def scores(source, partner_source, followup, partner_followup) -> CheckInput:
    def out(value):
        return ParsedOutput(answer=None if value is None else repr(float(value)))

    return CheckInput(
        source=out(source),
        followup=out(followup),
        companions={
            "partner_source": out(partner_source),
            "partner_followup": out(partner_followup),
        },
        answer_type="score",
        threshold=None,
        similarity=lambda a, b: 0.0,
    )


def labels(ab, bc, ac) -> CheckInput:
    return CheckInput(
        source=ParsedOutput(answer=ab),
        followup=ParsedOutput(answer=ac),
        companions={"bc": ParsedOutput(answer=bc)},
        answer_type="label",
        threshold=None,
        similarity=lambda a, b: 0.0,
    )


def test_pairwise_order_appends_the_same_neutral_sentence_to_both():
    [followup] = pairwise()
    assert isinstance(followup, FollowUp)
    sentence = followup.fields["text"].removeprefix("Light, cute and forgettable. ")
    assert sentence in NEUTRAL_SENTENCES
    assert followup.companions == {
        "partner_source": {"text": "A masterpiece four years in the making."},
        "partner_followup": {"text": f"A masterpiece four years in the making. {sentence}"},
    }
    assert followup.source_fields is None  # the source is x1 itself
    relation = get_relation("multi.pairwise_order")
    assert relation.expectation is Expectation.ORDER_PRESERVED
    assert relation.tasks == frozenset({"sentiment_score"})


def test_pairwise_order_is_seeded():
    assert pairwise(seed=7) == pairwise(seed=7)
    chosen = {pairwise(seed=s)[0].fields["text"] for s in range(30)}
    assert len(chosen) > 1  # the neutral sentence depends on the seed


def test_pairwise_order_needs_a_distinct_partner():
    [skipped] = pairwise(partners=())
    assert isinstance(skipped, SkippedFollowUp)
    assert "partner" in skipped.reason
    [same] = pairwise(partners=(X1,))
    assert isinstance(same, SkippedFollowUp)
    assert "same text" in same.reason


@pytest.mark.parametrize(
    ("values", "verdict"),
    [
        ((0.9, 0.2, 0.8, 0.3), Verdict.PASS),
        ((0.2, 0.9, 0.1, 0.7), Verdict.PASS),
        ((0.9, 0.2, 0.3, 0.8), Verdict.FAIL),  # the order flips
        ((0.2, 0.9, 0.7, 0.1), Verdict.FAIL),
        ((0.9, 0.2, 0.5, 0.5), Verdict.FAIL),  # a follow-up tie loses the order
    ],
)
def test_order_preserved(values, verdict):
    result = order_preserved(scores(*values))
    assert result.verdict is verdict
    assert result.oracle == "order_preserved"
    assert result.value == (1.0 if verdict is Verdict.PASS else 0.0)
    s1, s2, f1, f2 = values
    assert result.details == {
        "source": s1,
        "partner_source": s2,
        "followup": f1,
        "partner_followup": f2,
    }


def judged(relation_id: str, ci: CheckInput, answer_type: AnswerType):
    """The verdict through ``evaluate``, where the source-output preconditions are checked."""
    return evaluate(
        get_relation(relation_id), answer_type, ci.source, ci.followup, ci.similarity,
        companions=ci.companions,
    )  # fmt: skip


def test_a_tie_of_the_source_scores_is_skip_not_pass():
    """Systematicity seed §4 (pairwise systematicity): if f(x1) > f(x2) then f(x1') > f(x2').

    With f(x1) = f(x2) = 0.5 the premise "x1 is ranked above x2" (or below) is false for both
    orders, so the relation says nothing: the case is SKIP. It used to be a PASS ("no order to
    preserve"), which counted a case the relation does not apply to as a kept order.
    """
    tied = judged("multi.pairwise_order", scores(0.5, 0.5, 0.9, 0.1), AnswerType.SCORE)
    assert (tied.verdict, tied.value) == (Verdict.SKIP, None)
    assert (
        tied.reason
        == "precondition: the source scores tie (0.5 = 0.5): there is no order to preserve"
    )
    untied = judged("multi.pairwise_order", scores(0.6, 0.5, 0.9, 0.1), AnswerType.SCORE)
    assert untied.verdict is Verdict.PASS
    # An unreadable partner score cannot tell a tie: the ERROR comes from the check.
    missing = judged("multi.pairwise_order", scores(0.5, None, 0.9, 0.1), AnswerType.SCORE)
    assert missing.verdict is Verdict.ERROR


def test_order_preserved_reasons():
    assert order_preserved(scores(0.9, 0.2, 0.3, 0.8)).reason == (
        "order not preserved: source 0.9 > 0.2, follow-up 0.3 < 0.8"
    )


def test_order_preserved_missing_partner_output_is_error():
    result = order_preserved(scores(0.9, None, 0.8, 0.3))
    assert result.verdict is Verdict.ERROR
    assert "partner_source" in result.reason


A = Sample(fields={"premise": "A chef is slicing tomatoes in a kitchen.", "hypothesis": "x"})
B = Sample(fields={"premise": "A chef is cutting tomatoes.", "hypothesis": "y"})
C = Sample(fields={"premise": "Someone is preparing food.", "hypothesis": "z"})


def test_nli_transitivity_builds_source_companion_and_followup():
    relation = get_relation("multi.nli_transitivity")
    [followup] = generate_followups(
        relation, A, BUILTIN_TASKS["nli"], ["premise", "hypothesis"], partners=(B, C)
    )
    assert followup.source_fields == {
        "premise": "A chef is slicing tomatoes in a kitchen.",
        "hypothesis": "A chef is cutting tomatoes.",
    }
    assert followup.companions == {
        "bc": {"premise": "A chef is cutting tomatoes.", "hypothesis": "Someone is preparing food."}
    }
    assert followup.fields == {
        "premise": "A chef is slicing tomatoes in a kitchen.",
        "hypothesis": "Someone is preparing food.",
    }


def test_nli_transitivity_needs_two_distinct_partners():
    relation = get_relation("multi.nli_transitivity")
    [one] = generate_followups(
        relation, A, BUILTIN_TASKS["nli"], ["premise", "hypothesis"], partners=(B,)
    )
    assert isinstance(one, SkippedFollowUp)
    assert "two partner" in one.reason
    [wrapped] = generate_followups(
        relation, A, BUILTIN_TASKS["nli"], ["premise", "hypothesis"], partners=(B, A)
    )
    assert isinstance(wrapped, SkippedFollowUp)


def test_transitive_check():
    passed = transitive(labels("entailment", "entailment", "entailment"))
    assert (passed.verdict, passed.oracle, passed.value) == (Verdict.PASS, "transitive", 1.0)
    failed = transitive(labels("entailment", "entailment", "neutral"))
    assert (failed.verdict, failed.value) == (Verdict.FAIL, 0.0)
    assert failed.details == {"ab": "entailment", "bc": "entailment", "ac": "neutral"}
    skipped = judged(
        "multi.nli_transitivity", labels("entailment", "neutral", "contradiction"), AnswerType.LABEL
    )
    assert skipped.verdict is Verdict.SKIP
    assert skipped.reason == (
        "precondition: (a, b) is entailment and (b, c) is neutral; both must be entailment"
    )
    missing = CheckInput(
        ParsedOutput("entailment"), ParsedOutput("entailment"), {}, "label", None, lambda a, b: 0
    )
    assert transitive(missing).verdict is Verdict.ERROR
