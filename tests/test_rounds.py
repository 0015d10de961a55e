"""The round scheduler of adaptive runs (app/engine/rounds.py): precision stops, shared source
calls, the seeded order, and the budget. The confidence sequence it stops on is the uniform-prior
beta-binomial mixture, whose all-pass half-width has a closed form (tests/test_confidence_sequence.py):
after n passes the interval is [0, 1 - (20 (n + 1))^(-1/n)]."""

from __future__ import annotations

import pytest

from app.engine.rounds import (
    STOP_BUDGET,
    STOP_INPUTS,
    STOP_PRECISION,
    Cell,
    RoundScheduler,
)

ALWAYS_PASSES = Cell("m", "passes")
HALF_VIOLATES = Cell("m", "half")


def _outcome(cell: Cell, input_index: int) -> bool:
    return cell is HALF_VIOLATES and input_index % 2 == 0


def _play(scheduler: RoundScheduler, max_rounds: int = 1000) -> list:
    rounds = []
    while len(rounds) < max_rounds:
        planned = scheduler.next_round()
        if planned is None:
            break
        rounds.append(planned)
        for cell, inputs in planned.assignments.items():
            for input_index in inputs:
                scheduler.record(cell, _outcome(cell, input_index))
    return rounds


def test_a_cell_at_its_precision_stops_and_the_other_goes_on():
    # All passes: n = 20 gives high = 1 - 420^(-1/20) = 1 - e^(-0.30201) = 0.2607, half 0.130 > 0.1;
    # n = 40 gives high = 1 - 820^(-1/40) = 1 - e^(-0.16773) = 0.1544, half 0.077 ≤ 0.1: it stops.
    scheduler = RoundScheduler([ALWAYS_PASSES, HALF_VIOLATES], 400, precision=0.1, seed=3)
    rounds = _play(scheduler, max_rounds=3)
    assert [set(r.assignments) for r in rounds] == [
        {ALWAYS_PASSES, HALF_VIOLATES},
        {ALWAYS_PASSES, HALF_VIOLATES},
        {HALF_VIOLATES},
    ]
    assert scheduler.interval(ALWAYS_PASSES).half_width == pytest.approx(0.0772, abs=1e-4)
    # Rounds 1-2: 20 source calls shared by both relations + 2 × 20 follow-ups = 60 each;
    # round 3: 20 new sources + 20 follow-ups of the remaining cell = 40.
    assert [r.calls for r in rounds] == [60, 60, 40]
    assert scheduler.calls_used == 160


def test_every_cell_walks_the_same_seeded_order():
    scheduler = RoundScheduler([ALWAYS_PASSES, HALF_VIOLATES], 100, precision=0.1, seed=7)
    first = scheduler.next_round()
    assert first.assignments[ALWAYS_PASSES] == first.assignments[HALF_VIOLATES]
    assert list(first.assignments[ALWAYS_PASSES]) == scheduler.order[:20]
    assert sorted(scheduler.order) == list(range(100))
    assert RoundScheduler([ALWAYS_PASSES], 100, seed=7).order == scheduler.order
    assert RoundScheduler([ALWAYS_PASSES], 100, seed=8).order != scheduler.order


def test_source_calls_are_per_model():
    other_model = Cell("m2", "passes")
    scheduler = RoundScheduler([ALWAYS_PASSES, HALF_VIOLATES, other_model], 50, precision=0.1)
    # model m: 20 sources + 40 follow-ups; model m2: 20 sources + 20 follow-ups.
    assert scheduler.next_round().calls == 100


def test_the_run_ends_when_the_inputs_run_out():
    scheduler = RoundScheduler([HALF_VIOLATES], 30, precision=0.01)
    rounds = _play(scheduler)
    assert [len(r.assignments[HALF_VIOLATES]) for r in rounds] == [20, 10]
    assert scheduler.stop_reason == STOP_INPUTS


def test_the_run_ends_when_every_cell_reached_its_precision():
    scheduler = RoundScheduler([ALWAYS_PASSES], 1000, precision=0.1)
    assert len(_play(scheduler)) == 2  # n = 40, as above
    assert scheduler.stop_reason == STOP_PRECISION


def test_a_cell_reuses_the_sources_another_cell_sent_and_the_cheaper_call_goes_first():
    cheap, dear = Cell("m", "cheap", follow_up_calls=1), Cell("m", "dear", follow_up_calls=3)
    scheduler = RoundScheduler([cheap, dear], 100, budget=10, round_size=2)
    planned = scheduler.next_round()
    # A round of 2 × 2 cells = 4 observations, both cells at half-width 0.5.
    # 1. cheap 0.5 / (1 + 1 source) = 0.25 beats dear 0.5 / 4 → cheap, input 0 (2 calls).
    # 2. cheap projected 0.5·√(1/2) / 2 = 0.177 beats dear, whose input 0 now costs 3 (source
    #    planned): 0.5 / 3 = 0.167 → cheap, input 1 (2 calls, 4 in all).
    # 3. cheap 0.5·√(1/3) / 2 = 0.144 < dear 0.167 → dear, input 0 (3 calls, 7).
    # 4. dear 0.5·√(1/2) / 3 (input 1 sourced) = 0.118 < cheap 0.144 → cheap, input 2 (2, 9).
    # Then 1 call is left: cheap's next costs 2, dear's 3: the budget is reached.
    order = scheduler.order
    assert planned.assignments == {cheap: (order[0], order[1], order[2]), dear: (order[0],)}
    assert planned.calls == 9
    assert scheduler.next_round() is None
    assert scheduler.stop_reason == STOP_BUDGET


def test_a_budget_is_never_exceeded_and_goes_to_the_widest_interval():
    scheduler = RoundScheduler([ALWAYS_PASSES, HALF_VIOLATES], 4000, budget=500)
    _play(scheduler)
    assert scheduler.stop_reason == STOP_BUDGET
    assert 499 <= scheduler.calls_used <= 500  # a follow-up alone (1 call) fits in what is left
    passes, half = (scheduler.interval(c).n for c in (ALWAYS_PASSES, HALF_VIOLATES))
    assert half > 2 * passes  # the rate near 0.5 has the wider interval at any n


def test_precision_and_budget_together_stop_a_narrow_cell_and_spend_on_the_other():
    scheduler = RoundScheduler([ALWAYS_PASSES, HALF_VIOLATES], 4000, precision=0.1, budget=600)
    _play(scheduler)
    assert scheduler.interval(ALWAYS_PASSES).n <= 60
    assert scheduler.reached_precision(ALWAYS_PASSES)
    assert scheduler.calls_used <= 600


def test_a_cell_without_verdicts_keeps_its_interval():
    scheduler = RoundScheduler([HALF_VIOLATES], 10)
    scheduler.record(HALF_VIOLATES, None)
    assert scheduler.interval(HALF_VIOLATES).n == 0


@pytest.mark.parametrize(
    "options", [{"precision": 0.0}, {"precision": 0.5}, {"budget": 0}, {"round_size": 0}]
)
def test_refuses_settings_no_run_could_use(options):
    with pytest.raises(ValueError):
        RoundScheduler([HALF_VIOLATES], 10, **options)


def test_the_budget_counts_only_the_calls_a_round_sent():
    """A round is planned at full cost; SKIPs and cached calls send nothing, so once settled
    the budget counts what was sent and the calls left go to later rounds."""
    scheduler = RoundScheduler([HALF_VIOLATES], 100, budget=30, round_size=5)
    first = scheduler.next_round()
    # 5 inputs × (1 source + 1 follow-up) = 10 calls planned.
    assert first.calls == scheduler.calls_used == 10
    scheduler.settle(first, calls_sent=4)  # 3 SKIPs: 2 inputs sent, 2 × 2 calls
    assert scheduler.calls_used == 4
    spent = [first.calls]
    while (planned := scheduler.next_round()) is not None:
        spent.append(planned.calls)
        scheduler.settle(planned, planned.calls)
    # 30 - 4 = 26 calls left: two more rounds of 10, then 6 calls = 3 inputs of 2.
    assert spent == [10, 10, 10, 6]
    assert scheduler.calls_used == 30
    assert scheduler.stop_reason == STOP_BUDGET
