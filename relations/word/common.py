"""What the word-level relations share: rates, protected entities, content words, SKIPs."""

from __future__ import annotations

from collections.abc import Callable

from relations.base import NotApplicable, TransformContext
from relations.english.lexicon import STOPWORDS
from relations.english.tokens import is_word, norm, protected_tokens, split_sentences, tokenize
from relations.english.verbs import NEGATED

CATEGORY = "word"
# The entity fields of a relation-extraction task: their words must survive in the text.
ENTITY_FIELDS = frozenset({"head", "tail"})


def rate_count(eligible: int, ctx: TransformContext, default: float) -> int:
    """How many of ``eligible`` items to change: the relation's ``rate`` param, at least one."""
    rate = float(ctx.params.get("rate", default))
    return min(eligible, max(1, round(rate * eligible)))


def entity_words(ctx: TransformContext) -> set[str]:
    """Words of the head/tail entities (relation extraction), which must survive in the text."""
    words: set[str] = set()
    for name in ENTITY_FIELDS & set(ctx.sample_fields) - {ctx.field}:
        words.update(norm(t) for t in tokenize(ctx.sample_fields[name]) if is_word(t))
    return words


def content_word_indices(text: str, tokens: list[str], ctx: TransformContext) -> list[int]:
    """Indices of content words: 3+ letters, not function words, not math, not RE entities."""
    protected = protected_tokens(text, tokens)
    entities = entity_words(ctx)
    return [
        i
        for i, token in enumerate(tokens)
        if is_word(token)
        and i not in protected
        and len(token) >= 3
        and norm(token) not in STOPWORDS
        and norm(token) not in NEGATED
        and norm(token) not in entities
    ]


def changed_or_skip(text: str, new_text: str, reason: str) -> str:
    """``new_text``, or a SKIP with ``reason`` when the rewrite changed nothing."""
    if new_text == text:
        raise NotApplicable(reason)
    return new_text


def convert_sentences(
    text: str,
    convert: Callable[[list[str]], str | None],
    *,
    nothing: str,
    unchanged: str,
) -> str:
    """Rewrite each sentence that ``convert`` can handle (None: keep it); math is never touched."""
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    pieces: list[str] = []
    position = 0
    converted = False
    for sentence in split_sentences(tokens):
        span = range(position, position + len(sentence))
        position += len(sentence)
        result = None if any(i in protected for i in span) else convert(sentence)
        converted = converted or result is not None
        pieces.append(result if result is not None else "".join(sentence))
    if not converted:
        raise NotApplicable(nothing)
    return changed_or_skip(text, "".join(pieces), unchanged)
