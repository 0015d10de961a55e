"""Tokens and sentences: a text as a token list whose concatenation is exactly the text."""

from __future__ import annotations

import re
from collections.abc import Iterable

from relations.text_utils import ABBREVIATIONS, protected_mask


def word_list(text: str) -> list[str]:
    """The whitespace-separated words of a word-list literal."""
    return text.split()


# Words (with inner apostrophes: don't, Sarah's), numbers, whitespace runs, any other character.
_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*|\d+(?:[.,]\d+)*|\s+|.", re.DOTALL)
SENTENCE_END = frozenset(".!?")


def tokenize(text: str) -> list[str]:
    """Split into tokens whose concatenation is exactly ``text``."""
    return _TOKEN.findall(text)


def is_word(token: str) -> bool:
    """Whether the token is a word (it starts with a letter)."""
    return token[:1].isalpha()


def norm(token: str) -> str:
    """Lower case with a straight apostrophe: the form every lookup uses."""
    return token.lower().replace("’", "'")


def match_case(template: str, word: str) -> str:
    """``word`` written in the case of ``template`` (UPPER, Capitalised or as given)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def capitalize_first(text: str) -> str:
    """``text`` with its first character in upper case, the rest as it is."""
    return text[:1].upper() + text[1:]


def split_sentences(tokens: list[str]) -> list[list[str]]:
    """Sentences as token lists (end punctuation and the following whitespace included).

    A sentence ends at ``.``, ``!`` or ``?`` followed by whitespace or the end of the text, so
    "3.5" does not split, nor does the period of an abbreviation or an initial ("Dr. Lee",
    "10 a.m. on", "J. Smith").
    """
    sentences: list[list[str]] = []
    current: list[str] = []
    index = 0
    while index < len(tokens):
        current.append(tokens[index])
        if (
            tokens[index] in SENTENCE_END
            and (index + 1 == len(tokens) or tokens[index + 1].isspace())
            and not (tokens[index] == "." and _abbreviation_before(tokens, index))
        ):
            if index + 1 < len(tokens):
                index += 1
                current.append(tokens[index])
            sentences.append(current)
            current = []
        index += 1
    if current:
        sentences.append(current)
    return sentences


def _abbreviation_before(tokens: list[str], index: int) -> bool:
    """Whether the period at ``index`` closes an abbreviation or an initial, not a sentence."""
    if index + 1 == len(tokens):
        return False
    word = tokens[index - 1] if index > 0 else ""
    dotted = index >= 3 and tokens[index - 2] == "." and tokens[index - 3].isalpha()  # "a.m."
    if dotted:
        word = f"{tokens[index - 3]}.{word}"
    return word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper())


def protected_tokens(text: str, tokens: list[str]) -> set[int]:
    """Indices of tokens that overlap a math span or a LaTeX command."""
    mask = protected_mask(text)
    protected = set()
    position = 0
    for index, token in enumerate(tokens):
        if any(mask[position : position + len(token)]):
            protected.add(index)
        position += len(token)
    return protected


def next_word(tokens: list[str], index: int) -> int | None:
    """The next word token, skipping only whitespace."""
    for j in range(index + 1, len(tokens)):
        if tokens[j].isspace():
            continue
        return j if is_word(tokens[j]) else None
    return None


def prev_word(tokens: list[str], index: int) -> int | None:
    """The previous word token, skipping only whitespace."""
    for j in range(index - 1, -1, -1):
        if tokens[j].isspace():
            continue
        return j if is_word(tokens[j]) else None
    return None


def remove_tokens(tokens: list[str], indices: Iterable[int]) -> list[str]:
    """Drop word tokens with the whitespace before them (or after, at the start of a text)."""
    drop = set(indices)
    result: list[str] = []
    skip_space = False
    for index, token in enumerate(tokens):
        if index in drop:
            if result and result[-1].isspace():
                result.pop()
                skip_space = False
            else:
                skip_space = True
            continue
        if skip_space and token.isspace():
            skip_space = False
            continue
        skip_space = False
        result.append(token)
    return result


# Words whose first letter does not give their first sound: "a unit", "a one-off", "an hour".
_CONSONANT_SOUND = re.compile(r"^(?:uni|use|usu|uti|eu|ewe|one|once|ur[aeiou])", re.I)
_VOWEL_SOUND = re.compile(r"^(?:hour|honest|honou?r|heir)", re.I)


def indefinite_article(word: str) -> str:
    """'a' or 'an' for the word that follows it, by its first sound."""
    if _VOWEL_SOUND.match(word):
        return "an"
    if _CONSONANT_SOUND.match(word):
        return "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


def fix_article(tokens: list[str], index: int) -> None:
    """After the word at ``index`` was replaced: make an 'a'/'an' right before it agree with it
    ("a car" → "an auto" when 'car' becomes 'auto'), in place."""
    before = prev_word(tokens, index)
    if before is not None and norm(tokens[before]) in {"a", "an"}:
        tokens[before] = match_case(tokens[before], indefinite_article(tokens[index]))
