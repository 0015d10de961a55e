"""Keyword relations (LLMorph 9, 25, 34): insert random words, replace or remove keywords."""

from __future__ import annotations

from relations.base import (
    CLAIM_FIELDS,
    Expectation,
    NotApplicable,
    RelationKind,
    TransformContext,
)
from relations.english.tokens import (
    SENTENCE_END,
    capitalize_first,
    is_word,
    match_case,
    next_word,
    norm,
    protected_tokens,
    remove_tokens,
    tokenize,
    word_list,
)
from relations.registry import transform_relation
from relations.word.common import CATEGORY, content_word_indices, rate_count

# Our neutral filler words (concrete nouns, no sentiment, no negation, no numbers).
RANDOM_WORDS = word_list(
    """
    lantern pebble meadow violin ribbon kettle harbor compass blanket ladder orchard saddle
    chimney parcel puzzle magnet feather tunnel basket candle marble helmet pillow anchor bucket
    carpet ginger jacket mirror napkin pencil planet quilt rocket spoon tablet timber umbrella
    velvet wagon yogurt zipper canyon button cabin island pepper lumber cotton copper barrel
    bottle
    """
)


@transform_relation(
    id="word.insert_random",
    name="Insert random words",
    category=CATEGORY,
    description=(
        "Inserts a random neutral noun from our own list after 10% of the words (at least one). "
        "In NLI only the premise gets them: words added to the hypothesis change its claim. "
        "The answer should not change."
    ),
    example="The museum closes early on public holidays.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="the text has at least one word outside math",
    ref="LLMorph 9",
    kept_fields=CLAIM_FIELDS,
    params={"rate": 0.1},
)
def insert_random(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    positions = [i for i, t in enumerate(tokens) if is_word(t) and i not in protected]
    if not positions:
        raise NotApplicable("no word to insert after")
    chosen = set(ctx.rng.sample(positions, rate_count(len(positions), ctx, 0.1)))
    pieces = []
    for index, token in enumerate(tokens):
        pieces.append(token)
        if index in chosen:
            pieces.append(" " + ctx.rng.choice(RANDOM_WORDS))
    return "".join(pieces)


@transform_relation(
    id="word.replace_keywords",
    name="Replace keywords with random words",
    category=CATEGORY,
    description=(
        "Replaces half of the content words (at least one) with random nouns from our own list. "
        "In relation extraction the two entities are kept. The answer should change."
    ),
    example="Maria repaired the old bicycle in her garage.",
    kind=RelationKind.RULE,
    expectation=Expectation.DIFFERENT,
    preconditions="a content word (3+ letters, not a function word or an RE entity)",
    ref="LLMorph 25",
    params={"rate": 0.5},
)
def replace_keywords(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    candidates = content_word_indices(text, tokens, ctx)
    if not candidates:
        raise NotApplicable("no content word to replace")
    chosen = ctx.rng.sample(candidates, rate_count(len(candidates), ctx, 0.5))
    for index in sorted(chosen):
        options = [w for w in RANDOM_WORDS if w != norm(tokens[index])]
        tokens[index] = match_case(tokens[index], ctx.rng.choice(options))
    return "".join(tokens)


@transform_relation(
    id="word.remove_keywords",
    name="Remove keywords",
    category=CATEGORY,
    description=(
        "Deletes half of the content words (at least one) with their spacing. In relation "
        "extraction the two entities are kept. The answer should change."
    ),
    example="Maria repaired the old bicycle in her garage.",
    kind=RelationKind.RULE,
    expectation=Expectation.DIFFERENT,
    preconditions="a content word (3+ letters, not a function word or an RE entity)",
    ref="LLMorph 34",
    params={"rate": 0.5},
)
def remove_keywords(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    candidates = content_word_indices(text, tokens, ctx)
    if not candidates:
        raise NotApplicable("no content word to remove")
    chosen = set(ctx.rng.sample(candidates, rate_count(len(candidates), ctx, 0.5)))
    for index in sorted(chosen):
        if tokens[index][:1].isupper() and _starts_sentence(tokens, index):
            # The next surviving word now starts the sentence.
            following = next_word(tokens, index)
            while following is not None and following in chosen:
                following = next_word(tokens, following)
            if following is not None:
                tokens[following] = capitalize_first(tokens[following])
    return "".join(remove_tokens(tokens, chosen))


def _starts_sentence(tokens: list[str], index: int) -> bool:
    for j in range(index - 1, -1, -1):
        if not tokens[j].isspace():
            return tokens[j] in SENTENCE_END
    return True
