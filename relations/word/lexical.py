"""Word relations through WordNet (LLMorph 8, 10): synonym and antonym replacement."""

from __future__ import annotations

import re
from collections.abc import Iterable

from relations.base import Expectation, NotApplicable, RelationKind, TransformContext
from relations.english.protect import is_protected_word
from relations.english.tokens import match_case, tokenize
from relations.english.word_role import role_in_context
from relations.registry import transform_relation
from relations.word.common import CATEGORY, changed_or_skip, content_word_indices, rate_count


def _wordnet_pos(word: str) -> str | None:
    from relations.wordnet import pos_candidates

    candidates = pos_candidates(word)
    return candidates[0] if candidates else None


def _single_words(options: Iterable[str], word: str) -> list[str]:
    return sorted(
        {o for o in options if re.fullmatch(r"[a-z]+(?:-[a-z]+)?", o) and o.lower() != word.lower()}
    )


def synonym_options(word: str, pos: str | None = None) -> list[str]:
    """Single-word WordNet synonyms of ``word`` in its most frequent part of speech and sense.

    With ``pos`` (the part of speech the word plays in its sentence), only synonyms whose own
    most frequent part of speech is the same, so the sentence keeps its grammar.
    """
    from relations.wordnet import is_lemma, pos_candidates, synonyms

    pos = pos or _wordnet_pos(word)
    if pos is None or not is_lemma(word, pos):
        return []  # an inflected form: its lemma's synonyms would not fit the sentence
    # Only the most frequent sense: later senses drift ("good" → "full").
    options = _single_words(synonyms(word, pos, senses=1), word)
    return [o for o in options if pos_candidates(o)[:1] == [pos]]


@transform_relation(
    id="word.synonym",
    name="Synonym replacement (WordNet)",
    category=CATEGORY,
    description=(
        "Replaces 30% of the content words that have one (at least one) with a WordNet synonym "
        "from their most frequent sense. Inflected words are left alone. The answer should not "
        "change."
    ),
    example="The quick student answered the difficult question correctly.",
    kind=RelationKind.LIBRARY,
    expectation=Expectation.EQUIVALENT,
    preconditions="a content word in its dictionary form with a WordNet synonym",
    ref="LLMorph 8",
    requires=("wordnet",),
    params={"rate": 0.3},
)
def synonym(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    from relations.wordnet import pos_candidates

    options = {
        i: found
        for i in content_word_indices(text, tokens, ctx)
        if not is_protected_word(tokens[i])  # names, numbers, units, negations stay
        and (role := role_in_context(tokens, i, pos_candidates(tokens[i])))
        and (found := synonym_options(tokens[i], role))
    }
    if not options:
        raise NotApplicable("no word with a WordNet synonym")
    chosen = ctx.rng.sample(sorted(options), rate_count(len(options), ctx, 0.3))
    for index in sorted(chosen):
        tokens[index] = match_case(tokens[index], ctx.rng.choice(options[index]))
    return changed_or_skip(text, "".join(tokens), "no word with a WordNet synonym")


def antonym_options(word: str) -> tuple[str, list[str]] | None:
    """(part of speech, single-word WordNet antonyms) for an adjective, adverb or verb lemma."""
    from relations.wordnet import antonyms, is_lemma

    pos = _wordnet_pos(word)
    if pos not in {"a", "r", "v"} or not is_lemma(word, pos):
        return None
    # The antonyms of the most frequent sense that has any ("good" → "bad", not "evil").
    for senses in range(1, 4):
        options = _single_words(antonyms(word, pos, senses=senses), word)
        if options:
            return pos, options
    return None


@transform_relation(
    id="word.antonym",
    name="Antonym replacement (WordNet)",
    category=CATEGORY,
    description=(
        "Replaces one word with a WordNet antonym (adjectives first, then adverbs, then verbs; "
        "dictionary forms only): 'hot' → 'cold'. The answer should change. Each input of a "
        "multi-input task is changed alone: antonyms in both the premise and the hypothesis "
        "could cancel out."
    ),
    example="The soup was hot and the bread tasted fresh.",
    kind=RelationKind.LIBRARY,
    expectation=Expectation.DIFFERENT,
    preconditions="an adjective, adverb or verb in its dictionary form with a WordNet antonym",
    ref="LLMorph 10",
    requires=("wordnet",),
    # LLMorph 10 on NLI transforms the premise alone and the hypothesis alone, never both.
    joint_target=False,
)
def antonym(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    found = {
        i: options
        for i in content_word_indices(text, tokens, ctx)
        if (options := antonym_options(tokens[i]))
    }
    if not found:
        raise NotApplicable("no word with a WordNet antonym")
    for pos in ("a", "r", "v"):  # one flip, on the word most likely to carry the meaning
        candidates = sorted(i for i, (p, _) in found.items() if p == pos)
        if candidates:
            index = ctx.rng.choice(candidates)
            tokens[index] = match_case(tokens[index], ctx.rng.choice(found[index][1]))
            break
    return changed_or_skip(text, "".join(tokens), "no word with a WordNet antonym")
