"""Word relations through WordNet (LLMorph 8, 10): synonym and antonym replacement."""

from __future__ import annotations

import re
from collections.abc import Iterable

from relations.base import Expectation, NotApplicable, RelationKind, TransformContext
from relations.english.nouns import is_noun_candidate
from relations.english.protect import is_protected_word
from relations.english.tokens import fix_article, match_case, next_word, norm, prev_word, tokenize
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


# A synonym must be tagged at least this often in its sense in WordNet's sense-tagged corpus:
# 'car' → 'automobile' (15), 'auto' (2); not 'machine' (0), and 'weather' → 'conditions' (0),
# 'salty' → 'piquant' (0) are left out.
MIN_SYNONYM_COUNT = 2


def _looks_plural(word: str) -> bool:
    from relations.wordnet import is_lemma

    stems = [word[:-1]] if word.endswith("s") else []
    stems += [word[:-2]] if word.endswith("es") else []
    return any(is_lemma(stem, "n") for stem in stems)


def synonym_options(word: str, pos: str | None = None) -> list[str]:
    """Single-word WordNet synonyms of ``word`` in its most frequent part of speech and sense.

    With ``pos`` (the part of speech the word plays in its sentence), only synonyms whose own
    most frequent part of speech is the same, so the sentence keeps its grammar. No verbs: a
    verb's synonym often takes other complements ("tell me" → "say me"). A singular noun gets
    no plural-looking synonym ("The weather was" → "The conditions was").
    """
    from relations.wordnet import is_lemma, pos_candidates, synonyms

    pos = pos or _wordnet_pos(word)
    if pos in {None, "v"} or not is_lemma(word, pos):
        return []  # an inflected form: its lemma's synonyms would not fit the sentence
    # Only the most frequent sense: later senses drift ("good" → "full").
    options = _single_words(synonyms(word, pos, senses=1, min_count=MIN_SYNONYM_COUNT), word)
    options = [o for o in options if pos_candidates(o)[:1] == [pos]]
    if pos == "n" and not _looks_plural(word):
        options = [o for o in options if not _looks_plural(o)]
    return options


@transform_relation(
    id="word.synonym",
    name="Synonym replacement (WordNet)",
    category=CATEGORY,
    description=(
        "Replaces 30% of the nouns, adjectives and adverbs that have one (at least one) with a "
        "common WordNet synonym of their most frequent sense ('car' → 'automobile', with 'a' "
        "becoming 'an'). Inflected words and verbs are left alone. The answer should not "
        "change."
    ),
    example="The quick student answered the difficult question correctly.",
    kind=RelationKind.LIBRARY,
    expectation=Expectation.EQUIVALENT,
    preconditions="a noun, adjective or adverb in its dictionary form with a common WordNet synonym",
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
        fix_article(tokens, index)  # "a car" → "an auto", not "a auto"
    return changed_or_skip(text, "".join(tokens), "no word with a WordNet synonym")


def antonym_options(word: str, pos: str | None = None) -> tuple[str, list[str]] | None:
    """(part of speech, the one WordNet antonym) for an adjective, adverb or verb lemma.

    ``pos`` is the part of speech the word plays in its sentence (default: its most frequent).
    Its first two senses must agree on a single antonym: 'old' is 'young' for people and 'new'
    for things, and a sentence about a bridge must not get the first ("the young bridge").
    Direct antonyms first; a satellite borrows its head's only when it has none ('salty' is
    'fresh', not the 'unstimulating' of its head).
    """
    from relations.wordnet import antonyms, is_lemma

    pos = pos or _wordnet_pos(word)
    if pos not in {"a", "r", "v"} or not is_lemma(word, pos):
        return None
    options = _single_words(antonyms(word, pos, indirect=False, senses=2), word)
    options = options or _single_words(antonyms(word, pos, senses=2), word)
    return (pos, options) if len(options) == 1 else None


# Words that place things in time or order: their antonyms break fixed phrases ("last year" →
# "first year", "next week" → "last week" changes which week, "at present" → "at absent").
ORDER_WORDS = frozenset(["last", "first", "next", "past", "present", "former", "latter", "final"])


def _antonym_role(tokens: list[str], index: int) -> str | None:
    """The part of speech the word at ``index`` plays, for an antonym: what its left
    neighbour says (``role_in_context``), or an adjective before a noun ("fresh fish"). After
    'to', a word that is also a noun may be the object of a preposition ("drives to work")."""
    from relations.wordnet import pos_candidates

    candidates = pos_candidates(tokens[index])
    role = role_in_context(tokens, index, candidates)
    before = prev_word(tokens, index)
    if role == "v" and "n" in candidates and before is not None and norm(tokens[before]) == "to":
        return None
    if role is None and candidates[:1] == ["a"]:
        after = next_word(tokens, index)
        if after is not None and is_noun_candidate(tokens[after]):
            return "a"
    return role


@transform_relation(
    id="word.antonym",
    name="Antonym replacement (WordNet)",
    category=CATEGORY,
    description=(
        "Replaces one word with its WordNet antonym (adjectives first, then adverbs, then verbs; "
        "dictionary forms only, in the part of speech the word plays): 'hot' → 'cold'. Words "
        "whose senses disagree on the antonym ('old': 'young' or 'new'), numbers and names are "
        "left alone. The answer should change. Each input of a multi-input task is changed "
        "alone: antonyms in both the premise and the hypothesis could cancel out."
    ),
    example="The soup was hot and the bread tasted fresh.",
    kind=RelationKind.LIBRARY,
    expectation=Expectation.DIFFERENT,
    preconditions=(
        "an adjective, adverb or verb in its dictionary form with one WordNet antonym in its "
        "first two senses"
    ),
    ref="LLMorph 10",
    requires=("wordnet",),
    # LLMorph 10 on NLI transforms the premise alone and the hypothesis alone, never both.
    joint_target=False,
)
def antonym(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    # Numbers, names and negations keep their meaning ("five" has the antonym "ordinal"); a
    # word's antonym must be of the part of speech it plays ("worked hard" is no "worked soft").
    found = {
        i: options
        for i in content_word_indices(text, tokens, ctx)
        if not is_protected_word(tokens[i])
        and norm(tokens[i]) not in ORDER_WORDS
        and (role := _antonym_role(tokens, i))
        and (options := antonym_options(tokens[i], role))
    }
    if not found:
        raise NotApplicable("no word with a WordNet antonym")
    for pos in ("a", "r", "v"):  # one flip, on the word most likely to carry the meaning
        candidates = sorted(i for i, (p, _) in found.items() if p == pos)
        if candidates:
            index = ctx.rng.choice(candidates)
            tokens[index] = match_case(tokens[index], ctx.rng.choice(found[index][1]))
            fix_article(tokens, index)  # "a beautiful city" → "an ugly city"
            break
    return changed_or_skip(text, "".join(tokens), "no word with a WordNet antonym")
