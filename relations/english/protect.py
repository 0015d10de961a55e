"""Protected spans: the parts of a text an invariance relation must never edit.

A typo in "15 km", "not", "Maria" or ``$x^2$`` does not add noise, it changes the question: a
number, a unit, a negation word, a named entity or math carries the meaning the answer depends
on. The character-level relations perturb only letters outside these spans, and the validity
gate (``relations.validity``) checks the same spans on every invariance follow-up.

A named entity here is any capitalised word (or acronym): without a tagger we cannot tell "Maria"
opening a sentence from an ordinary capitalised first word, so both are protected.
"""

from __future__ import annotations

import re
from collections import Counter

from relations.english.categories import CATEGORIES, PROPER_CATEGORIES
from relations.english.tokens import word_list
from relations.text_utils import protected_mask

# Negation words (contractions in n't are matched by pattern).
NEGATION_WORDS = frozenset(
    word_list("not no never none nobody nothing nowhere neither nor without cannot")
)
# Unit names, written out: protected wherever they occur.
UNIT_WORDS = frozenset(
    word_list(
        """
    percent per cent degree degrees metre metres meter meters kilometre kilometres kilometer
    kilometers centimetre centimetres centimeter centimeters millimetre millimetres millimeter
    millimeters mile miles foot feet inch inches yard yards gram grams kilogram kilograms pound
    pounds ounce ounces ton tons tonne tonnes litre litres liter liters millilitre millilitres
    gallon gallons hour hours minute minutes second seconds day days week weeks month months year
    years dollar dollars cent cents euro euros hectare hectares acre acres
    """
    )
)
# Unit abbreviations: protected only right after a number ("5 km", "20km/h", "3 kg").
UNIT_ABBREVIATIONS = frozenset(
    word_list("km m cm mm kg g mg l ml h hr hrs min s sec mph kph kmh lb lbs oz ft mi yd t")
)
# Numbers written as words (the validity gate reads the same list).
NUMBER_WORD_LIST = frozenset(
    word_list(
        """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
    hundred thousand million billion dozen half twice double triple first second third fourth
    fifth
    """
    )
)
PROPER_NAMES = frozenset(
    member for category in PROPER_CATEGORIES for member in CATEGORIES[category]
)

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_DIGIT_WORD = re.compile(r"\w*\d\w*")  # "12", "H2O", "3rd", "20km"
_UNIT_AFTER_NUMBER = re.compile(
    r"(?<=\d)(\s?)(" + "|".join(sorted(UNIT_ABBREVIATIONS, key=len, reverse=True)) + r")\b"
    r"(?:/(?:" + "|".join(sorted(UNIT_ABBREVIATIONS, key=len, reverse=True)) + r")\b)?",
)


def is_negation(word: str) -> bool:
    """Whether ``word`` negates: "not", "never", "nobody", "don't", "isn’t" …"""
    lowered = word.lower().replace("’", "'")
    return lowered in NEGATION_WORDS or lowered.endswith("n't")


def is_protected_word(word: str) -> bool:
    """A word no invariance relation may edit: a number word, unit, negation or capitalised word."""
    lowered = word.lower().replace("’", "'")
    return (
        word[:1].isupper()
        or lowered in NUMBER_WORD_LIST
        or lowered in UNIT_WORDS
        or is_negation(word)
    )


def content_mask(text: str) -> list[bool]:
    """Per character: True inside a protected span (math, number, unit, negation, entity)."""
    mask = protected_mask(text)

    def cover(start: int, end: int) -> None:
        for index in range(start, end):
            mask[index] = True

    for match in _DIGIT_WORD.finditer(text):
        cover(match.start(), match.end())
    for match in _UNIT_AFTER_NUMBER.finditer(text):
        cover(match.start(), match.end())
    for match in _WORD.finditer(text):
        if is_protected_word(match.group()):
            cover(match.start(), match.end())
    return mask


def negation_count(text: str) -> int:
    """How many negation words ``text`` has."""
    return sum(1 for m in _WORD.finditer(text) if is_negation(m.group()))


def protected_words(text: str) -> Counter[str]:
    """The protected words of ``text`` (lower case, straight apostrophes), with their counts."""
    return Counter(
        m.group().lower().replace("’", "'")
        for m in _WORD.finditer(text)
        if is_protected_word(m.group())
    )
