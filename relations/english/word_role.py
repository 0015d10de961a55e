"""The part of speech a word plays in its sentence, guessed from its left neighbour.

WordNet gives a word's parts of speech out of context ("works" is a noun first); a synonym of the
wrong one breaks the sentence ("Sarah plant for Acme", "The develop leaves"). Without a tagger we
read the word before: after a determiner comes a noun or an adjective, after "to", a modal or a
subject pronoun a verb, after a form of "be" or an intensifier an adjective. When the neighbour
says nothing, only a word WordNet knows in one part of speech has a role we can trust.
"""

from __future__ import annotations

from relations.english.lexicon import DETERMINERS, SUBJECT_PRONOUNS
from relations.english.tokens import norm, prev_word

_NOUN_OR_ADJECTIVE = frozenset("na")
_BEFORE_VERB = frozenset(
    {"to", "will", "would", "can", "could", "should", "must", "might", "did", "does", "do"}
    | SUBJECT_PRONOUNS
)
_BEFORE_ADJECTIVE = frozenset(
    {"is", "are", "was", "were", "be", "been", "very", "so", "too", "quite", "rather", "really"}
)


def roles_after(tokens: list[str], index: int) -> frozenset[str]:
    """The WordNet parts of speech (``n v a r``) the word at ``index`` can play, from context.

    An empty set: the context says nothing.
    """
    before = prev_word(tokens, index)
    if before is None:
        return frozenset()
    previous = norm(tokens[before])
    if previous in DETERMINERS:
        return _NOUN_OR_ADJECTIVE
    if previous in _BEFORE_VERB:
        return frozenset("v")
    if previous in _BEFORE_ADJECTIVE:
        return frozenset("a")
    return frozenset()


def role_in_context(tokens: list[str], index: int, candidates: list[str]) -> str | None:
    """The part of speech to use for the word at ``index`` (None: too ambiguous to replace).

    ``candidates`` are WordNet's parts of speech for the word, most frequent first; the most
    frequent one must also be one the context allows, or the only one WordNet knows.
    """
    if not candidates:
        return None
    allowed = roles_after(tokens, index)
    if allowed:
        return candidates[0] if candidates[0] in allowed else None
    return candidates[0] if len(candidates) == 1 else None
