"""Same-category substitution (LLMorph 137): swap names, cities, animals … consistently."""

from __future__ import annotations

from core.answers import AnswerType
from relations.base import Expectation, RelationKind, TransformContext
from relations.english.categories import CATEGORIES, CATEGORY_LOOKUP, CATEGORY_OF, category_key
from relations.english.nouns import pluralize
from relations.english.tokens import is_word, match_case, norm, protected_tokens, tokenize
from relations.registry import transform_relation
from relations.word.common import CATEGORY, ENTITY_FIELDS, changed_or_skip, entity_words

# Counting words decide the answer of a math or reasoning problem: never swapped there.
COUNTED_ANSWERS = frozenset({AnswerType.MATH, AnswerType.REASONING})


def _category_source_texts(ctx: TransformContext) -> list[str]:
    # A question about a context (QA): substitute what the question asks about (the answer
    # itself usually is not there); relation extraction: never the entities; elsewhere every
    # field, so fields stay consistent.
    if "question" in ctx.sample_fields:
        return [ctx.sample_fields["question"]]
    if ENTITY_FIELDS & set(ctx.sample_fields):
        return [ctx.sample_fields.get(ctx.field, "")]
    return [ctx.sample_fields[name] for name in sorted(ctx.sample_fields)] or [""]


def category_mapping(texts: list[str], ctx: TransformContext) -> dict[str, str]:
    """Singular member → replacement member, drawn from ``ctx.rng`` in a stable order."""
    entities = entity_words(ctx)
    found: list[str] = []
    present: set[str] = set()
    for text in texts:
        for token in tokenize(text):
            key = category_key(token) if is_word(token) else None
            if key is None or norm(token) in entities:
                continue
            category, member, _ = CATEGORY_LOOKUP[key]
            if category == "number_word" and ctx.answer_type in COUNTED_ANSWERS:
                continue
            present.add(member)
            if member not in found:
                found.append(member)
    limit = int(ctx.params.get("max_words", 3))
    chosen = ctx.rng.sample(found, min(limit, len(found))) if found else []
    mapping: dict[str, str] = {}
    for member in sorted(chosen, key=found.index):
        category = CATEGORY_OF[member]
        used = present | set(mapping.values())
        options = [m for m in CATEGORIES[category] if m not in used]
        if options:
            mapping[member] = ctx.rng.choice(options)
    return mapping


@transform_relation(
    id="word.same_category",
    name="Same-category substitution",
    category=CATEGORY,
    description=(
        "Swaps up to three names, cities, countries, days, months, colours, animals, fruits, "
        "vehicles, instruments, occupations, sports or number words for another member of the "
        "same category (our own lists), consistently across the sample's fields. The answer "
        "should not change."
    ),
    example="Emma flew from Paris to Tokyo on Monday with her dog.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions=(
        "a word from one of our category lists (QA: in the question; relation extraction: not "
        "an entity; math/reasoning: number words excluded)"
    ),
    ref="LLMorph 137",
    per_field=False,
    params={"max_words": 3},
)
def same_category(text: str, ctx: TransformContext) -> str:
    mapping = category_mapping(_category_source_texts(ctx), ctx)
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    entities = entity_words(ctx)
    for index, token in enumerate(tokens):
        if not is_word(token) or index in protected or norm(token) in entities:
            continue
        key = category_key(token)
        if key is None:
            continue
        _, member, plural = CATEGORY_LOOKUP[key]
        if member in mapping:
            replacement = pluralize(mapping[member]) if plural else mapping[member]
            tokens[index] = match_case(token, replacement)
    return changed_or_skip(text, "".join(tokens), "no word from our category lists to substitute")
