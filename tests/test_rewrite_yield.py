"""The rewrite yield of LLM-prompted relations (issue 23, item 9): valid rewrites / attempts."""

from __future__ import annotations

import dataclasses

import pytest

from core.case_filter import CaseFilter
from storage import Store
from storage.gate_verbs import RewriteYield, reason_kind
from tests.triage_data import make_case, save_runs


def _case(case_id, relation_id, index, verdict, reason, *, repeat=0, made=True):
    case = make_case(case_id, relation_id=relation_id, index=index, verdict=verdict)
    return dataclasses.replace(
        case,
        reason=reason,
        repeat_index=repeat,
        followup_input=case.followup_input if made else None,
    )


CASES = [
    # si.paraphrase: 6 follow-ups, of which 2 are no attempt.
    _case("a1", "si.paraphrase", 1, "PASS", "automatic"),
    _case("a1r", "si.paraphrase", 1, "FAIL", "automatic", repeat=1),  # a repeat: counted once
    _case("a2", "si.paraphrase", 2, "SKIP", "precondition: source is neutral"),  # valid rewrite
    _case("a3", "si.paraphrase", 3, "SKIP", "invalid_followup: dropped 3, Ann"),
    _case("a4", "si.paraphrase", 4, "SKIP", "invalid_followup: numbers added (1)"),
    _case("a5", "si.paraphrase", 5, "SKIP", "invalid_followup: dropped 12"),
    _case(
        "a6",
        "si.paraphrase",
        6,
        "SKIP",
        "the transformation endpoint returned an empty paraphrase (all 3 candidates)",
        made=False,
    ),
    _case("a7", "si.paraphrase", 7, "ERROR", "transformation endpoint failed: 500", made=False),
    _case(
        "a8",
        "si.paraphrase",
        8,
        "SKIP",
        "no transformation endpoint configured for this LLM-prompted relation",
        made=False,
    ),
    # si.expand: 2 follow-ups, both valid.
    _case("e1", "si.expand", 1, "PASS", "automatic"),
    _case("e2", "si.expand", 2, "ERROR", "followup: timeout"),  # made, then the model failed
    # char.delete is rule-based: not asked for.
    _case("c1", "char.delete", 1, "SKIP", "identical_followup"),
]


def test_rewrite_yield_counts_valid_rewrites_over_attempts(tmp_path):
    """si.paraphrase: attempts = 1, 2, 3, 4, 5, 6 = 6 (7: the endpoint failed, 8: none was
    configured, neither asks the rewriter); valid = 1 (judged twice, once counted) and 2 (its
    source output is outside the precondition; the rewrite itself passed) = 2; yield 2 / 6 =
    33 % < 50 %: too weak. Reasons: dropped ×2 (3 and 5), numbers added ×1, the empty
    paraphrase ×1. si.expand: 2 / 2 = 100 %."""
    store = Store(tmp_path / "y.db")
    save_runs(store, CASES)
    found = store.rewrite_yield(CaseFilter(), ["si.expand", "si.paraphrase"])
    assert found == [
        RewriteYield("si.expand", attempts=2, valid=2, skip_reasons=()),
        RewriteYield(
            "si.paraphrase",
            attempts=6,
            valid=2,
            skip_reasons=(
                ("dropped", 2),
                ("numbers added", 1),
                ("the transformation endpoint returned an empty paraphrase", 1),
            ),
        ),
    ]
    assert found[1].share == pytest.approx(2 / 6)
    assert found[1].too_weak and not found[0].too_weak
    assert store.rewrite_yield(CaseFilter(run_ids=("other",)), ["si.paraphrase"]) == []
    assert store.rewrite_yield(CaseFilter(), []) == []


def test_gate_counts_set_the_gate_apart_from_the_other_skips(tmp_path):
    """The Probe's gate table beside the yield: si.paraphrase has 8 follow-ups (1-8), 3 rejected
    by the gate (3, 4, 5) and 3 SKIPped otherwise (2: a precondition, 6: an empty rewrite, 8: no
    endpoint; 7 is an ERROR). si.expand: 2 follow-ups, no SKIP. char.delete: 1, rejected."""
    from storage.gate_verbs import GateCount

    store = Store(tmp_path / "g.db")
    save_runs(store, CASES)
    assert store.gate_counts("run-a") == [
        GateCount("char.delete", followups=1, rejected=1, skipped_otherwise=0),
        GateCount("si.expand", followups=2, rejected=0, skipped_otherwise=0),
        GateCount("si.paraphrase", followups=8, rejected=3, skipped_otherwise=3),
    ]


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("invalid_followup: dropped 3, Ann", "dropped"),
        ("invalid_followup: input similarity 0.55 < floor 0.70", "input similarity"),
        ('invalid_followup: meta-commentary ("Here is")', "meta-commentary"),
        ("invalid_followup: sentiment words lost (positive: 3 → 1)", "sentiment words lost"),
        ('invalid_followup: text added after the question ("He has")', "text added after the question"),
        ("invalid_followup: the question became a statement (in question)", "the question became a statement"),
        ("identical_followup", "identical_followup"),
        ("paraphrase rejected: too short (12 characters for a source of 80)", "paraphrase rejected: too short"),
    ],
)  # fmt: skip
def test_reason_kinds_leave_out_the_particulars(reason, kind):
    assert reason_kind(reason) == kind
