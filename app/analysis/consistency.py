"""Whether a follow-up's answer changed: the oracles' answer equivalence, applied once to each
distinct pair of answers in the database.

Every inconsistency rate — per model × relation, per model, the noise floor's, the breakdown by
sample metadata — counts ``n_changed`` in SQL from the :class:`SameAnswers` that
:func:`same_answers` returns, and severity's ``answer_changed`` calls :func:`answer_changed_of`;
both ask ``relations.oracles.answers_equivalent`` under the task's answer type: "5.4 km" and
"5.4" are one answer, "Positive" and "positive" one label.

``same_answers`` is memoised per database file and ``Store.data_version``: the distinct pairs
are read and judged once, not once per query (math answers go through math-verify, which is
slow), and any write that can add a pair changes the version.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from core.answers import AnswerType
from core.tasks import BUILTIN_TASKS
from relations.oracles import answers_equivalent
from storage.answer_verbs import SameAnswers

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


def same_answers(store, types: AnswerTypes) -> SameAnswers:
    """The database's answer pairs that differ as strings yet are one answer under their task's
    answer type (memoised: see the module docstring)."""
    if store.path == ":memory:":  # in-memory stores share one path: never memoised
        return _judge_pairs(store, types)
    key = (store.path, store.data_version(), tuple(sorted(types.items())))
    with _MEMO_LOCK:
        if key in _SAME_ANSWERS:
            return _SAME_ANSWERS[key]
    found = _judge_pairs(store, types)
    with _MEMO_LOCK:
        while len(_SAME_ANSWERS) >= _MEMO_SIZE:
            del _SAME_ANSWERS[next(iter(_SAME_ANSWERS))]  # the oldest entry
        _SAME_ANSWERS[key] = found
    return found


def _judge_pairs(store, types: AnswerTypes) -> SameAnswers:
    return SameAnswers(
        frozenset(
            (task_id, source, followup)
            for task_id, source, followup in store.differing_answer_pairs()
            if answers_equivalent(types.get(task_id, AnswerType.TEXT), source, followup)
        )
    )


# Databases (file, version, answer types) remembered: a few, for pages that switch databases.
# Streamlit runs sessions in threads, hence the lock.
_MEMO_SIZE = 8
_MEMO_LOCK = threading.Lock()
_SAME_ANSWERS: dict[tuple, SameAnswers] = {}
