"""ddmin over hand-made edit sets (issue 26 §2; Zeller & Hildebrandt, TSE 2002, §4 "ddmin").

Each oracle here is a rule over edit indices; each trial costs one model call."""

from __future__ import annotations

import random

import pytest

from app.engine.shrink import SINGLE, Repeats, ShrinkStatus, Trial, ddmin


def rule(fails_when):
    def oracle(kept: tuple[int, ...], repeat: int) -> Trial:
        return Trial(failed=fails_when(set(kept)), calls=1)

    return oracle


def test_one_culprit_among_ten_is_found() -> None:
    result = ddmin(10, rule(lambda kept: 7 in kept), repeats=SINGLE)
    assert result.status is ShrinkStatus.MINIMAL
    assert result.kept == (7,)
    # all 10 (fails, 1) → {0..4} passes (2), {5..9} fails (3) → {5,6,7} fails (4) →
    # {5,6} passes (5), {7} fails (6): a binary search, 6 calls.
    assert result.calls == 6
    assert [kept for kept, _ in result.trace][-1] == (7,)


def test_interacting_pair_only_flips_together() -> None:
    # Only edits 2 AND 8 together flip the answer: no half alone fails, so ddmin must go to
    # complements and keep exactly the pair.
    result = ddmin(10, rule(lambda kept: {2, 8} <= kept), repeats=SINGLE)
    assert result.status is ShrinkStatus.MINIMAL
    assert result.kept == (2, 8)


def test_one_of_two_alternatives_is_kept() -> None:
    # Either edit 1 or edit 4 flips on its own: 1-minimal means one of them, not both.
    result = ddmin(6, rule(lambda kept: bool({1, 4} & kept)), repeats=SINGLE)
    assert result.kept in ((1,), (4,))


def test_a_single_edit_is_minimal_after_its_confirmation() -> None:
    result = ddmin(1, rule(lambda kept: 0 in kept), repeats=SINGLE)
    assert (result.status, result.kept, result.calls) == (ShrinkStatus.MINIMAL, (0,), 1)


def test_budget_returns_the_smallest_failing_subset_so_far() -> None:
    # 3 calls: confirm all 8 (1), first half {0..3} passes (2), second half {4..7} fails (3):
    # the 4th call is over budget, so {4,5,6,7} comes back.
    result = ddmin(8, rule(lambda kept: 6 in kept), repeats=SINGLE, max_calls=3)
    assert result.status is ShrinkStatus.BUDGET_REACHED
    assert result.kept == (4, 5, 6, 7)
    assert result.calls == 3


def test_a_fail_that_does_not_reproduce_is_not_shrunk() -> None:
    # The original fails only in repeat 0 ("one lucky sample"): 1 of 3 < 2.
    def oracle(kept, repeat):
        return Trial(failed=repeat == 0, calls=1)

    result = ddmin(5, oracle, repeats=Repeats(2, 3))
    assert result.status is ShrinkStatus.NOT_REPRODUCIBLE
    assert result.kept == (0, 1, 2, 3, 4)
    assert result.calls == 3


def test_noise_needs_k_of_n_for_every_candidate() -> None:
    # Edit 3 flips the answer in 2 of 3 samples; any other candidate fails only in sample 0,
    # which a single-sample search would take for a real failure.
    def oracle(kept, repeat):
        if 3 in kept:
            return Trial(failed=repeat != 1, calls=1)
        return Trial(failed=repeat == 0, calls=1)

    lucky = ddmin(6, oracle, repeats=SINGLE)
    assert lucky.kept != (3,)  # first half {0,1,2} "fails" on its lucky sample 0
    confirmed = ddmin(6, oracle, repeats=Repeats(2, 3))
    assert (confirmed.status, confirmed.kept) == (ShrinkStatus.MINIMAL, (3,))
    assert confirmed.confirmed == "2/3"


def test_cached_candidates_cost_nothing() -> None:
    seen: set[tuple[int, ...]] = set()

    def oracle(kept, repeat):
        new = (kept, repeat) not in seen
        seen.add((kept, repeat))
        return Trial(failed=5 in kept, calls=int(new))

    result = ddmin(10, oracle, repeats=SINGLE)
    assert result.calls == result.candidates


@pytest.mark.parametrize("seed", range(20))
def test_result_is_one_minimal_on_random_rules(seed: int) -> None:
    """1-minimality (TSE 2002, Def. 8): the kept set fails and dropping any one edit passes."""
    rng = random.Random(seed)
    needed = set(rng.sample(range(12), rng.randint(1, 3)))

    def fails(kept):
        return needed <= kept

    result = ddmin(12, rule(fails), repeats=SINGLE, max_calls=10_000)
    kept = set(result.kept)
    assert fails(kept)
    assert all(not fails(kept - {i}) for i in kept)
    assert kept == needed


def test_repeats_parse() -> None:
    assert Repeats.parse("2/3") == Repeats(2, 3)
    with pytest.raises(ValueError):
        Repeats.parse("4/3")
    with pytest.raises(ValueError):
        Repeats.parse("two")


def test_a_candidate_that_cannot_be_judged_stops_the_search_with_its_reason() -> None:
    # Candidates with edit 0 are judged; the first without it hits an endpoint error: the
    # search must not read that as a pass (which would keep edit 0 for nothing).
    def oracle(kept, repeat):
        if 0 in kept:
            return Trial(failed=True, calls=1)
        return Trial(failed=False, calls=1, error="ERROR: connection refused")

    result = ddmin(4, oracle, repeats=SINGLE)
    # all 4 fail (1), {0,1} fails (2), {0} fails (3): minimal without ever meeting the error.
    assert (result.status, result.kept) == (ShrinkStatus.MINIMAL, (0,))
    broken = ddmin(4, lambda kept, r: Trial(False, 1, error="ERROR: connection refused"))
    assert broken.status is ShrinkStatus.ERROR
    assert broken.kept == (0, 1, 2, 3)
    assert "connection refused" in broken.reason


class SourceThenFollowUp:
    """A trial sends the candidate follow-up; the first trial of each repeat also sends the
    source (which the call cache then answers): 2 calls, then 1. It says so before (``cost``)."""

    def __init__(self, fails_when) -> None:
        self.fails_when = fails_when
        self.sources_sent: set[int] = set()

    def cost(self, kept: tuple[int, ...], repeat: int) -> int:
        return 1 + (repeat not in self.sources_sent)

    def __call__(self, kept: tuple[int, ...], repeat: int) -> Trial:
        calls = self.cost(kept, repeat)
        self.sources_sent.add(repeat)
        return Trial(failed=self.fails_when(set(kept)), calls=calls)


def test_the_budget_is_never_overshot_when_a_trial_costs_two_calls() -> None:
    # Budget 1: confirming the original needs the source and the follow-up (2 calls), which
    # do not fit: nothing is sent and all 8 edits come back (a search that checked only
    # "calls < budget" before each trial would have spent 2).
    tight = ddmin(8, SourceThenFollowUp(lambda kept: 6 in kept), repeats=SINGLE, max_calls=1)
    assert (tight.status, tight.calls, tight.kept) == (
        ShrinkStatus.BUDGET_REACHED,
        0,
        tuple(range(8)),
    )
    # Budget 4: all 8 (2 calls) fail, {0..3} passes (3), {4..7} fails (4); {4,5} would be the
    # 5th call: stop at exactly 4 with {4,5,6,7}.
    result = ddmin(8, SourceThenFollowUp(lambda kept: 6 in kept), repeats=SINGLE, max_calls=4)
    assert (result.status, result.calls, result.kept) == (
        ShrinkStatus.BUDGET_REACHED, 4, (4, 5, 6, 7)
    )  # fmt: skip
    assert "4 of 4 model calls spent and the next sample needs 1" in result.reason


def batch_rounds(edits_total, fails_sample, repeats, max_calls=10_000):
    """The search driven the batch way: each round asks for a whole level's samples (a fake
    batch engine answers them all), and the state is stored as JSON between rounds."""
    import json

    from app.engine.shrink import DdminState, absorb, plan_round

    answered: set[tuple[tuple[int, ...], int]] = set()

    def oracle(kept, repeat):
        return Trial(failed=fails_sample(set(kept), repeat), calls=0)  # from the call cache

    stored = json.dumps(DdminState.start(edits_total, repeats, max_calls).to_dict())
    rounds = 0
    while True:
        state = DdminState.from_dict(json.loads(stored))
        absorb(state, oracle, lambda kept, repeat: (kept, repeat) in answered)
        asked = [] if state.done else plan_round(state, lambda k, r: {f"{k}/{r}"})
        stored = json.dumps(state.to_dict())
        if state.done:
            return state.result(), rounds
        answered.update(asked)  # the batch engine answers every request of the round
        rounds += 1


@pytest.mark.parametrize("seed", range(20))
def test_batch_rounds_keep_the_same_edits_as_the_online_search(seed: int) -> None:
    """One algorithm: the state machine fed a level per round, resumed from JSON between
    rounds, keeps the online ddmin's edits (TSE 2002 §4; both take the same decisions)."""
    rng = random.Random(seed)
    needed = set(rng.sample(range(12), rng.randint(1, 3)))

    def fails(kept, repeat=0):
        return needed <= kept

    online = ddmin(12, rule(fails), repeats=SINGLE, max_calls=10_000)
    batch, rounds = batch_rounds(12, fails, SINGLE)
    assert (batch.status, batch.kept) == (online.status, online.kept) == (
        ShrinkStatus.MINIMAL, tuple(sorted(needed))
    )  # fmt: skip
    # a level per round: at least one round per halving of 12 edits (4: 12 → 6 → 3 → …)
    assert 2 <= rounds <= online.candidates


def test_batch_rounds_confirm_k_of_n_like_the_online_search() -> None:
    # Edit 3 flips in 2 of 3 samples, any other candidate only in sample 0 (a lucky sample).
    def fails(kept, repeat):
        return repeat != 1 if 3 in kept else repeat == 0

    online = ddmin(6, lambda k, r: Trial(fails(set(k), r), 1), repeats=Repeats(2, 3))
    batch, _rounds = batch_rounds(6, fails, Repeats(2, 3))
    assert (
        (batch.status, batch.kept) == (online.status, online.kept) == (ShrinkStatus.MINIMAL, (3,))
    )
    lucky = ddmin(6, lambda k, r: Trial(fails(set(k), r), 1), repeats=SINGLE)
    assert batch_rounds(6, fails, SINGLE)[0].kept == lucky.kept != (3,)


def test_a_batch_round_asks_only_what_the_budget_allows() -> None:
    from app.engine.shrink import DdminState, plan_round

    state = DdminState.start(8, SINGLE, max_calls=3)
    # Round 1: the original alone (1 call).
    assert plan_round(state, lambda k, r: {f"{k}/{r}"}) == [(tuple(range(8)), 0)]
    state.record(tuple(range(8)), 0, True)
    state.settle()
    # Round 2 would ask both halves (2 calls), and 1 + 2 = 3 fits exactly.
    assert plan_round(state, lambda k, r: {f"{k}/{r}"}) == [((0, 1, 2, 3), 0), ((4, 5, 6, 7), 0)]
    assert state.calls == 3
    state.record((0, 1, 2, 3), 0, False)
    state.record((4, 5, 6, 7), 0, True)
    state.settle()
    # Nothing more fits: the search stops with the smallest failing subset so far.
    assert plan_round(state, lambda k, r: {f"{k}/{r}"}) == []
    assert (state.status, state.items) == (ShrinkStatus.BUDGET_REACHED, (4, 5, 6, 7))
