"""Task-specific relations (LLMorph catalogue): NLI 77–80, relation extraction 141/142, sentiment
150/151/154.

NLI relations use the transformation endpoint to generate a sentence with a known entailment
relation to the source, and carry their own checks because they only hold when the *source* output
is an entailment (LLMorph verifies the source output before judging). Relation-extraction relations
swap the head and tail entities; whether the relation the model named is symmetric decides which of
the two applies. Sentiment relations are rule-based intensifiers: the follow-up score must be at
least as extreme as the source score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.types import OracleResult, Sample, Verdict
from relations.base import (
    CheckInput,
    Expectation,
    FollowUp,
    NotApplicable,
    Relation,
    RelationKind,
    TransformContext,
)
from relations.registry import register

CATEGORY = "task-specific"
NLI_TASKS = frozenset({"nli"})
RE_TASKS = frozenset({"relation_extraction"})
SENTIMENT_TASKS = frozenset({"sentiment_score", "sentiment"})

ENTAILMENT = "entailment"
CONTRADICTION = "contradiction"


# ---------------------------------------------------------------- shared helpers


def _label(answer: str | None) -> str | None:
    return answer.strip().lower() if answer else None


def unparseable(oracle: str, ci: CheckInput, companions: Sequence[str] = ()) -> OracleResult | None:
    """An ERROR result when the source, the follow-up or a named companion has no answer."""
    missing = [
        name for name, out in (("source", ci.source), ("follow-up", ci.followup)) if not out.answer
    ]
    for name in companions:
        output = ci.companions.get(name)
        if output is None or not output.answer:
            missing.append(name)
    if not missing:
        return None
    return OracleResult(Verdict.ERROR, oracle, reason=f"no parsed answer for: {', '.join(missing)}")


def clean_generated_sentence(text: str) -> str:
    """First usable line of an LLM reply, without labels or quotes, ending with punctuation."""
    for line in (text or "").splitlines():
        line = re.sub(
            r"^\s*(?:sentence|output|answer|rewritten text|result)\s*:\s*", "", line, flags=re.I
        )
        line = line.strip().strip("\"'“”‘’`").strip()
        if line:
            return line if line[-1] in ".!?" else line + "."
    raise NotApplicable("the transformation endpoint returned no usable sentence")


# ---------------------------------------------------------------- NLI 77–80 (LLM-prompted)

_PRESERVE = (
    "Write exactly one short, plain English sentence and nothing else: no quotes, no label, "
    "no explanation. Keep the same people, objects, places and numbers; do not invent new facts."
)


def _entailed_sentence(source: str, ctx: TransformContext, how: str) -> str:
    """Ask the transformation endpoint for a sentence that ``source`` logically implies."""
    rewrite = ctx.require_rewriter()
    prompt = f"{how}\n{_PRESERVE}\n\nSentence: {source.strip()}\nImplied sentence:"
    return clean_generated_sentence(rewrite(prompt))


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
    """77: append to the premise a sentence implied by the hypothesis."""
    hypothesis = _needs(ctx, "hypothesis")
    if not text.strip():
        raise NotApplicable("the premise is empty")
    return _join(text, _entailed_sentence(hypothesis, ctx, _RESTATE))


def extend_hypothesis(text: str, ctx: TransformContext) -> str:
    """78: append to the hypothesis a sentence implied by the premise."""
    premise = _needs(ctx, "premise")
    if not text.strip():
        raise NotApplicable("the hypothesis is empty")
    return _join(text, _entailed_sentence(premise, ctx, _RESTATE))


def weaken_hypothesis(text: str, ctx: TransformContext) -> str:
    """79: replace the hypothesis with a sentence the hypothesis implies."""
    if not text.strip():
        raise NotApplicable("the hypothesis is empty")
    return _entailed_sentence(text, ctx, _RESTATE)


def weaken_premise(text: str, ctx: TransformContext) -> str:
    """80: replace the premise with a sentence the premise implies."""
    if not text.strip():
        raise NotApplicable("the premise is empty")
    return _entailed_sentence(text, ctx, _RESTATE)


def _needs_entailment_source(oracle: str, ci: CheckInput) -> OracleResult | None:
    source = _label(ci.source.answer)
    if source != ENTAILMENT:
        return OracleResult(
            Verdict.SKIP,
            oracle,
            reason=f"precondition not met: source label is {source!r}, not entailment",
            details={"source": source, "followup": _label(ci.followup.answer)},
        )
    return None


def entailment_kept(ci: CheckInput) -> OracleResult:
    """77/78: when the source is an entailment, the follow-up must be an entailment too."""
    oracle = "equal_label"
    error = unparseable(oracle, ci)
    if error:
        return error
    skip = _needs_entailment_source(oracle, ci)
    if skip:
        return skip
    followup = _label(ci.followup.answer)
    details = {"source": ENTAILMENT, "followup": followup}
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


def no_polar_flip_from_entailment(ci: CheckInput) -> OracleResult:
    """79: ``no_polar_flip`` judged only when the source is an entailment.

    A weaker hypothesis may well be entailed by a premise that contradicts the original one, so a
    contradiction → entailment change is not a violation here; the check needs an entailed source.
    """
    error = unparseable("no_polar_flip", ci)
    if error:
        return error
    return _needs_entailment_source("no_polar_flip", ci) or no_polar_flip(ci)


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
        "Generate a sentence implied by the hypothesis and append it to the premise. Adding a "
        "fact the hypothesis already implies cannot break an entailment.",
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
        no_polar_flip_from_entailment,
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
        "premise may lose the entailment, but it cannot turn an entailment into a contradiction "
        "or the reverse: fails only on an entailment ↔ contradiction flip.",
        "Needs a transformation endpoint; any source label.",
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
            tasks=NLI_TASKS,
            fields=(_field,),
            preconditions=_pre,
            ref=f"LLMorph {_ref}",
            similarity_floor=0.3,
            # A weakened sentence may legitimately drop details (a number, a name): only the
            # similarity floor guards 79/80; 77/78 keep the whole source, so the check is moot.
            params={"example_fields": dict(_NLI_EXAMPLE), "preserve_content": _ref < 79},
        )
    )


# ---------------------------------------------------------------- relation extraction 141/142

# Word stems of relations that read the same in both directions (X r Y ⇔ Y r X). Our own list.
SYMMETRIC_STEMS = (
    "sibling",
    "brother",
    "sister",
    "spouse",
    "married",
    "marriage",
    "partner",
    "cousin",
    "twin",
    "friend",
    "colleague",
    "coworker",
    "co-worker",
    "neighbo",
    "border",
    "adjacent",
    "teammate",
    "classmate",
    "ally",
    "allied",
    "alliance",
    "rival",
    "competitor",
    "opponent",
    "collaborat",
    "related",
    "same as",
    "equivalent",
    "synonym",
    "diplomatic",
)
# Stems that mark a direction even when a symmetric stem is also present ("half-sister of" is
# symmetric, "brother-in-law" is fine, but "sister company of" / "parent" are directional).
DIRECTIONAL_STEMS = ("parent", "subsidiary", "company", "founder", "owner", "member of")
_NO_RELATION = re.compile(r"^(?:no(?:ne)?(?: relation(?:ship)?)?|unknown|n/?a|not related)$")


def _relation_phrase(answer: str | None) -> str:
    return re.sub(r"\s+", " ", (answer or "").strip().lower())


def is_no_relation(answer: str | None) -> bool:
    """True for 'no relation', 'none', 'unknown' … (already normalised by the task parser)."""
    return bool(_NO_RELATION.match(_relation_phrase(answer).strip(" .")))


def is_symmetric_relation(answer: str | None) -> bool:
    """True when the relation phrase names a relation that holds both ways (our stem list)."""
    phrase = _relation_phrase(answer)
    if not phrase or is_no_relation(phrase):
        return False
    if any(stem in phrase for stem in DIRECTIONAL_STEMS):
        return False
    words = re.findall(r"[a-z][a-z-]*", phrase)
    for stem in SYMMETRIC_STEMS:
        if " " in stem:
            if stem in phrase:
                return True
        elif any(word.startswith(stem) for word in words):
            return True
    return False


def _swap_entities(symmetric: bool):
    def build(
        sample: Sample, task_id: str, task_fields: Sequence[str], ctx: TransformContext
    ) -> list[FollowUp]:
        head = (sample.fields.get("head") or "").strip()
        tail = (sample.fields.get("tail") or "").strip()
        if not head or not tail:
            raise NotApplicable("the sample needs both a head and a tail entity")
        if head.lower() == tail.lower():
            raise NotApplicable("head and tail are the same entity: swapping changes nothing")
        declared = sample.meta.get("symmetric") if sample.meta else None
        if declared is not None and bool(declared) != symmetric:
            kind = "symmetric" if declared else "asymmetric"
            raise NotApplicable(f"precondition not met: the sample declares a {kind} relation")
        fields = dict(sample.fields)
        fields["head"], fields["tail"] = sample.fields["tail"], sample.fields["head"]
        return [FollowUp(fields=fields, target="head+tail", note="head and tail swapped")]

    return build


def _similarity(ci: CheckInput, source: str, followup: str) -> float:
    if _relation_phrase(source) == _relation_phrase(followup):
        return 1.0
    return float(ci.similarity(source, followup))


def same_relation_when_symmetric(ci: CheckInput) -> OracleResult:
    """141: for a symmetric relation the swapped pair must get an equivalent relation phrase."""
    oracle = "semantic_similar"
    error = unparseable(oracle, ci)
    if error:
        return error
    source, followup = ci.source.answer or "", ci.followup.answer or ""
    details = {"source": source, "followup": followup}
    if not is_symmetric_relation(source):
        return OracleResult(
            Verdict.SKIP,
            oracle,
            reason=f"precondition not met: {source!r} is not a known symmetric relation",
            details=details,
        )
    threshold = ci.threshold if ci.threshold is not None else 0.8
    value = _similarity(ci, source, followup)
    details["threshold"] = threshold
    if value >= threshold:
        return OracleResult(
            Verdict.PASS, oracle, value, f"same relation (cos {value:.2f})", details
        )
    reason = f"relation changed after swapping a symmetric pair (cos {value:.2f} < {threshold})"
    return OracleResult(Verdict.FAIL, oracle, value, reason, details)


def different_relation_when_asymmetric(ci: CheckInput) -> OracleResult:
    """142: for a directional relation the swapped pair must not get the same relation phrase."""
    oracle = "semantic_different"
    error = unparseable(oracle, ci)
    if error:
        return error
    source, followup = ci.source.answer or "", ci.followup.answer or ""
    details = {"source": source, "followup": followup}
    if is_no_relation(source):
        reason = "precondition not met: the source output names no relation"
        return OracleResult(Verdict.SKIP, oracle, reason=reason, details=details)
    if is_symmetric_relation(source):
        reason = f"precondition not met: {source!r} is a symmetric relation"
        return OracleResult(Verdict.SKIP, oracle, reason=reason, details=details)
    threshold = ci.threshold if ci.threshold is not None else 0.9
    value = _similarity(ci, source, followup)
    details["threshold"] = threshold
    if value >= threshold:
        reason = f"same directed relation after swapping (cos {value:.2f} ≥ {threshold})"
        return OracleResult(Verdict.FAIL, oracle, value, reason, details)
    return OracleResult(Verdict.PASS, oracle, value, f"relation changed (cos {value:.2f})", details)


_RE_EXAMPLE = {
    "text": "Maria Lopez and her husband Daniel Reyes opened a bakery in Seville in 2015.",
    "head": "Maria Lopez",
    "tail": "Daniel Reyes",
}
_RE_ASYMMETRIC_EXAMPLE = {
    "text": "The novel Blue Harbour was written by Ines Moreau and published in 1998.",
    "head": "Ines Moreau",
    "tail": "Blue Harbour",
}

register(
    Relation(
        id="re.swap_symmetric",
        name="Swap symmetric entities",
        family="re",
        category=CATEGORY,
        description=(
            "Swap the head and tail entities. For a symmetric relation (spouse, sibling, borders, "
            "partner …) the model should name the same relation."
        ),
        example=_RE_EXAMPLE["text"],
        kind=RelationKind.RULE,
        expectation=Expectation.EQUIVALENT,
        build=_swap_entities(symmetric=True),
        check=same_relation_when_symmetric,
        tasks=RE_TASKS,
        per_field=False,
        preconditions=(
            "Only for symmetric relations: the source output must name a relation from the "
            "symmetric list (otherwise SKIP); a sample with meta symmetric=false is skipped. "
            "Head and tail must differ."
        ),
        ref="LLMorph 141",
        threshold=0.8,
        params={"example_fields": dict(_RE_EXAMPLE)},
    )
)
register(
    Relation(
        id="re.swap_asymmetric",
        name="Swap asymmetric entities",
        family="re",
        category=CATEGORY,
        description=(
            "Swap the head and tail entities. For a directional relation (author of, capital of, "
            "parent of …) the model should no longer name the same relation."
        ),
        example=_RE_ASYMMETRIC_EXAMPLE["text"],
        kind=RelationKind.RULE,
        expectation=Expectation.DIFFERENT,
        build=_swap_entities(symmetric=False),
        check=different_relation_when_asymmetric,
        tasks=RE_TASKS,
        per_field=False,
        preconditions=(
            "Only for asymmetric relations: SKIP when the source output is 'no relation' or a "
            "symmetric relation; a sample with meta symmetric=true is skipped. Head and tail "
            "must differ."
        ),
        ref="LLMorph 142",
        threshold=0.9,
        params={"example_fields": dict(_RE_ASYMMETRIC_EXAMPLE)},
    )
)


# ---------------------------------------------------------------- sentiment 150/151/154 (rules)


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Sentiment-bearing adjectives (our own list). Non-gradable ("extreme") ones take "absolutely"-type
# intensifiers; gradable ones take "really"-type intensifiers, so the follow-up stays idiomatic.
GRADABLE_ADJECTIVES = _wordset(
    """good nice funny clever smart impressive engaging entertaining fresh
    strong solid pleasant happy glad enjoyable charming lovely beautiful sweet warm witty
    satisfying helpful friendly tasty comfortable reliable fast smooth elegant memorable
    compelling thoughtful gripping interesting exciting powerful bad poor boring dull bland weak
    disappointing annoying awkward clumsy messy slow tedious predictable silly sad unpleasant rude
    cheap mediocre forgettable painful tiresome shallow confusing frustrating ugly stupid lazy
    noisy dirty uncomfortable unreliable overpriced"""
)
EXTREME_ADJECTIVES = _wordset(
    """amazing brilliant fantastic superb wonderful perfect outstanding stunning gorgeous
    delightful excellent great incredible magnificent flawless terrible awful horrible dreadful
    unbearable pathetic useless pointless atrocious abysmal disastrous lousy"""
)
ADJECTIVES = GRADABLE_ADJECTIVES | EXTREME_ADJECTIVES
GRADABLE_EMPHASIS = ("really", "very", "extremely", "incredibly", "genuinely")
EXTREME_EMPHASIS = ("absolutely", "truly", "utterly", "simply")
# Other words that carry the sentiment of a text (verbs and nouns), for capitalisation.
SENTIMENT_WORDS = ADJECTIVES | _wordset(
    """love loved loves loving adore adored adores enjoy enjoyed enjoys hate hated hates loathe
    loathed dislike disliked dislikes recommend recommended masterpiece gem triumph delight
    disaster mess waste failure flop nightmare"""
)
# A word right before the adjective that already intensifies or negates it: emphasis would
# either be redundant or soften a negation ("not good" → "not really good").
_BLOCKERS = frozenset(
    set(GRADABLE_EMPHASIS)
    | set(EXTREME_EMPHASIS)
    | {"not", "never", "no", "hardly", "barely", "so", "too", "quite", "pretty", "rather", "most"}
    | {"more", "less", "least", "fairly", "somewhat", "slightly", "nor", "neither", "without"}
)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "mr", "mrs", "ms", "dr", "vs", "st", "no", "prof"})
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def exclamation(text: str, ctx: TransformContext) -> str:
    """150: every sentence-ending '.' becomes '!' (decimals, ellipses, abbreviations kept)."""
    out: list[str] = []
    last = 0
    changed = False
    for match in re.finditer(r"(?<!\.)\.(?!\.)(?=[\"'”’)\]]*(?:\s|$))", text):
        before = text[: match.start()]
        word = re.search(r"([A-Za-z.]+)$", before)
        token = word.group(1).lower() if word else ""
        if token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
            continue
        out.append(text[last : match.start()] + "!")
        last = match.end()
        changed = True
    if not changed:
        raise NotApplicable("no sentence-ending '.' to replace")
    out.append(text[last:])
    return "".join(out)


def _sentence_start(text: str, index: int) -> bool:
    i = index
    while i > 0 and text[i - 1] in " \t\r\n\"'“‘(":
        i -= 1
    return i == 0 or text[i - 1] in ".!?"


def _previous_word(text: str, index: int) -> str:
    words = re.findall(r"[A-Za-z'’]+", text[max(0, index - 40) : index])
    return words[-1].lower() if words else ""


def emphasis(text: str, ctx: TransformContext) -> str:
    """151: put an intensifier before each sentiment adjective not already intensified/negated."""
    out: list[str] = []
    last = 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        lower = word.lower()
        if lower not in ADJECTIVES:
            continue
        previous = _previous_word(text, match.start())
        if previous in _BLOCKERS or previous.endswith(("n't", "n’t")):
            continue
        choices = EXTREME_EMPHASIS if lower in EXTREME_ADJECTIVES else GRADABLE_EMPHASIS
        emphatic = choices[ctx.rng.randrange(len(choices))]
        if word.isupper() and len(word) > 1:
            emphatic, replacement = emphatic.upper(), word
        elif word[0].isupper() and _sentence_start(text, match.start()):
            emphatic, replacement = emphatic.capitalize(), word[0].lower() + word[1:]
        else:
            replacement = word
        out.append(text[last : match.start()] + f"{emphatic} {replacement}")
        last = match.end()
    if not out:
        raise NotApplicable("no sentiment adjective to emphasise")
    out.append(text[last:])
    return "".join(out)


def capitalise_keywords(text: str, ctx: TransformContext) -> str:
    """154: write the sentiment-bearing words in capitals."""

    def upper(match: re.Match[str]) -> str:
        word = match.group(0)
        return word.upper() if word.lower() in SENTIMENT_WORDS else word

    result = _WORD.sub(upper, text)
    if result == text:
        raise NotApplicable("no sentiment keyword to capitalise (or all already in capitals)")
    return result


_SENTIMENT_NOTE = (
    "Sentiment score: the follow-up must be at least as far from neutral (0.5) as the source, on "
    "the same side; sentiment label: the label must not change."
)

for _id, _ref, _name, _fn, _description, _pre, _example in (
    (
        "sentiment.exclamation",
        150,
        "Replace '.' with '!'",
        exclamation,
        "End sentences with '!' instead of '.': the text reads more emphatic, so the sentiment "
        "should be at least as strong.",
        "The text must contain a sentence-ending period (decimals, '...' and abbreviations are "
        "left alone).",
        "The soundtrack is wonderful. The acting felt a bit stiff at times.",
    ),
    (
        "sentiment.emphasis",
        151,
        "Add emphasis words",
        emphasis,
        "Insert an intensifier from our list ('really', 'extremely' for gradable adjectives; "
        "'absolutely', 'truly' for extreme ones) before each sentiment adjective.",
        "The text must contain a sentiment adjective from our list that is not already "
        "intensified or negated.",
        "The service was slow and the soup was bland, but the dessert was amazing.",
    ),
    (
        "sentiment.capitalise_keywords",
        154,
        "Capitalise key words",
        capitalise_keywords,
        "Write the sentiment-bearing words (adjectives, 'love', 'hate', 'disaster' …) in capitals, "
        "like shouting them.",
        "The text must contain a sentiment word from our list that is not already in capitals.",
        "I loved the first half, but the ending was a boring mess.",
    ),
):
    register(
        Relation(
            id=_id,
            name=_name,
            family="sentiment",
            category=CATEGORY,
            description=_description,
            example=_example,
            kind=RelationKind.RULE,
            expectation=Expectation.AT_LEAST_AS_EXTREME,
            transform=_fn,
            tasks=SENTIMENT_TASKS,
            fields=("text",),
            preconditions=f"{_pre} {_SENTIMENT_NOTE}",
            ref=f"LLMorph {_ref}",
        )
    )
