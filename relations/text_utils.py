"""Small text helpers shared by the sentence-level relations and the validity gate.

A sentence splitter that keeps abbreviations ("Dr. Lee", "e.g. this"), initials ("J. R. Smith")
and decimals ("3.5") intact, question detection, comma-clause splitting and math-span finding.
They are heuristics for short English task inputs, not a general NLP pipeline.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# A period after one of these words does not end a sentence. "etc." and "no." are left out on
# purpose: both often do end a sentence, and the next-word-is-lower-case rule catches the rest.
ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "cf", "fig", "eq", "approx",
        "dept", "inc", "ltd", "corp", "co", "e.g", "i.e", "a.m", "p.m", "u.s", "u.k", "jan", "feb",
        "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip

_CLOSERS = "\"')]}”’»"
# Sentence punctuation, optional closing quotes/brackets, then whitespace: a candidate boundary.
_BOUNDARY = re.compile(r"[.!?]+[\"')\]}”’»]*(?=\s)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_LAST_TOKEN = re.compile(r"(\S+)$")

# First words that make a sentence the question (or the instruction saying what to find).
QUESTION_STARTERS = frozenset(
    {
        "what", "how", "which", "who", "whom", "whose", "when", "where", "why", "find", "compute",
        "calculate", "determine", "solve", "evaluate", "estimate", "simplify", "express", "prove",
        "show", "give", "state",
    }
)  # fmt: skip

# Math spans that must not be touched by casing or clause edits: $$…$$, \[…\], \(…\) and $…$
# where the opening dollar is not followed by a digit (so "$5 and $7" stays ordinary prose).
MATH_SPAN = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)|\$(?!\d)[^$\n]+?\$", re.DOTALL)
_PROTECTED = re.compile(MATH_SPAN.pattern + r"|\\[A-Za-z]+", re.DOTALL)


# Math spans and LaTeX commands (with their braced arguments) whose letters the character- and
# word-level relations must not change. Broader than MATH_SPAN: "$5 and $7" counts as math here,
# since a letter edit inside it is never wanted. Display math first so ``$$…$$`` is not read as
# two empty ``$…$`` spans.
_MATH_OR_COMMAND = re.compile(
    r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]|\\[A-Za-z]+(?:\{[^{}]*\})*",
    re.DOTALL,
)


def protected_mask(text: str) -> list[bool]:
    """Per character: True inside a math span or a LaTeX command name."""
    mask = [False] * len(text)
    for match in _MATH_OR_COMMAND.finditer(text):
        for index in range(match.start(), match.end()):
            mask[index] = True
    return mask


def normalise_whitespace(text: str) -> str:
    """Collapse every whitespace run to one space and strip the ends."""
    return " ".join(text.split())


def _ends_sentence(text: str, boundary: re.Match[str]) -> bool:
    following = text[boundary.end() :].lstrip()
    if not following:
        return False
    if following[0].islower():  # "e.g. the", "approx. five", "He said “wait!” and left"
        return False
    punctuation = boundary.group().rstrip(_CLOSERS)
    if punctuation != ".":
        return True
    token_match = _LAST_TOKEN.search(text[: boundary.start()])
    if token_match is None:
        return True
    token = token_match.group(1).lstrip("(\"'“‘[")
    if token.lower() in ABBREVIATIONS:
        return False
    return not (len(token) == 1 and token.isupper())  # an initial, as in "J. R. Smith"


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, each stripped; blank lines always end a sentence.

    >>> split_sentences("Dr. Lee paid $3.50 for tea. Was it cheap? Yes!")
    ['Dr. Lee paid $3.50 for tea.', 'Was it cheap?', 'Yes!']
    """
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        start = 0
        for boundary in _BOUNDARY.finditer(paragraph):
            if _ends_sentence(paragraph, boundary):
                piece = paragraph[start : boundary.end()].strip()
                if piece:
                    sentences.append(piece)
                start = boundary.end()
        tail = paragraph[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


def join_sentences(sentences: Sequence[str]) -> str:
    """Join sentences with single spaces (the layout every sentence-level relation produces)."""
    return " ".join(sentences)


# A word: letters first, then letters, digits, apostrophes or hyphens ("don't", "check-in").
_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def lower_words(text: str) -> list[str]:
    """The words of ``text`` in lower case, with a plain apostrophe ("Don’t" → "don't")."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def first_word(sentence: str) -> str:
    match = _WORD.search(sentence)
    return match.group().lower() if match else ""


def is_question(sentence: str) -> bool:
    """A question, or an instruction saying what to find ("Find x.", "Compute the area.")."""
    if sentence.rstrip().rstrip(_CLOSERS).endswith("?"):
        return True
    return first_word(sentence) in QUESTION_STARTERS


def question_index(sentences: Sequence[str]) -> int | None:
    """Index of the question: the last sentence that is a question (None when there is none)."""
    for index in range(len(sentences) - 1, -1, -1):
        if is_question(sentences[index]):
            return index
    return None


def split_question(sentences: Sequence[str]) -> tuple[list[str], str | None]:
    """(context sentences in order, the question) — the question is the last question sentence."""
    index = question_index(sentences)
    if index is None:
        return list(sentences), None
    return [s for i, s in enumerate(sentences) if i != index], sentences[index]


def split_clauses(sentence: str) -> tuple[list[str], str]:
    """(comma clauses, terminal punctuation): "If a, then b?" → (["If a", "then b"], "?")."""
    body = sentence.rstrip()
    end = ""
    while body and body[-1] in ".!?" + _CLOSERS:
        end = body[-1] + end
        body = body[:-1]
    # Only ", " separates clauses: "1,000" and "f(1,2)" stay whole.
    return [c for c in re.split(r",\s+", body) if c], end


# A sentence opening with one of these leans on the one before it ("She did not …", "Then …"), so
# sentence reorderings move it together with its predecessor instead of on its own.
DEPENDENT_OPENERS = re.compile(
    r"^(?:he|she|it|they|them|his|her|its|their|this|that|these|those|then|after that|afterwards|"
    r"later|next|finally|also|however|but|so|therefore|thus|hence|meanwhile|moreover|furthermore|"
    r"additionally|in addition|as a result|because of this|in total|altogether|both|another|"
    r"the other|the remaining|the rest|each of them|all of them)\b",
    re.I,
)


# A third-person pronoun anywhere ("The mayor signed it") points back to an earlier sentence too.
_BACK_REFERENCE = re.compile(r"\b(?:he|she|it|they|him|her|them|his|its|their|there)\b", re.I)


def leans_on_previous(sentence: str) -> bool:
    """Whether ``sentence`` refers back to an earlier one (an opener like "Then" or a pronoun)."""
    return bool(DEPENDENT_OPENERS.match(sentence) or _BACK_REFERENCE.search(sentence))


def sentence_groups(sentences: Sequence[str]) -> list[list[str]]:
    """Sentences grouped so that each dependent sentence stays with the one before it.

    >>> sentence_groups(["Tom ran.", "He fell.", "Ann sat."])
    [['Tom ran.', 'He fell.'], ['Ann sat.']]
    """
    groups: list[list[str]] = []
    for sentence in sentences:
        if groups and leans_on_previous(sentence):
            groups[-1].append(sentence)
        else:
            groups.append([sentence])
    return groups


def permute_changed(items: Sequence[T], rng: random.Random) -> list[T]:
    """A seeded shuffle that differs from the input whenever the items are not all equal.

    When the shuffle happens to return the original order, the order is rotated by one.
    """
    shuffled = list(items)
    rng.shuffle(shuffled)
    if shuffled == list(items) and len(shuffled) > 1:
        shuffled = shuffled[1:] + shuffled[:1]
    return shuffled


def outside_math(text: str, edit: Callable[[str], str]) -> str:
    """Apply ``edit`` to the prose of ``text``; math spans and LaTeX commands stay as they are."""
    pieces: list[str] = []
    position = 0
    for match in _PROTECTED.finditer(text):
        pieces.append(edit(text[position : match.start()]))
        pieces.append(match.group())
        position = match.end()
    pieces.append(edit(text[position:]))
    return "".join(pieces)
