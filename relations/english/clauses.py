"""Clauses of a text, and the claims a rewrite can lose or mix up between them.

A review or a word problem says several things ("the screen is dull and the keyboard feels
cheap"); a paraphrase must say each of them again, each about the same thing. Two faults of a
small rewriter slip past a whole-text similarity floor because most of the text is still there:

* **a clause dropped**: "I waited an hour on the phone and the agent was rude to me." → "The
  agent was rude to me." (whole-text cosine 0.74, above the 0.70 floor);
* **a detail moved** to another clause: "… the screen is dull and the keyboard feels cheap." →
  "… the screen feels cheap and the keyboard is dull." (the same words, other claims);
* **a claim added** to a paraphrase: "…, but it's still worth something for what it does."

Clauses are split where a sentence coordinates a new subject ("…, and the soup …", "…, but I
…"): lists of adjectives ("clean, quiet and comfortable") stay one clause. No tagger is needed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from relations.english.lexicon import STOPWORDS
from relations.text_utils import split_sentences

Similarity = Callable[[str, str], float]

# A coordinator (with or without a comma) or a bare comma/semicolon, before a word that opens a
# new subject: a determiner, a pronoun, "there", or a capitalised word (a name).
_NEW_SUBJECT = (
    r"(?=(?i:the|a|an|my|our|your|his|her|their|its|this|that|these|those|i|we|you|he|she|they|"
    r"it|there)\b|[A-Z])"
)
_COORDINATOR = r"(?i:and|but|while|whereas|although|though|because|so|yet)"
_CLAUSE_BREAK = re.compile(
    rf"(?:\s*[,;]\s*(?:{_COORDINATOR}\s+)?|\s+{_COORDINATOR}\s+){_NEW_SUBJECT}"
)
_CONTENT_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_MIN_CLAUSE_WORDS = 3

# A source clause whose best match in the rewrite (a clause of it, or the whole rewrite) is
# below this cosine was not said again. Measured with all-MiniLM-L6-v2 on our 20 bench texts
# (bench/data/rewriter_texts.jsonl): 44 faithful rewrites of our own writing and the 9 read as
# valid keep every clause at ≥ 0.51 ("I waited an hour on the phone" ↔ "I was on hold for an
# hour"); the read rewrites that dropped a claim score 0.27 ("The agent was rude to me.") and
# 0.36 ("A customer waited and ordered a delicious meal…" for "the soup was delicious").
CLAUSE_FLOOR = 0.45


def split_clauses(text: str) -> list[str]:
    """The text's clauses: its sentences, each split where a new subject is coordinated.

    >>> split_clauses("The laptop is fast, but the screen is dull and the keyboard feels cheap.")
    ['The laptop is fast', 'the screen is dull', 'the keyboard feels cheap.']
    >>> split_clauses("The hotel room was clean, quiet and comfortable.")
    ['The hotel room was clean, quiet and comfortable.']
    """
    clauses: list[str] = []
    for sentence in split_sentences(text):
        pieces = [p.strip(" ,;") for p in _CLAUSE_BREAK.split(sentence)]
        pieces = [p for p in pieces if _CONTENT_WORD.search(p)]
        # An opener too short to be a clause ("However", "In the end") belongs to the next piece.
        merged: list[str] = []
        for piece in pieces:
            if merged and len(_CONTENT_WORD.findall(merged[-1])) < _MIN_CLAUSE_WORDS:
                merged[-1] = f"{merged[-1]}, {piece}"
            else:
                merged.append(piece)
        if len(merged) > 1 and len(_CONTENT_WORD.findall(merged[-1])) < _MIN_CLAUSE_WORDS:
            merged[-2:] = [f"{merged[-2]}, {merged[-1]}"]
        clauses.extend(merged)
    return clauses


def _stem(word: str) -> str:
    """A crude plural- and possessive-insensitive key ("seats" and "seat", "stories" and "story",
    "keyboard's" and "keyboard")."""
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):  # "the keyboard's dull", "Tom's"
        word = word[:-2]
    if word.endswith("ies") and len(word) > 5:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 4:
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The text's words that carry content (no function words), plural-insensitive."""
    words = (w for w in _CONTENT_WORD.findall(text) if w.lower() not in STOPWORDS)
    return {_stem(w) for w in words}


@dataclass(frozen=True)
class DroppedClause:
    clause: str  # the source clause the rewrite no longer says
    best: float  # its highest cosine to the rewrite or a clause of it


def dropped_clause(
    source: str, followup: str, similarity: Similarity, floor: float = CLAUSE_FLOOR
) -> DroppedClause | None:
    """The source clause the rewrite says least (below ``floor``), or None.

    Only for sources of two clauses or more: for one clause this is the whole-text floor.
    A ``similarity`` with a ``prefetch(texts)`` method gets every text first, in one call.
    """
    clauses = split_clauses(source)
    if len(clauses) < 2:
        return None
    targets = [followup, *split_clauses(followup)]
    prefetch = getattr(similarity, "prefetch", None)
    if prefetch is not None:  # one batch for the embedder instead of one text per pair
        prefetch([*clauses, *targets])
    worst: DroppedClause | None = None
    for clause in clauses:
        best = max(float(similarity(clause, target)) for target in targets)
        if best < floor and (worst is None or best < worst.best):
            worst = DroppedClause(clause, best)
    return worst


@dataclass(frozen=True)
class MovedDetail:
    into: str  # the rewrite's clause that now holds the detail
    between: tuple[str, str]  # the two source clauses it mixes (in source order)


def moved_detail(source: str, followup: str) -> MovedDetail | None:
    """A detail of one source clause that the rewrite put into another clause's, or None.

    A word only one source clause has belongs to that clause. A rewrite clause holding words of
    two source clauses may be a faithful merge ("The friendly waiter served a delicious soup"),
    or may name the same thing again ("After how many hours is the tank empty?"). It has moved a
    detail when the owner's clause is said again elsewhere in the rewrite without that detail:
    "the museum was beautiful and the paintings were fine" (the paintings were beautiful), "the
    screen feels cheap and the keyboard is dull" (the keyboard felt cheap).
    """
    clauses = split_clauses(source)
    if len(clauses) < 2:
        return None
    owners: dict[str, set[int]] = {}
    for index, clause in enumerate(clauses):
        for word in content_words(clause):
            owners.setdefault(word, set()).add(index)
    owner = {word: next(iter(found)) for word, found in owners.items() if len(found) == 1}
    rewritten = split_clauses(followup)
    words = [content_words(clause) for clause in rewritten]
    for here, held in enumerate(words):
        by_owner: dict[int, set[str]] = {}
        for word in held:
            if word in owner:
                by_owner.setdefault(owner[word], set()).add(word)
        if len(by_owner) < 2:
            continue
        for source_index, details in sorted(by_owner.items()):
            elsewhere = [
                other
                for there, other in enumerate(words)
                if there != here and any(owner.get(w) == source_index for w in other)
            ]
            if elsewhere and not any(details & other for other in elsewhere):
                first, second = sorted(by_owner)[:2]
                return MovedDetail(rewritten[here], (clauses[first], clauses[second]))
    return None


def new_claim(source: str, followup: str, *, by_sentence: bool = False) -> str | None:
    """A clause the rewrite adds that shares no content word with the source, or None.

    Only when the rewrite has more clauses than the source: a paraphrase may reword a clause
    entirely ("The film was boring" → "The movie was dull"), but a clause it adds on top about
    nothing the source mentions ("…, but it's still worth something for what it does") is
    another claim. ``by_sentence``: count and check whole sentences instead, for an expansion,
    whose added sentence may go on in a clause of its own ("That is really disappointing,
    because I expected them to last.") but must be about the source.
    """
    split = split_sentences if by_sentence else split_clauses
    pieces = split(followup)
    if len(pieces) <= len(split(source)):
        return None
    known = content_words(source)
    for piece in pieces:
        words = content_words(piece)
        if words and not words & known:
            return piece
    return None


def added_lines(source: str, followup: str) -> int | None:
    """The rewrite's line count when the source is one line and the rewrite is several (a second
    piece after the rewrite: verse, a comment, another version), else None."""

    def lines(text: str) -> int:
        return sum(1 for line in text.splitlines() if line.strip())

    count = lines(followup)
    return count if lines(source) == 1 and count > 1 else None
