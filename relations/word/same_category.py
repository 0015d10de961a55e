"""Same-category substitution (LLMorph 137): swap names, cities, animals … consistently."""

from __future__ import annotations

from core.answers import AnswerType
from relations.base import Expectation, NotApplicable, RelationKind, TransformContext
from relations.english.categories import (
    CATEGORIES,
    CATEGORY_LOOKUP,
    CATEGORY_OF,
    PROPER_CATEGORIES,
    category_key,
)
from relations.english.lexicon import ADJECTIVES, DETERMINERS
from relations.english.nouns import is_noun_candidate, pluralize
from relations.english.protect import NUMBER_WORD_LIST
from relations.english.tokens import (
    is_word,
    match_case,
    next_word,
    norm,
    prev_word,
    protected_tokens,
    tokenize,
    word_list,
)
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


# Words that make a sentence state a fact about its places: "Seoul is the capital of South
# Korea" is false with another city, whatever the task; such places are never swapped.
PLACE_FACT_WORDS = frozenset(
    word_list(
        "capital capitals largest biggest smallest oldest located border borders population "
        "president king queen currency founded official national"
    )
)
PLACES = frozenset(["city", "country"])
# Before a common noun of our lists: what makes it a noun here ("the bear", not "bear it").
_NOUN_MARKERS = (
    DETERMINERS
    | ADJECTIVES
    | NUMBER_WORD_LIST
    | frozenset(word_list("many some few several no any"))
)


# Nouns whose count their word fixes: "two halves" is no "eleven halves".
COUNTED_PARTS = frozenset(word_list("half halves third thirds quarter quarters twins pair pairs"))


def _blocked(tokens: list[str], index: int, category: str, plural: bool, facts: bool) -> bool:
    """Whether this occurrence of a category member must stay: a place in a sentence of place
    facts, a number that counts parts of a whole, or a common noun that is not one here — a
    verb ("bear it"), or the modifier of a compound ("train station" → "car station")."""
    if category in PLACES:
        return facts
    if category == "number_word":
        after = next_word(tokens, index)
        return after is not None and norm(tokens[after]) in COUNTED_PARTS
    if category in PROPER_CATEGORIES:
        return False
    after = next_word(tokens, index)
    if after is not None and is_noun_candidate(tokens[after]):
        return True
    before = prev_word(tokens, index)
    marked = before is not None and norm(tokens[before]) in _NOUN_MARKERS
    return not (plural or marked)


def _members(text: str, ctx: TransformContext) -> tuple[list[str], set[str]]:
    """The category members of ``text`` in order, and those of them that must stay."""
    entities = entity_words(ctx)
    tokens = tokenize(text)
    facts = any(norm(t) in PLACE_FACT_WORDS for t in tokens)
    found: list[str] = []
    blocked: set[str] = set()
    for index, token in enumerate(tokens):
        key = category_key(token) if is_word(token) else None
        if key is None or norm(token) in entities:
            continue
        category, member, plural = CATEGORY_LOOKUP[key]
        if category == "number_word" and ctx.answer_type in COUNTED_ANSWERS:
            continue
        found.append(member)
        if _blocked(tokens, index, category, plural, facts):
            blocked.add(member)
    return found, blocked


def category_mapping(texts: list[str], ctx: TransformContext) -> dict[str, str]:
    """Singular member → replacement member, drawn from ``ctx.rng`` in a stable order."""
    found: list[str] = []
    present: set[str] = set()
    blocked: set[str] = set()
    for text in texts:
        members, stay = _members(text, ctx)
        present.update(members)
        blocked |= stay
        found += [m for m in members if m not in found]
    found = [member for member in found if member not in blocked]
    if not found and blocked:
        raise NotApplicable(
            f"the words of our category lists here must stay ({', '.join(sorted(blocked))}): "
            "a place in a statement of facts about places, a count of parts, or a noun used as a "
            "verb or modifier"
        )
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
        "same group (our own lists: a bus for a train, a doctor for a nurse), consistently "
        "across the sample's fields. Places in a statement of facts about places ('Seoul is "
        "the capital of …'), nouns that modify another ('train station') and counts of parts "
        "('two halves') stay. The answer should not change."
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
