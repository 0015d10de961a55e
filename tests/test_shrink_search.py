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
