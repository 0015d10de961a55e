"""Whether a follow-up's answer changed: the oracles' answer equivalence, applied to the answer
pairs the store returns (``Store.answer_pairs``).

Every inconsistency rate — per model × relation, per model, the noise floor's, the breakdown by
sample metadata — and severity's ``answer_changed`` call :func:`answer_changed_of`, which asks
``relations.oracles.answers_equivalent`` under the task's answer type: "5.4 km" and "5.4" are one
answer, "Positive" and "positive" one label.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from core.answers import AnswerType
from core.case_filter import CaseFilter
from core.tasks import BUILTIN_TASKS
from relations.oracles import answers_equivalent

# Answer type of each task id; a task unknown here (e.g. a custom task since deleted) compares
# its answers as free text.
AnswerTypes = dict[str, AnswerType]


def answer_types(store=None) -> AnswerTypes:
    """The answer type of every built-in task and, given a store, of its custom tasks."""
    types = {task_id: task.answer_type for task_id, task in BUILTIN_TASKS.items()}
    rows = store.custom_task_rows() if store is not None else []
    for row in rows:
        try:
            types[row["id"]] = AnswerType(row["answer_type"])
        except ValueError:
            continue  # a row saved by an older version with a type no longer known
    return types


@lru_cache(maxsize=65536)
def _equivalent(answer_type: AnswerType, source: str, followup: str) -> bool:
    return answers_equivalent(answer_type, source, followup)


def answer_changed_of(types: AnswerTypes, task_id: str, source: Any, followup: Any) -> bool | None:
    """Whether the follow-up answer is a different answer from the source's (None without both)."""
    if source is None or followup is None:
        return None
    kind = types.get(task_id, AnswerType.TEXT)
    return not _equivalent(kind, str(source), str(followup))


def changed_counts(
    pairs: Iterable[dict[str, Any]], types: AnswerTypes, key: Callable[[dict[str, Any]], tuple]
) -> dict[tuple, int]:
    """Per ``key(pair)``: how many of the pairs' cases changed their answer."""
    counts: dict[tuple, int] = defaultdict(int)
    for pair in pairs:
        changed = answer_changed_of(
            types, pair["task_id"], pair["source_answer"], pair["followup_answer"]
        )
        if changed:
            counts[key(pair)] += pair["n"]
    return counts


def with_changed(
    store,
    rows: list[dict[str, Any]],
    flt: CaseFilter | None,
    by: tuple[str, ...],
    *,
    first_per_repeat: bool = False,
    meta_key: str | None = None,
    types: AnswerTypes | None = None,
) -> list[dict[str, Any]]:
    """``rows`` (grouped by ``by``, plus ``value`` with ``meta_key``) with ``n_changed`` set: the
    answered cases whose answer changed. ``flt`` and ``first_per_repeat`` must be those the rows
    were counted with, so ``n_changed`` ≤ ``n_answered``."""
    types = types if types is not None else answer_types(store)
    pairs = store.answer_pairs(flt, by=by, first_per_repeat=first_per_repeat, meta_key=meta_key)
    columns = (*by, "value") if meta_key else by
    return set_changed(rows, pairs, columns, types)


def set_changed(
    rows: list[dict[str, Any]],
    pairs: Iterable[dict[str, Any]],
    columns: tuple[str, ...],
    types: AnswerTypes,
) -> list[dict[str, Any]]:
    """``rows`` with ``n_changed`` set from ``Store.answer_pairs`` rows grouped by the same
    ``columns`` (see :func:`with_changed`)."""
    counts = changed_counts(pairs, types, lambda p: tuple(p[c] for c in columns))
    for row in rows:
        row["n_changed"] = counts.get(tuple(row[c] for c in columns), 0)
    return rows
