"""Which cells get the next round of inputs, when a run stops each cell at a precision target
(`--precision H`) and/or spends at most a budget of calls (`--budget N`).

A cell is one model × relation. Every cell walks the same seeded random order of the inputs, a
round at a time. After each round a cell whose anytime-valid confidence sequence
(core/confidence_sequence.py) has half-width ≤ H stops; the rest go on, until every cell has
stopped or the inputs run out. The sequence, unlike a fixed-n interval, stays valid at a stop
chosen by looking at it after every round.

Calls: an input's source call (per model) is shared by all the relations of that model, so it
is counted once, the first time any of them needs that input; a cell that reaches an input
another cell already sent pays only its follow-up calls. With a budget, each next observation
goes to the cell whose interval is widest per call its next observation costs, and the run
stops when no cell's next observation fits in what is left ("budget reached", not an error).
A round is planned at its full cost; once sent, ``settle`` counts the calls it really sent.

Pure bookkeeping: it plans and counts, the runner sends and reports outcomes back.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.confidence_sequence import DEFAULT_ALPHA, SequenceInterval, confidence_sequence

DEFAULT_ROUND_SIZE = 20

STOP_PRECISION = "done (every cell reached its precision)"
STOP_BUDGET = "done (budget reached)"
STOP_INPUTS = "done (inputs exhausted)"


@dataclass(frozen=True)
class Cell:
    """One model × relation; `follow_up_calls` is what one observation costs beyond the source
    call (1 per follow-up prompt, times the repeats)."""

    model: str
    relation: str
    follow_up_calls: int = 1


@dataclass(frozen=True)
class Round:
    """The inputs (indexes into the run's inputs) each cell is given next, and the calls that
    costs, each new source call counted once."""

    assignments: Mapping[Cell, tuple[int, ...]]
    calls: int


@dataclass
class _CellState:
    position: int = 0  # how far along the shared order this cell has been given inputs
    violations: int = 0
    observed: int = 0  # observations with a verdict (a SKIP gives none)


class RoundScheduler:
    """Plans rounds for `cells` over `n_inputs` inputs; see the module docstring."""

    def __init__(
        self,
        cells: Sequence[Cell],
        n_inputs: int,
        *,
        precision: float | None = None,
        budget: int | None = None,
        round_size: int = DEFAULT_ROUND_SIZE,
        seed: int = 0,
        source_calls: int = 1,
        alpha: float = DEFAULT_ALPHA,
    ) -> None:
        if precision is not None and not 0 < precision < 0.5:
            raise ValueError(f"precision must be between 0 and 0.5, not {precision}")
        if budget is not None and budget < 1:
            raise ValueError(f"budget must be at least 1 call, not {budget}")
        if round_size < 1:
            raise ValueError(f"round size must be at least 1, not {round_size}")
        self.cells = list(cells)
        self.precision = precision
        self.budget = budget
        self.round_size = round_size
        self.source_calls = source_calls
        self.alpha = alpha
        self.order = list(range(n_inputs))
        random.Random(seed).shuffle(self.order)
        self.calls_used = 0
        self.stop_reason: str | None = None
        self._states = {cell: _CellState() for cell in self.cells}
        self._sources_sent: set[tuple[str, int]] = set()

    def interval(self, cell: Cell) -> SequenceInterval:
        state = self._states[cell]
        return confidence_sequence(state.violations, state.observed, self.alpha)

    def record(self, cell: Cell, violated: bool | None) -> None:
        """One outcome of `cell` from the last round: True/False, or None for no verdict."""
        if violated is None:
            return
        state = self._states[cell]
        state.observed += 1
        state.violations += bool(violated)

    def settle(self, planned: Round, calls_sent: int) -> None:
        """Count the calls the round actually sent in place of those it planned: a SKIP, a
        case an earlier run settled and a call the cache answers send nothing, so the budget
        counts only calls sent (a round never sends more than it planned)."""
        self.calls_used += calls_sent - planned.calls

    def reached_precision(self, cell: Cell) -> bool:
        return self.precision is not None and self.interval(cell).half_width <= self.precision

    def active_cells(self) -> list[Cell]:
        """Cells that still want inputs: not at the precision target, inputs left."""
        return [
            cell
            for cell in self.cells
            if self._states[cell].position < len(self.order) and not self.reached_precision(cell)
        ]

    def next_observation_cost(self, cell: Cell, planned: set[tuple[str, int]] = frozenset()):
        """Calls the cell's next input costs: its follow-ups, plus the source call when neither
        an earlier round nor this one already sends that input to the cell's model."""
        input_index = self.order[self._states[cell].position]
        source_known = (cell.model, input_index) in self._sources_sent | planned
        return cell.follow_up_calls + (0 if source_known else self.source_calls)

    def next_round(self) -> Round | None:
        """The next round, or None when the run is over (`stop_reason` says why)."""
        active = self.active_cells()
        if not active:
            self.stop_reason = self._finished_reason()
            return None
        budgeted = self.budget is not None
        planned = self._budgeted_round(active) if budgeted else self._whole_round(active)
        if not planned.assignments:
            self.stop_reason = STOP_BUDGET
            return None
        return planned

    def _finished_reason(self) -> str:
        if self.precision is not None and all(self.reached_precision(c) for c in self.cells):
            return STOP_PRECISION
        return STOP_INPUTS

    def _give(self, cell: Cell, assignments: dict, sources: set) -> int:
        """Assign the cell its next input; the calls that costs."""
        cost = self.next_observation_cost(cell, sources)
        state = self._states[cell]
        input_index = self.order[state.position]
        state.position += 1
        sources.add((cell.model, input_index))
        assignments.setdefault(cell, []).append(input_index)
        return cost

    def _whole_round(self, active: list[Cell]) -> Round:
        """Without a budget every active cell gets the next `round_size` inputs of its walk."""
        assignments: dict[Cell, list[int]] = {}
        sources: set[tuple[str, int]] = set()
        calls = 0
        for cell in active:
            for _ in range(self.round_size):
                if self._states[cell].position >= len(self.order):
                    break
                calls += self._give(cell, assignments, sources)
        return self._commit(assignments, sources, calls)

    def _budgeted_round(self, active: list[Cell]) -> Round:
        """`round_size` inputs per active cell in all, one at a time to the cell with the widest
        projected interval per call (one cell may take them all), while the budget lasts. Within a round the outcomes are not
        known yet, so a cell's width is projected to shrink like 1/sqrt(n) with what it was
        given (the rate of a sequence's narrowing, log factors aside)."""
        assignments: dict[Cell, list[int]] = {}
        sources: set[tuple[str, int]] = set()
        calls = 0
        left = self.budget - self.calls_used
        given = dict.fromkeys(active, 0)
        for _ in range(self.round_size * len(active)):
            choice = self._widest_per_call(given, sources, left - calls)
            if choice is None:
                break
            calls += self._give(choice, assignments, sources)
            given[choice] += 1
        return self._commit(assignments, sources, calls)

    def _widest_per_call(self, given: dict[Cell, int], sources: set, calls_left: int):
        best, best_priority = None, -1.0
        for cell, count in given.items():
            if self._states[cell].position >= len(self.order):
                continue
            cost = self.next_observation_cost(cell, sources)
            if cost > calls_left:
                continue
            observed = max(self._states[cell].observed, 1)
            projected = self.interval(cell).half_width * math.sqrt(observed / (observed + count))
            if projected / cost > best_priority:
                best, best_priority = cell, projected / cost
        return best

    def _commit(self, assignments: dict, sources: set, calls: int) -> Round:
        self._sources_sent |= sources
        self.calls_used += calls
        return Round({cell: tuple(inputs) for cell, inputs in assignments.items()}, calls)
