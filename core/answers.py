"""Answer types and the readers every layer shares: how a task's answer is typed and compared.

The task parsers (``core.tasks``) and the oracles (``relations.oracles``) both read answers with
these functions, so a number or a free-text answer means the same thing to both.
"""

from __future__ import annotations

import re
import string
from enum import StrEnum
from typing import Protocol


class AnswerType(StrEnum):
    LABEL = "label"  # one of a fixed set of words
    SCORE = "score"  # a number in [0, 1]
    NUMBER = "number"
    MATH = "math"  # \boxed{} answer, math-verify equivalence
    TEXT = "text"  # short free text
    REASONING = "reasoning"  # steps then a final answer


class TaskProfile(Protocol):
    """What a relation may know about a task: enough to decide whether it applies.

    ``core.tasks.Task`` (built-in and custom tasks alike) satisfies it.
    """

    @property
    def id(self) -> str: ...

    @property
    def answer_type(self) -> AnswerType: ...

    @property
    def fields(self) -> tuple[str, ...]: ...


NUMBER_PATTERN = r"[-+−]?(?:\d+(?:[.,]\d+)*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
NUMBER_RE = re.compile(NUMBER_PATTERN)


def parse_number(text: str) -> float | None:
    """A robust number reader: '.8', '0.8/1', 'score: 0.75', '-3', '1,234.5', '80%'."""
    cleaned = text.replace("−", "-")
    fraction = re.search(rf"({NUMBER_PATTERN})\s*/\s*({NUMBER_PATTERN})", cleaned)
    if fraction:
        numerator, denominator = (_to_float(g) for g in fraction.groups())
        if numerator is not None and denominator not in (None, 0.0):
            return numerator / denominator
    percent = re.search(rf"({NUMBER_PATTERN})\s*%", cleaned)
    if percent:
        value = _to_float(percent.group(1))
        return None if value is None else value / 100
    match = NUMBER_RE.search(cleaned)
    return _to_float(match.group(0)) if match else None


def _to_float(token: str) -> float | None:
    token = token.replace("−", "-")
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", token):
        token = token.replace(",", "")
    token = token.replace(",", ".") if token.count(",") == 1 and "." not in token else token
    try:
        return float(token)
    except ValueError:
        return None


def normalise_text(text: str) -> str:
    """A free-text answer in comparable form: lower case, no 'the answer is', punctuation, articles."""
    text = text.strip().lower()
    text = re.sub(r"^(the\s+)?(final\s+)?answer\s*(is|:)\s*", "", text)
    text = text.translate(str.maketrans("", "", string.punctuation.replace("-", "")))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return re.sub(r"\s+", " ", text).strip()
