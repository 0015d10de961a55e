"""Grammar relations (LLMorph 57, 136, 149, 152, 155) on the rule-based English engine:
negation, tense, singular ↔ plural, active ↔ passive voice and declarative ↔ question."""

from __future__ import annotations

from core.answers import AnswerType
from relations.base import (
    NLI_FIELDS,
    Expectation,
    NotApplicable,
    RelationKind,
    TaskGate,
    TransformContext,
)
from relations.english.negation import NEGATORS, negate_sentence
from relations.english.number import noun_phrases, to_plural, to_singular
from relations.english.questions import declarative_to_question, question_to_declarative
from relations.english.tense import (
    sentence_to_past,
    sentence_to_present,
    tense_counts,
    time_marker,
)
from relations.english.tokens import norm, protected_tokens, split_sentences, tokenize
from relations.english.verbs import forms_of
from relations.english.voice import active_to_passive, passive_to_active
from relations.registry import transform_relation
from relations.word.common import CATEGORY, changed_or_skip, convert_sentences

# As in LLMorph, tense and voice changes are not applied to sentiment scores.
NOT_FOR_SCORES = TaskGate(answer_types=frozenset(AnswerType) - {AnswerType.SCORE})
# LLMorph leaves NLI (a premise and its hypothesis) out; counts decide math and reasoning answers.
NOT_FOR_COUNTS_OR_NLI = TaskGate(
    answer_types=frozenset(AnswerType) - {AnswerType.MATH, AnswerType.REASONING},
    unless_fields=NLI_FIELDS,
)


@transform_relation(
    id="word.negation",
    name="Negation",
    category=CATEGORY,
    description=(
        "Negates the main verb of the first sentence that has one: 'is' → 'is not', 'can' → "
        "'cannot', 'sells' → 'does not sell', 'Why did …?' → 'Why didn't …?'; an existing "
        "negation ('not', 'never') is removed instead. A sentence with 'no', 'nobody', "
        "'rarely' … is left alone. The answer should change."
    ),
    example="The bakery sells fresh bread every morning.",
    kind=RelationKind.RULE,
    expectation=Expectation.DIFFERENT,
    preconditions=(
        "a sentence without 'no'/'nobody'/'rarely' … that has an auxiliary, a form of "
        "be/have/do or a verb (lemminflect's forms)"
    ),
    ref="LLMorph 152",
)
def negation(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    position = 0
    reason = "no verb to negate"
    for sentence in split_sentences(tokens):
        indices = range(position, position + len(sentence))
        position += len(sentence)
        if any(i in protected for i in indices):
            continue
        negators = [t for t in sentence if norm(t) in NEGATORS]
        if negators:  # "John never has no money" is no negation of it
            reason = (
                f"the sentence already negates with '{negators[0]}'; a second negation breaks it"
            )
            continue
        negated = negate_sentence(list(sentence))
        if negated is not None:
            before = "".join(tokens[: indices.start])
            after = "".join(tokens[indices.stop :])
            return changed_or_skip(text, before + "".join(negated) + after, "nothing to negate")
    raise NotApplicable(reason)


@transform_relation(
    id="word.tense",
    name="Tense change",
    category=CATEGORY,
    description=(
        "Moves the finite verbs between present and past (whichever the text mostly uses turns "
        "into the other): 'walks' → 'walked', 'is' → 'was', 'went' → 'goes'. Modal verbs stay. "
        "Verbs outside our list take lemminflect's forms ('examined' → 'examines'). A sentence "
        "with a time word of its tense ('yesterday', 'last', 'tomorrow') stays as it is. The "
        "answer should not change."
    ),
    example="She walks to the station and buys a newspaper.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a present- or past-tense verb (be/have/do, our verb list or lemminflect's)",
    ref="LLMorph 155",
    gate=NOT_FOR_SCORES,
)
def tense(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    sentences = split_sentences(tokens)
    past, present = tense_counts(sentences)
    if past == present == 0:
        raise NotApplicable("no present- or past-tense verb we know")
    to_past = past <= present
    convert = sentence_to_past if to_past else sentence_to_present
    pieces: list[str] = []
    position = 0
    kept: list[str] = []  # why a sentence stays as it is
    for sentence in sentences:
        span = range(position, position + len(sentence))
        position += len(sentence)
        changed = list(sentence)
        marker = time_marker(changed, to_past)
        if marker is not None:
            kept.append(f"'{marker}' ties a sentence to its tense")
        elif not any(i in protected for i in span):
            convert(changed)
        pieces.extend(changed)
    why = "no verb whose tense we can change" + (f" ({kept[0]})" if kept else "")
    return changed_or_skip(text, "".join(pieces), why)


@transform_relation(
    id="word.number",
    name="Singular ↔ plural",
    category=CATEGORY,
    description=(
        "Turns singular noun phrases plural ('the cat sits' → 'the cats sit', 'a dog' → "
        "'dogs'), or, when there is none, plural ones singular, with the verb that follows. "
        "The answer should not change."
    ),
    example="The cat sleeps on the sofa.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a determiner + noun phrase whose number can change",
    ref="LLMorph 149",
    gate=NOT_FOR_COUNTS_OR_NLI,
)
def number(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    phrases = noun_phrases(tokens, protected_tokens(text, tokens))
    if not to_plural(tokens, phrases):
        to_singular(tokens, phrases)
    return changed_or_skip(text, "".join(tokens), "no noun phrase whose number we can change")


@transform_relation(
    id="word.voice",
    name="Active ↔ passive voice",
    category=CATEGORY,
    description=(
        "Rewrites simple subject–verb–object sentences in the passive ('The committee approved "
        "the budget.' → 'The budget was approved by the committee.') and simple passives with "
        "'by' in the active. The answer should not change."
    ),
    example="The committee approved the new budget.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a plain sentence 'subject + known transitive verb + object …' or its passive",
    ref="LLMorph 136",
    gate=NOT_FOR_SCORES,
)
def voice(text: str, ctx: TransformContext) -> str:
    return convert_sentences(
        text,
        lambda sentence: passive_to_active(sentence) or active_to_passive(sentence),
        nothing="no simple subject–verb–object sentence (or passive) found",
        unchanged="voice change left the text unchanged",
    )


def _has_clauses(sentence: list[str]) -> bool:
    # "Was the soup cold, the bread was stale, …?" asks about one clause and garbles the rest:
    # only sentences whose comma parts have no verb of their own change form ("Acme, a bank").
    # An inner period ("Dr. Lee") would be lost when the phrase is rebuilt.
    if "." in sentence[:-2]:
        return True
    breaks = [i for i, token in enumerate(sentence) if token in {",", ";"}]
    return bool(breaks) and any(forms_of(token) for token in sentence[breaks[0] :])


@transform_relation(
    id="word.question_form",
    name="Declarative ↔ interrogative",
    category=CATEGORY,
    description=(
        "Turns plain statements into yes/no questions ('Sarah works for Acme.' → 'Does Sarah "
        "work for Acme?') and yes/no questions into statements. As in LLMorph, only for "
        "relation extraction, where the outputs should stay similar (similarity ≥ 0.4)."
    ),
    example="Marie Curie worked at the University of Paris.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a plain statement with a known verb, or a yes/no question",
    ref="LLMorph 57",
    tasks=frozenset(["relation_extraction"]),
    threshold=0.4,
)
def question_form(text: str, ctx: TransformContext) -> str:
    return convert_sentences(
        text,
        lambda sentence: (
            None
            if _has_clauses(sentence)
            else question_to_declarative(sentence) or declarative_to_question(sentence)
        ),
        nothing="no plain statement or yes/no question to convert",
        unchanged="question form left the text unchanged",
    )
