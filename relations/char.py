"""Character-level relations (LLMorph parity 1–7, 126–128): small typos should not matter.

Every relation perturbs about ``rate`` (default 10 %) of the eligible letters, at least one, and
expects the model's answer to stay the same. Only letters outside the protected spans of
``relations.english.protect`` are touched: never inside math (``$…$``, ``$$…$$``, ``\\(…\\)``,
``\\[…\\]``) or a LaTeX command name, so a typo cannot rename a variable or break ``\\frac``,
and never in a number, a unit ("km", "hours"), a negation word ("not", "don't") or a capitalised
word (a name), since a typo there changes what is asked. Digits and punctuation are never
touched either.

The rule-based ones draw everything from ``ctx.rng``. The nlpaug augmenters (keyboard typos,
OCR errors) use the library's global ``random`` and ``numpy.random``: we seed both from
``ctx.seed`` under a lock right before each call and restore their previous state afterwards.
Misspellings come from nlpaug's dictionary but are drawn from ``ctx.rng``.
"""

from __future__ import annotations

import random
import re
import string
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from relations.base import Expectation, NotApplicable, RelationKind, TransformContext
from relations.english.protect import content_mask
from relations.registry import transform_relation

CATEGORY = "character"
DEFAULT_RATE = 0.1
PRECONDITIONS = (
    "the text has a letter outside math, numbers, units, negations and capitalised words"
)

_WORD = re.compile(r"[^\W\d_]+")  # a run of letters (any script)

# Our leet table: each letter and the digit or symbol that looks like it.
LEET = {"a": "4", "b": "8", "e": "3", "g": "9", "i": "1", "o": "0", "s": "5", "t": "7", "z": "2"}


def letter_positions(text: str) -> list[int]:
    """Indices of the letters a character relation may touch (outside every protected span)."""
    mask = content_mask(text)
    return [i for i, ch in enumerate(text) if ch.isalpha() and not mask[i]]


def change_count(eligible: int, ctx: TransformContext) -> int:
    """How many letters (or words) to perturb: ``rate`` of them, rounded, at least one."""
    rate = float(ctx.params.get("rate", DEFAULT_RATE))
    return min(eligible, max(1, round(rate * eligible)))


def _letters_or_skip(text: str) -> list[int]:
    positions = letter_positions(text)
    if not positions:
        raise NotApplicable("no letters to perturb")
    return positions


def _random_letter(rng: random.Random, like: str, exclude: str = "") -> str:
    choices = [c for c in string.ascii_lowercase if c != exclude.lower()]
    letter = rng.choice(choices)
    return letter.upper() if like.isupper() else letter


# ---------------------------------------------------------------- rule-based (LLMorph 1–7)

_EXAMPLE = "The library opens at nine and closes after sunset."
_COMMON = {
    "category": CATEGORY,
    "kind": RelationKind.RULE,
    "expectation": Expectation.EQUIVALENT,
    "example": _EXAMPLE,
    "preconditions": PRECONDITIONS,
    "params": {"rate": DEFAULT_RATE},
}


@transform_relation(
    id="char.random_replace",
    name="Replace random letters",
    description=(
        "Replaces 10% of the letters (at least one) with a different random letter, keeping "
        "upper/lower case. The answer should not change."
    ),
    ref="LLMorph 1",
    **_COMMON,
)
def random_replace(text: str, ctx: TransformContext) -> str:
    positions = _letters_or_skip(text)
    chosen = ctx.rng.sample(positions, change_count(len(positions), ctx))
    chars = list(text)
    for index in sorted(chosen):
        chars[index] = _random_letter(ctx.rng, chars[index], exclude=chars[index])
    return "".join(chars)


@transform_relation(
    id="char.delete",
    name="Delete random letters",
    description="Deletes 10% of the letters (at least one). The answer should not change.",
    ref="LLMorph 2",
    **_COMMON,
)
def delete(text: str, ctx: TransformContext) -> str:
    positions = _letters_or_skip(text)
    chosen = set(ctx.rng.sample(positions, change_count(len(positions), ctx)))
    return "".join(ch for i, ch in enumerate(text) if i not in chosen)


@transform_relation(
    id="char.leet",
    name="Leet speak",
    description=(
        "Writes 10% of the letters (at least one) in leet: a→4 b→8 e→3 g→9 i→1 o→0 s→5 t→7 "
        "z→2. Only letters with a leet form are candidates, and every word keeps a letter (so "
        "'it' never becomes the number '17'). The answer should not change."
    ),
    ref="LLMorph 3",
    **{**_COMMON, "preconditions": "the text has a letter with a leet form (a b e g i o s t z)"},
)
def leet(text: str, ctx: TransformContext) -> str:
    positions = _letters_or_skip(text)
    candidates = [i for i in positions if text[i].lower() in LEET]
    if not candidates:
        raise NotApplicable("no letter with a leet form (a b e g i o s t z)")
    count = min(len(candidates), change_count(len(positions), ctx))
    chars = list(text)
    changed = 0
    for index in ctx.rng.sample(candidates, len(candidates)):
        if changed == count:
            break
        chars[index] = LEET[chars[index].lower()]
        if _all_digits_word(chars, index):  # "it" → "17" would read as a number
            chars[index] = text[index]
            continue
        changed += 1
    if not changed:
        raise NotApplicable("every leet letter would turn a word into a number")
    return "".join(chars)


def _all_digits_word(chars: list[str], index: int) -> bool:
    """Whether the word around ``index`` has no letter left."""
    start = index
    while start > 0 and chars[start - 1].isalnum():
        start -= 1
    end = index
    while end + 1 < len(chars) and chars[end + 1].isalnum():
        end += 1
    return not any(ch.isalpha() for ch in chars[start : end + 1])


@transform_relation(
    id="char.insert",
    name="Insert random letters",
    description=(
        "Inserts a random letter right after 10% of the letters (at least one). The answer "
        "should not change."
    ),
    ref="LLMorph 4",
    **_COMMON,
)
def insert(text: str, ctx: TransformContext) -> str:
    positions = _letters_or_skip(text)
    chosen = set(ctx.rng.sample(positions, change_count(len(positions), ctx)))
    pieces = []
    for index, ch in enumerate(text):
        pieces.append(ch)
        if index in chosen:
            pieces.append(_random_letter(ctx.rng, ch))
    return "".join(pieces)


@transform_relation(
    id="char.add_spaces",
    name="Add spaces inside words",
    description=(
        "Splits words by inserting a space after 10% of the letters (at least one), only where "
        "another letter follows. The answer should not change."
    ),
    ref="LLMorph 5",
    **{**_COMMON, "preconditions": "the text has a word of at least two letters"},
)
def add_spaces(text: str, ctx: TransformContext) -> str:
    positions = _letters_or_skip(text)
    letters = set(positions)
    candidates = [i for i in positions if i + 1 in letters]
    if not candidates:
        raise NotApplicable("no word of two or more letters to split")
    chosen = set(
        ctx.rng.sample(candidates, min(len(candidates), change_count(len(positions), ctx)))
    )
    return "".join(ch + " " if i in chosen else ch for i, ch in enumerate(text))


@transform_relation(
    id="char.swap_neighbours",
    name="Swap neighbouring letters",
    description=(
        "Swaps 10% of the letters (at least one) with the different letter to their right in "
        "the same word; swaps never overlap. The answer should not change."
    ),
    ref="LLMorph 6",
    **{**_COMMON, "preconditions": "a word has two different neighbouring letters"},
)
def swap_neighbours(text: str, ctx: TransformContext) -> str:
    positions = _letters_or_skip(text)
    letters = set(positions)
    candidates = [i for i in positions if i + 1 in letters and text[i] != text[i + 1]]
    if not candidates:
        raise NotApplicable("no two different neighbouring letters to swap")
    wanted = change_count(len(positions), ctx)
    order = candidates[:]
    ctx.rng.shuffle(order)
    used: set[int] = set()
    chars = list(text)
    swaps = 0
    for index in order:
        if swaps == wanted:
            break
        if index in used or index + 1 in used:
            continue
        chars[index], chars[index + 1] = chars[index + 1], chars[index]
        used.update((index, index + 1))
        swaps += 1
    return "".join(chars)


def _shuffled_inner(word: str, rng: random.Random) -> str:
    inner = list(word[1:-1])
    rng.shuffle(inner)
    if inner == list(word[1:-1]):
        # The shuffle may land on the original order; a rotation of a run with two different
        # letters never does, so the word always changes.
        inner = inner[1:] + inner[:1]
    return word[0] + "".join(inner) + word[-1]


@transform_relation(
    id="char.shuffle_inner",
    name="Shuffle inner letters",
    description=(
        "Shuffles the inner letters of 10% of the words (at least one), keeping each word's "
        "first and last letter, its punctuation and all original spacing. The answer should "
        "not change."
    ),
    ref="LLMorph 7",
    **{**_COMMON, "preconditions": "a word of 4+ letters whose inner letters are not all equal"},
)
def shuffle_inner(text: str, ctx: TransformContext) -> str:
    mask = content_mask(text)
    words = [
        m
        for m in _WORD.finditer(text)
        if len(m.group()) >= 4
        and len(set(m.group()[1:-1])) > 1
        and not any(mask[m.start() : m.end()])
    ]
    if not words:
        raise NotApplicable("no word of four or more letters with inner letters to shuffle")
    chosen = ctx.rng.sample(words, change_count(len(words), ctx))
    chars = list(text)
    for match in sorted(chosen, key=lambda m: m.start()):
        chars[match.start() : match.end()] = _shuffled_inner(match.group(), ctx.rng)
    return "".join(chars)


# ---------------------------------------------------------------- nlpaug (LLMorph 126–128)

_NLPAUG_LOCK = threading.Lock()


def seeded_global_call(seed: int, call: Callable[[], Any]) -> Any:
    """Run ``call`` with ``random`` and ``numpy.random`` seeded from ``seed``, under a lock.

    nlpaug draws from both global generators; the lock keeps two threads from interleaving
    draws, and the previous states are restored so nobody else's sequence is disturbed.
    """
    import numpy as np

    derived = seed % (2**32)
    with _NLPAUG_LOCK:
        python_state = random.getstate()
        numpy_state = np.random.get_state()
        try:
            random.seed(derived)
            np.random.seed(derived)
            return call()
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def _split_words(text: str) -> list[str]:
    return text.split(" ")


def _join_words(words: list[str]) -> str:
    return " ".join(words)


@cache
def _augmenter(name: str, rate: float) -> Any:
    # Imported lazily: nlpaug pulls in torch, seconds of start-up nobody else should pay.
    common = {"tokenizer": _split_words, "reverse_tokenizer": _join_words}
    if name == "keyboard":
        from nlpaug.augmenter.char import KeyboardAug

        # No digits or symbols as typos: a stray digit could read as a number in a problem.
        return KeyboardAug(
            aug_char_p=rate,
            aug_word_p=rate,
            include_numeric=False,
            include_special_char=False,
            **common,
        )
    if name == "ocr":
        from nlpaug.augmenter.char import OcrAug

        return OcrAug(aug_char_p=rate, aug_word_p=rate, **common)
    raise ValueError(f"unknown nlpaug augmenter {name!r}")


def _can_change(augmenter: Any, word: str) -> bool:
    # Only words the augmenter can really alter are offered to it, so that 10% of *those* are
    # changed and the follow-up always differs from the source.
    if len(word) < augmenter.min_char:
        return False
    return any(ch in augmenter.model.model and augmenter.model.predict(ch) for ch in word)


def augment_words(text: str, ctx: TransformContext, name: str) -> str:
    """Run an nlpaug augmenter over the words of ``text`` it can change, in place.

    The augmenter sees those words joined by single spaces (so it never touches digits,
    punctuation, math or the original whitespace), and each word is put back where it was.
    """
    augmenter = _augmenter(name, float(ctx.params.get("rate", DEFAULT_RATE)))
    mask = content_mask(text)
    spans = [
        m
        for m in _WORD.finditer(text)
        if not any(mask[m.start() : m.end()]) and _can_change(augmenter, m.group())
    ]
    if not spans:
        raise NotApplicable(f"no word that nlpaug's {name} augmenter can change")
    words = [m.group() for m in spans]
    result = seeded_global_call(ctx.seed, lambda: augmenter.augment(_join_words(words)))
    augmented = result[0] if isinstance(result, list) else result
    new_words = _split_words(augmented)
    if len(new_words) != len(words):
        raise NotApplicable(f"nlpaug's {name} augmenter changed the number of words")
    if new_words == words:
        raise NotApplicable(f"nlpaug's {name} augmenter made no change")
    chars = list(text)
    for match, word in sorted(zip(spans, new_words, strict=True), key=lambda p: -p[0].start()):
        chars[match.start() : match.end()] = word
    return "".join(chars)


_LIBRARY = {**_COMMON, "kind": RelationKind.LIBRARY}


@transform_relation(
    id="char.keyboard_typos",
    name="Keyboard typos (nlpaug)",
    description=(
        "nlpaug KeyboardAug: in 10% of the words of 4+ letters (at least one), 10% of the "
        "letters become a neighbouring key on a QWERTY keyboard. The answer should not change."
    ),
    ref="LLMorph 126",
    **{**_LIBRARY, "preconditions": "a word of at least four letters"},
)
def keyboard_typos(text: str, ctx: TransformContext) -> str:
    return augment_words(text, ctx, "keyboard")


@transform_relation(
    id="char.ocr_errors",
    name="OCR errors (nlpaug)",
    description=(
        "nlpaug OcrAug: in 10% of the words (at least one), letters become look-alikes an OCR "
        "engine confuses (o→0, l→1, …). The answer should not change."
    ),
    ref="LLMorph 128",
    **{**_LIBRARY, "preconditions": "a word with a letter OCR engines confuse"},
)
def ocr_errors(text: str, ctx: TransformContext) -> str:
    return augment_words(text, ctx, "ocr")


@cache
def spelling_dictionary() -> dict[str, list[str]]:
    """nlpaug's English misspelling dictionary: correct word → its misspellings (sorted).

    Read through nlpaug's own ``Spelling`` model, one direction only (correct → misspelled).
    We do the sampling ourselves: importing ``SpellingAug`` would load ``transformers`` (many
    seconds), and the model stores candidates in set order, which changes between processes.
    """
    import nlpaug
    from nlpaug.model.word_dict import Spelling

    path = Path(nlpaug.__file__).parent / "res" / "word" / "spelling" / "spelling_en.txt"
    if not path.is_file():
        raise NotApplicable(f"nlpaug's spelling dictionary is missing ({path})")
    model = Spelling(str(path), include_reverse=False)
    return {
        word: sorted(set(misspellings) - {word, ""})
        for word, misspellings in model.dict.items()
        if set(misspellings) - {word, ""}
    }


def _plausible(word: str, misspelling: str) -> bool:
    # The dictionary holds natural noise, some of it a different word ("Their" → "Her's"): keep
    # typos that start with the same letter and are at most two edits away.
    from rapidfuzz.distance import Levenshtein

    return (
        misspelling[:1].lower() == word[:1].lower()
        and misspelling.isalpha()
        and Levenshtein.distance(word.lower(), misspelling.lower()) <= 2
    )


def _misspellings(word: str, dictionary: dict[str, list[str]]) -> list[str]:
    """Known misspellings of ``word`` (its capitalised form borrows the lower-case entries)."""
    candidates = list(dictionary.get(word, []))
    if word[:1].isupper() and word[1:].islower():
        candidates += [m[:1].upper() + m[1:] for m in dictionary.get(word.lower(), [])]
    return sorted({m for m in candidates if _plausible(word, m)})


@transform_relation(
    id="char.misspell",
    name="Common misspellings (nlpaug)",
    description=(
        "Uses nlpaug's English dictionary of real misspellings: 10% of the words that have a "
        "known misspelling (at least one) get one, chosen with the case's seed. The answer "
        "should not change."
    ),
    ref="LLMorph 127",
    **{**_LIBRARY, "preconditions": "a word with a known misspelling (nlpaug's dictionary)"},
)
def misspell(text: str, ctx: TransformContext) -> str:
    dictionary = spelling_dictionary()
    mask = content_mask(text)
    spans = [
        m
        for m in _WORD.finditer(text)
        if not any(mask[m.start() : m.end()]) and _misspellings(m.group(), dictionary)
    ]
    if not spans:
        raise NotApplicable("no word with a known misspelling")
    chosen = ctx.rng.sample(spans, change_count(len(spans), ctx))
    chars = list(text)
    for match in sorted(chosen, key=lambda m: -m.start()):
        chars[match.start() : match.end()] = ctx.rng.choice(
            _misspellings(match.group(), dictionary)
        )
    return "".join(chars)
