"""Tasks: a prompt template with named fields and a parser that extracts the answer and trace."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

from core.answers import NUMBER_RE, AnswerType, normalise_text, parse_number
from core.types import ParsedOutput


@dataclass(frozen=True)
class Task:
    """A prompt template (``{field}`` placeholders) plus how to read the answer."""

    id: str
    name: str
    template: str
    fields: tuple[str, ...]
    answer_type: AnswerType
    labels: tuple[str, ...] = ()
    system: str = ""
    perturbable: tuple[str, ...] | None = None  # fields relations transform (default: all)
    defaults: dict[str, float] = field(default_factory=dict)  # suggested sampling params
    builtin: bool = True

    @property
    def perturbable_fields(self) -> tuple[str, ...]:
        return self.perturbable or self.fields

    def render(self, fields: dict[str, str], preamble: str | None = None) -> str:
        missing = [f for f in self.fields if f not in fields]
        if missing:
            raise KeyError(f"task {self.id} needs field(s) {', '.join(missing)}")
        prompt = self.template.format_map({f: fields[f] for f in self.fields})
        return f"{preamble.rstrip()}\n\n{prompt}" if preamble else prompt

    def messages(self, fields: dict[str, str], preamble: str | None = None) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": self.system}] if self.system else []
        messages.append({"role": "user", "content": self.render(fields, preamble)})
        return messages

    def parse(self, text: str | None) -> ParsedOutput:
        if text is None or not text.strip():
            return ParsedOutput(answer=None, error="empty output")
        return PARSERS[self.answer_type](text, self)


# ---------------------------------------------------------------- answer extraction


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...}, with nested braces."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed{") - 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j].strip()
    return None


_UNKNOWN = re.compile(
    r"\b(unknown|cannot be determined|not (?:stated|mentioned|given|provided)|no answer|"
    r"does not say|doesn't say|not enough information|can ?not answer)\b",
    re.I,
)


def split_steps(text: str) -> tuple[str, ...]:
    lines = [line.strip() for line in text.splitlines()]
    steps = [line for line in lines if line and not re.fullmatch(r"[#*\-=_ ]+", line)]
    if len(steps) <= 1:
        steps = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    return tuple(steps)


# "Step 3:", "**Step 3.**", "step 3)" at the start of an output step: the model's numbering, which
# reference steps do not have, so it would only add a shared token to every cosine.
_STEP_NUMBER = re.compile(r"^(?:[*_#]+\s*)?step\s*\d+\s*[:.)\-–—]?\s*(?:[*_]+\s*)?", re.I)
# A "Final answer: …" line restates the answer; it is not a reasoning step.
_FINAL_ANSWER_LINE = re.compile(r"^\W*(?:the\s+)?final\s+answer\b", re.I)


def scoring_steps(trace: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The reasoning steps StepScore compares with the reference steps (SI paper §3.1, eq. 4):
    the output's steps without their "Step N:" numbering and without the "Final answer" line,
    since the reference steps have neither. Steps left empty are dropped."""
    steps = []
    for step in trace:
        if _FINAL_ANSWER_LINE.match(step):
            continue
        content = _STEP_NUMBER.sub("", step, count=1).strip()
        if content:
            steps.append(content)
    return tuple(steps)


def _parse_label(text: str, task: Task) -> ParsedOutput:
    lowered = text.lower()
    # The first label word that appears wins; stems catch 'entails', 'contradicts', 'positively'.
    stems = {label: label[: max(5, len(label) - 3)] for label in task.labels}
    found = []
    for label, stem in stems.items():
        match = re.search(rf"\b{re.escape(stem)}\w*", lowered)
        if match:
            found.append((match.start(), label))
    if not found:
        return ParsedOutput(answer=None, error=f"no label among {', '.join(task.labels)} found")
    return ParsedOutput(answer=min(found)[1], trace=split_steps(text))


def _parse_score(text: str, task: Task) -> ParsedOutput:
    value = parse_number(text)
    if value is None:
        return ParsedOutput(answer=None, error="no number found")
    return ParsedOutput(answer=repr(value), trace=split_steps(text))


def _parse_math(text: str, task: Task) -> ParsedOutput:
    answer = last_boxed(text)
    if answer is None:
        bold = re.findall(r"\*\*([^*\n]{1,40})\*\*", text)
        answer = bold[-1].strip() if bold else text.strip()
    return ParsedOutput(answer=answer, trace=split_steps(text))


def _parse_text(text: str, task: Task) -> ParsedOutput:
    first = next((line for line in text.strip().splitlines() if line.strip()), "")
    if _UNKNOWN.search(first):
        return ParsedOutput(answer="unknown", trace=split_steps(text))
    return ParsedOutput(answer=normalise_text(first) or None, trace=split_steps(text))


_FINAL = re.compile(r"(?:final answer|answer)\s*(?:is|:)?\s*(.+)", re.I)


def _parse_reasoning(text: str, task: Task) -> ParsedOutput:
    boxed = last_boxed(text)
    steps = split_steps(text)
    if boxed:
        return ParsedOutput(answer=boxed, trace=steps)
    finals = [m.group(1).strip(" *.") for m in _FINAL.finditer(text)]
    if finals and finals[-1]:
        return ParsedOutput(answer=finals[-1], trace=steps)
    numbers = NUMBER_RE.findall(text)
    if numbers:
        return ParsedOutput(answer=numbers[-1], trace=steps)
    return ParsedOutput(answer=steps[-1] if steps else None, trace=steps)


def _parse_number(text: str, task: Task) -> ParsedOutput:
    return _parse_score(text, task)


PARSERS = {
    AnswerType.LABEL: _parse_label,
    AnswerType.SCORE: _parse_score,
    AnswerType.NUMBER: _parse_number,
    AnswerType.MATH: _parse_math,
    AnswerType.TEXT: _parse_text,
    AnswerType.REASONING: _parse_reasoning,
}


# ---------------------------------------------------------------- the built-in tasks (our wording)

BUILTIN_TASKS: dict[str, Task] = {
    t.id: t
    for t in (
        Task(
            id="reasoning",
            name="Multi-step reasoning",
            template=(
                "Work through the problem below one step at a time, numbering each step. "
                "Finish with a line of the form 'Final answer: <answer>'.\n\nProblem: {problem}"
            ),
            fields=("problem",),
            answer_type=AnswerType.REASONING,
            defaults={"temperature": 0.7, "top_p": 0.95, "max_tokens": 1024},
        ),
        Task(
            id="math",
            name="Math (boxed answer)",
            template=(
                "Solve this math problem. Put only the final result inside \\boxed{{}}.\n\n{problem}"
            ),
            fields=("problem",),
            answer_type=AnswerType.MATH,
        ),
        Task(
            id="qa",
            name="Short-context question answering",
            template=(
                "Read the passage and answer the question in a few words. If the passage does not "
                "contain the answer, reply 'unknown'.\n\nPassage: {context}\nQuestion: {question}\n"
                "Answer:"
            ),
            fields=("context", "question"),
            answer_type=AnswerType.TEXT,
        ),
        Task(
            id="nli",
            name="Natural language inference",
            template=(
                "Decide how the hypothesis relates to the premise. Reply with one word: "
                "entailment, neutral or contradiction.\n\nPremise: {premise}\n"
                "Hypothesis: {hypothesis}\nRelation:"
            ),
            fields=("premise", "hypothesis"),
            answer_type=AnswerType.LABEL,
            labels=("entailment", "neutral", "contradiction"),
        ),
        Task(
            id="sentiment",
            name="Sentiment label",
            template=(
                "What is the sentiment of this text? Reply with one word: positive, negative or "
                "neutral.\n\nText: {text}\nSentiment:"
            ),
            fields=("text",),
            answer_type=AnswerType.LABEL,
            labels=("positive", "negative", "neutral"),
        ),
        Task(
            id="sentiment_score",
            name="Sentiment score",
            template=(
                "Rate how positive this text is on a scale from 0 (very negative) to 1 (very "
                "positive). Reply with the number only.\n\nText: {text}\nScore:"
            ),
            fields=("text",),
            answer_type=AnswerType.SCORE,
        ),
        Task(
            id="relation_extraction",
            name="Relation extraction",
            template=(
                "Name the relation that the text states between the two entities, in a short "
                "phrase, or reply 'no relation'.\n\nText: {text}\nHead entity: {head}\n"
                "Tail entity: {tail}\nRelation:"
            ),
            fields=("text", "head", "tail"),
            answer_type=AnswerType.TEXT,
            perturbable=("text",),
        ),
    )
}


def template_fields(template: str) -> tuple[str, ...]:
    """The ``{field}`` names of a custom template, in order of first appearance."""
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    return tuple(dict.fromkeys(names))


_PLAIN_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_template(template: str) -> tuple[str, ...]:
    """The fields of a custom template that uses only plain ``{field}`` placeholders.

    ``str.format`` would also accept ``{text.upper}``, ``{text[0]}``, ``{0}``, ``{text!r}`` and
    ``{text:>9}``: attribute and index lookups run on the inputs (and fail or leak at run time),
    so they are refused when the task is saved. ``{{`` and ``}}`` stay literal braces."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"template is not a valid format string: {exc}") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
        shown += "}"
        if not _PLAIN_FIELD.fullmatch(name) or spec or conversion:
            raise ValueError(
                f"template placeholder {shown} is not allowed: use plain {{field}} names "
                "(letters, digits and '_'; no dots, indexes, numbers, '!' or ':')"
            )
    return template_fields(template)


def custom_task(task_id: str, name: str, template: str, answer_type: str, labels=()) -> Task:
    """Validate and build a user-defined task. Raises ValueError with a readable message."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{1,40}", task_id):
        raise ValueError("task id: lower-case letters, digits and '_' (2–41 characters)")
    if task_id in BUILTIN_TASKS:
        raise ValueError(f"task id {task_id!r} is a built-in task")
    fields = check_template(template)
    if not fields:
        raise ValueError("template needs at least one {field} placeholder")
    answer = AnswerType(answer_type)
    labels = tuple(label.strip().lower() for label in labels if label.strip())
    if answer is AnswerType.LABEL and len(labels) < 2:
        raise ValueError("a label task needs at least two labels")
    return Task(
        id=task_id,
        name=name or task_id,
        template=template,
        fields=fields,
        answer_type=answer,
        labels=labels,
        builtin=False,
    )
