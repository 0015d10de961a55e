"""NLI relations (LLMorph 77–80), prompted through the transformation endpoint.

Each generates a sentence with a known entailment relation to the source. All four hold only when
the *source* output is an entailment: LLMorph's catalogue verifies that on the source output before
judging, and so do we (``ENTAILED_SOURCE``, checked by ``relations.oracles.evaluate``: any other
source label is SKIP with reason ``precondition: …``).

Directions, as in LLMorph's prompts: 77 appends to the premise a sentence *from which the
hypothesis follows* (a more specific premise; P ∧ S ⇒ H when P ⇒ H); 78 appends to the hypothesis
a sentence the premise implies; 79 and 80 replace the hypothesis / premise by a sentence it
implies. The appended sentence of 77 and 78 is checked on its own, since the field it joins keeps
all of its source text and would pass any comparison with it: 77's sentence must keep the
hypothesis' numbers and names (it has to imply it), 78's may bring no number or name the premise
lacks (it has to follow from it).
"""

from __future__ import annotations

import re

from core.types import OracleResult, Verdict
from relations.base import (
    CheckInput,
    Expectation,
    NotApplicable,
    Relation,
    RelationKind,
    Rewriter,
    TransformContext,
)
from relations.candidates import MakeCandidate, best_of_k
from relations.llm_prompts import clean_rewrite
from relations.oracles import ENTAILED_SOURCE, unparseable
from relations.registry import register
from relations.validity import INVALID, dropped_content

CATEGORY = "task-specific"
NLI_TASKS = frozenset({"nli"})

ENTAILMENT = "entailment"
CONTRADICTION = "contradiction"


def _label(answer: str | None) -> str | None:
    return answer.strip().lower() if answer else None


# Lines of a reply that are not a sentence of content: a step or list item ("Step 1: …", "2.",
# "- "), a labelled line ("Note: …", "Hypothesis: …"), an instruction ("Read the problem."), or
# talk about the task ("This sentence implies …"). Appended to a premise, such a line is no
# premise sentence, and a case judged on it measures nothing.
_LIST_ITEM = re.compile(r"^\s*(?:(?:step|part|item)\s*\d+\b|\d+\s*[.):]\s|[-*•]\s|\(\w\)\s)", re.I)
_LABELLED = re.compile(r"^\s*[A-Za-z]+(?:\s+[A-Za-z]+){0,2}\s*:\s")
_INSTRUCTION = re.compile(
    r"^\s*(?:read|write|give|translate|rewrite|paraphrase|consider|note|remember|let's|let us|"
    r"make sure|solve|answer|explain|describe|list|think|imagine|suppose|try|use|find)\b",
    re.I,
)
_TASK_TALK = re.compile(
    r"\b(?:sentences?|hypothes[ie]s|premises?|paraphrase|rephrase|rewrit\w*|implie[sd]|entails?|"
    r"entailment|the (?:text|input|task))\b",
    re.I,
)


def statement_problem(line: str) -> str | None:
    """Why ``line`` is not one plain declarative sentence of content, or None when it is."""
    if _LIST_ITEM.match(line):
        return "a step or list item"
    if _LABELLED.match(line):
        return "a labelled line"
    if line.rstrip().endswith("?"):
        return "a question"
    if _INSTRUCTION.match(line):
        return "an instruction"
    if _TASK_TALK.search(line):
        return "talk about the task"
    if len(re.findall(r"[A-Za-z]+", line)) < 3:
        return "fewer than 3 words"
    return None


def clean_generated_sentence(text: str) -> str:
    """First usable line of an LLM reply, without labels or quotes, ending with punctuation.

    It must be a plain statement (``statement_problem``): anything else is SKIPped as an invalid
    follow-up, naming the line and what it is."""
    # The shared cleaning first: "Here is a sentence:" openers, fences, trailing notes.
    for line in (clean_rewrite(text) or "").splitlines():
        line = re.sub(
            r"^\s*(?:sentence|output|answer|rewritten text|result)\s*:\s*", "", line, flags=re.I
        )
        line = line.strip().strip("\"'“”‘’`").strip()
        if line:
            problem = statement_problem(line)
            if problem:
                raise NotApplicable(
                    f"{INVALID}: the generated line is {problem}, not a statement: {line[:80]!r}"
                )
            return line if line[-1] in ".!?" else line + "."
    raise NotApplicable("the transformation endpoint returned no usable sentence")


_PRESERVE = (
    "Write exactly one short, plain English sentence and nothing else: no quotes, no label, "
    "no explanation. Keep the same people, objects, places and numbers; do not invent new facts."
)


def _entailed_sentence(source: str, rewrite: Rewriter, how: str) -> str:
    """Ask the transformation endpoint for a sentence that ``source`` logically implies."""
    prompt = f"{how}\n{_PRESERVE}\n\nSentence: {source.strip()}\nImplied sentence:"
    return clean_generated_sentence(rewrite(prompt))


_SPECIFY = (
    "Give a sentence from which the sentence below certainly follows: describe one more specific "
    "situation in which it is true (for 'I was outside today.': 'I was walking the dog this "
    "morning.')."
)
_KEEP = (
    "Write exactly one short, plain English sentence and nothing else: no quotes, no label, "
    "no explanation. Keep every person, object, place and number of the sentence below."
)


def _implying_sentence(source: str, rewrite: Rewriter) -> str:
    """Ask the transformation endpoint for a sentence that logically implies ``source``."""
    prompt = f"{_SPECIFY}\n{_KEEP}\n\nSentence: {source.strip()}\nMore specific sentence:"
    return clean_generated_sentence(rewrite(prompt))


def _refuse_if_lost(origin: str, sentence: str, what: str) -> None:
    """SKIP (the validity gate's reason) when ``sentence`` lacks a number or name of ``origin``."""
    lost = dropped_content(origin, sentence)
    if lost:
        raise NotApplicable(f"{INVALID}: the generated sentence {what} {', '.join(lost[:5])}")


_RESTATE = (
    "Give a sentence that is certainly true whenever the sentence below is true: restate one "
    "part of it, or state it more generally."
)


def _needs(ctx: TransformContext, field: str) -> str:
    value = (ctx.sample_fields.get(field) or "").strip()
    if not value:
        raise NotApplicable(f"the sample has no {field}")
    return value


def _join(first: str, second: str) -> str:
    return f"{first.rstrip()} {second.strip()}"


def extend_premise(text: str, ctx: TransformContext) -> str:
    """77: append to the premise a sentence from which the hypothesis follows (LLMorph's
    "generate a premise based on the hypothesis")."""
    hypothesis = _needs(ctx, "hypothesis")
    if not text.strip():
        raise NotApplicable("the premise is empty")

    def make(rewrite: Rewriter) -> str:
        sentence = _implying_sentence(hypothesis, rewrite)
        _refuse_if_lost(hypothesis, sentence, "drops the hypothesis'")
        return _join(text, sentence)

    return _best_of_k(ctx, text, make)


def extend_hypothesis(text: str, ctx: TransformContext) -> str:
    """78: append to the hypothesis a sentence implied by the premise."""
    premise = _needs(ctx, "premise")
    if not text.strip():
        raise NotApplicable("the hypothesis is empty")

    def make(rewrite: Rewriter) -> str:
        sentence = _entailed_sentence(premise, rewrite, _RESTATE)
        # What the sentence names but the premise does not is invented, not implied.
        _refuse_if_lost(sentence, premise, "adds what the premise lacks:")
        return _join(text, sentence)

    return _best_of_k(ctx, text, make)


def weaken_hypothesis(text: str, ctx: TransformContext) -> str:
    """79: replace the hypothesis with a sentence the hypothesis implies."""
    if not text.strip():
        raise NotApplicable("the hypothesis is empty")
    return _best_of_k(ctx, text, lambda rewrite: _entailed_sentence(text, rewrite, _RESTATE))


def weaken_premise(text: str, ctx: TransformContext) -> str:
    """80: replace the premise with a sentence the premise implies."""
    if not text.strip():
        raise NotApplicable("the premise is empty")
    return _best_of_k(ctx, text, lambda rewrite: _entailed_sentence(text, rewrite, _RESTATE))


def _best_of_k(ctx: TransformContext, source: str, make: MakeCandidate) -> str:
    """The generated sentence through best of k, like every LLM-prompted relation: each candidate
    is cleaned and checked by ``make``, then gated; the most similar valid one is kept."""
    ctx.require_rewriter()
    return best_of_k(ctx, source, make)


def entailment_kept(ci: CheckInput) -> OracleResult:
    """77/78: the source is an entailment (the precondition); the follow-up must be one too."""
    oracle = "equal_label"
    error = unparseable(oracle, ci)
    if error:
        return error
    followup = _label(ci.followup.answer)
    details = {"source": _label(ci.source.answer), "followup": followup}
    if followup == ENTAILMENT:
        return OracleResult(Verdict.PASS, oracle, 1.0, "entailment kept", details)
    return OracleResult(Verdict.FAIL, oracle, 0.0, f"entailment became {followup}", details)


def no_polar_flip(ci: CheckInput) -> OracleResult:
    """FAIL only when the label flips between entailment and contradiction (either way)."""
    oracle = "no_polar_flip"
    error = unparseable(oracle, ci)
    if error:
        return error
    source, followup = _label(ci.source.answer), _label(ci.followup.answer)
    details = {"source": source, "followup": followup}
    if {source, followup} == {ENTAILMENT, CONTRADICTION}:
        return OracleResult(
            Verdict.FAIL, oracle, 0.0, f"label flipped: {source} → {followup}", details
        )
    return OracleResult(
        Verdict.PASS, oracle, 1.0, f"no polar flip ({source} → {followup})", details
    )


_NLI_PREMISE = "A woman in a red coat is walking her two dogs along the beach at sunset."
_NLI_HYPOTHESIS = "A woman is outside with her dogs."
_NLI_EXAMPLE = {"premise": _NLI_PREMISE, "hypothesis": _NLI_HYPOTHESIS}

for _id, _ref, _name, _field, _fn, _expect, _check, _description, _pre in (
    (
        "nli.extend_premise",
        77,
        "Add a hypothesis consequence to the premise",
        "premise",
        extend_premise,
        Expectation.EQUIVALENT,
        entailment_kept,
        "Generate a sentence from which the hypothesis follows (a more specific situation) and "
        "append it to the premise. Adding a premise cannot break an entailment.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
    (
        "nli.extend_hypothesis",
        78,
        "Add a premise consequence to the hypothesis",
        "hypothesis",
        extend_hypothesis,
        Expectation.EQUIVALENT,
        entailment_kept,
        "Generate a sentence implied by the premise and append it to the hypothesis. If the "
        "premise entails both parts, it entails their conjunction.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
    (
        "nli.weaken_hypothesis",
        79,
        "Replace the hypothesis with one it implies",
        "hypothesis",
        weaken_hypothesis,
        Expectation.NO_POLAR_FLIP,
        no_polar_flip,
        "Generate a sentence implied by the hypothesis and use it as the new hypothesis. A premise "
        "that entails the hypothesis cannot contradict its consequence: fails only on an "
        "entailment ↔ contradiction flip.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
    (
        "nli.weaken_premise",
        80,
        "Replace the premise with one it implies",
        "premise",
        weaken_premise,
        Expectation.NO_POLAR_FLIP,
        no_polar_flip,
        "Generate a sentence implied by the premise and use it as the new premise. A weaker "
        "premise may lose the entailment, but it cannot turn it into a contradiction: fails "
        "only when the entailment becomes a contradiction.",
        "The source output must be 'entailment' (otherwise SKIP); needs a transformation endpoint.",
    ),
):
    register(
        Relation(
            id=_id,
            name=_name,
            family="nli",
            category=CATEGORY,
            description=_description,
            example=_NLI_EXAMPLE[_field],
            kind=RelationKind.LLM,
            expectation=_expect,
            transform=_fn,
            check=_check,
            source_precondition=ENTAILED_SOURCE,
            tasks=NLI_TASKS,
            fields=(_field,),
            preconditions=_pre,
            ref=f"LLMorph {_ref}",
            similarity_floor=0.3,
            # A weakened sentence may legitimately drop details (a number, a name): only the
            # similarity floor guards 79/80. 77/78 keep the whole source field, so the gate's
            # content check is moot there; their appended sentence is checked when it is made.
            params={"example_fields": dict(_NLI_EXAMPLE), "preserve_content": _ref < 79},
        )
    )
