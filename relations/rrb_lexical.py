"""The lexical rrb perturbations: ``not not`` insertion, WordNet opposites and identity wrappers.

All three leave math spans (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``) untouched. Opposites and
wrappers declare their substitutions in a ``defyn{let "X" mean "Y", …}`` block inserted at the
whitespace nearest the middle of the text, which is what their inverses read back.

There is no part-of-speech tagger here (NLTK's tagger data cannot be installed), so adjectives,
numerals and nouns come from our own word lists and suffix rules; opposites asks WordNet which
words are verbs/adjectives with antonyms.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence

from relations.base import NotApplicable
from relations.rrb_text import finish, preprocess, require_text

# ---------------------------------------------------------------- tokens outside math

MATH_SPAN = re.compile(r"\$\$.+?\$\$|(?<!\\)\$.+?(?<!\\)\$|\\\(.+?\\\)|\\\[.+?\\\]")
# A word not glued to a LaTeX command ("\frac") or to other word characters.
WORD = re.compile(r"(?<![\w\\])[A-Za-z]+(?:['-][A-Za-z]+)*(?!\w)")
NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:[.,]\d+)*(?!\w)")
TOKEN = re.compile(f"{NUMBER.pattern}|{WORD.pattern}")


def prose_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the stretches of ``text`` outside math spans."""
    position = 0
    for match in MATH_SPAN.finditer(text):
        yield position, match.start()
        position = match.end()
    yield position, len(text)


def prose_tokens(text: str, pattern: re.Pattern[str] = TOKEN) -> Iterator[re.Match[str]]:
    """Matches of ``pattern`` outside math spans, in text order (positions in ``text``)."""
    for start, end in prose_spans(text):
        yield from pattern.finditer(text, start, end)


def replace_prose_tokens(
    text: str, pattern: re.Pattern[str], replace: Callable[[str], str | None]
) -> str:
    """Replace the tokens outside math spans for which ``replace`` returns a string (one pass)."""
    pieces, position = [], 0
    for match in prose_tokens(text, pattern):
        replacement = replace(match.group())
        if replacement is not None:
            pieces.append(text[position : match.start()] + replacement)
            position = match.end()
    pieces.append(text[position:])
    return "".join(pieces)


# ---------------------------------------------------------------- word lists (our own)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


NUMBER_WORDS = _words(
    """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
    hundred thousand million billion dozen half
    """
)

ADJECTIVES = _words(
    """
    positive negative nonnegative nonpositive nonzero real complex rational irrational prime
    composite even odd whole natural integral least greatest smallest largest biggest highest
    lowest longest shortest maximal minimal maximum minimum possible impossible distinct different
    same equal unequal identical similar congruent parallel perpendicular acute obtuse right
    isosceles equilateral scalene regular convex concave circular rectangular triangular cubic
    linear quadratic consecutive adjacent opposite total entire exact approximate random fair
    biased independent first second third fourth fifth last next previous final initial other
    remaining new old young small large big long short tall wide narrow high low heavy light fast
    slow hot cold full empty red blue green white black yellow purple orange brown gray grey happy
    sad good bad true false simple finite infinite unique certain common special perfect ordered
    unordered arithmetic geometric harmonic standard digital annual daily weekly monthly hourly
    """
)
_ADJECTIVE_SUFFIXES = ("ous", "ful", "able", "ible", "ical", "less")
_NOT_ADJECTIVES = _words("unless table cable fable bible vegetable variable")

NOUNS = _words(
    """
    number integer digit sum product difference quotient remainder ratio fraction percent area
    volume perimeter radius diameter circle triangle square rectangle polygon side angle point line
    segment length width height distance speed time rate price cost money dollar cent coin apple
    orange book student teacher class school box ball marble card die dice game team player person
    people friend car train bus hour minute second day week month year meter kilometer mile gram
    kilogram liter cup bag pencil pen candy cookie cake pizza slice tree garden farm farmer animal
    dog cat bird fish egg shop store worker machine pool water tank page letter word sequence term
    set function graph grid board chair table room house ticket bottle jar flower plant seed river
    road city town village child children boy girl man men woman women family salary wage job
    task bridge wall floor window door step stair piece part group row column
    """
)
_NOUN_SUFFIXES = ("tion", "sion", "ment", "ness", "ity")


def is_numeral(token: str) -> bool:
    return bool(NUMBER.fullmatch(token)) or token.lower() in NUMBER_WORDS


def is_adjective(token: str) -> bool:
    lower = token.lower()
    if lower in ADJECTIVES:
        return True
    return (
        len(lower) >= 6
        and lower.isalpha()
        and lower not in _NOT_ADJECTIVES
        and lower.endswith(_ADJECTIVE_SUFFIXES)
    )


def is_noun(token: str) -> bool:
    """A lower-case common noun from our list (plural forms too) or with a noun suffix."""
    if token != token.lower() or not token.isalpha():
        return False
    if token in NOUNS or (token.endswith("s") and token[:-1] in NOUNS):
        return True
    if token.endswith("es") and token[:-2] in NOUNS:
        return True
    return len(token) >= 6 and token.endswith(_NOUN_SUFFIXES)


# ---------------------------------------------------------------- not not

DOUBLE_NEGATION = "not not "


def _negatable(token: str) -> bool:
    return is_numeral(token) or is_adjective(token)


def not_not(text: str) -> str:
    """Insert ``"not not "`` before adjectives and numerals outside math spans.

    The eligible tokens (adjectives and numerals, in text order) get one before the first, third,
    fifth, … of them, and the first adjective always gets one: ``"Two red balls and 3 blue ones"``
    → ``"not not Two not not red balls and not not 3 blue ones"``.
    """
    problem = preprocess(text)
    if DOUBLE_NEGATION in problem:
        raise NotApplicable("the problem already says 'not not'; the insertion would be ambiguous")
    eligible = [m for m in prose_tokens(problem) if _negatable(m.group())]
    if not eligible:
        raise NotApplicable("no adjective or numeral outside math to negate twice")
    chosen = set(range(0, len(eligible), 2))
    first_adjective = next((i for i, m in enumerate(eligible) if not is_numeral(m.group())), None)
    if first_adjective is not None:
        chosen.add(first_adjective)
    pieces, position = [], 0
    for index in sorted(chosen):
        start = eligible[index].start()
        pieces.append(problem[position:start] + DOUBLE_NEGATION)
        position = start
    pieces.append(problem[position:])
    return finish("".join(pieces))


def inverse_not_not(transformed: str) -> str:
    """Delete every ``"not not "`` (the source had none: not_not refuses such texts)."""
    return transformed.replace(DOUBLE_NEGATION, "")


# ---------------------------------------------------------------- defyn blocks

DEFYN = "defyn{"
_BLOCK = re.compile(r" defyn\{([^{}]*)\}")
_ENTRY = re.compile(r'let "([^"]*)" mean "([^"]*)"')


def defyn_block(mapping: Sequence[tuple[str, str]]) -> str:
    """``defyn{let "X" mean "Y", …}`` for (X, Y) pairs: X in the text stands for Y."""
    return DEFYN + ", ".join(f'let "{shown}" mean "{meant}"' for shown, meant in mapping) + "}"


def insert_block(text: str, block: str) -> str:
    """Insert ``" " + block`` at the whitespace nearest the middle of ``text``.

    Whitespace outside math spans is preferred; ties go to the earlier position; a text without
    whitespace gets the block at its end.
    """
    prose = [i for start, end in prose_spans(text) for i in range(start, end) if text[i].isspace()]
    candidates = prose or [i for i, char in enumerate(text) if char.isspace()]
    if not candidates:
        return f"{text} {block}"
    middle = min(candidates, key=lambda i: (abs(2 * i - len(text)), i))
    return f"{text[:middle]} {block}{text[middle:]}"


def remove_block(transformed: str) -> tuple[str, list[tuple[str, str]]]:
    """(the text without its defyn block, the declared (shown, meant) pairs)."""
    match = _BLOCK.search(transformed)
    if match is None:
        raise ValueError("no defyn{…} block found")
    pairs = _ENTRY.findall(match.group(1))
    return transformed[: match.start()] + transformed[match.end() :], pairs


def _refuse_existing_block(problem: str) -> None:
    if DEFYN in problem:
        raise NotApplicable("the problem already contains 'defyn{'; the mapping would be ambiguous")


def _word_occurs(word: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text, re.I) is not None


# ---------------------------------------------------------------- opposites (WordNet)


def _antonym(word: str, problem: str, taken: set[str]) -> str | None:
    """A single-word WordNet antonym of a verb/adjective ``word`` that the text never uses."""
    from relations.wordnet import antonyms, pos_candidates

    parts = pos_candidates(word)
    if not parts or parts[0] == "n":  # mostly a noun ("number", "sum"): leave it
        return None
    for pos in (p for p in parts if p in ("a", "v")):
        for antonym in antonyms(word, pos, indirect=False):
            usable = antonym.isalpha() and antonym == antonym.lower() and antonym not in taken
            if usable and not _word_occurs(antonym, problem):
                return antonym
    return None


def opposites(text: str, max_terms: int = 3) -> str:
    """Replace up to ``max_terms`` verbs/adjectives by a WordNet antonym and declare it.

    Candidates are lower-case prose words, in text order, whose most frequent use is not a noun;
    an antonym already present in the text is never used (so the mapping can be undone). Every
    occurrence is replaced and the block says ``let "<antonym>" mean "<original>"``.
    Needs WordNet (``relations.wordnet.load_wordnet``); raises RuntimeError without it.
    """
    from relations.wordnet import load_wordnet

    load_wordnet()
    problem = preprocess(text)
    require_text(problem)
    _refuse_existing_block(problem)
    mapping: dict[str, str] = {}
    seen: set[str] = set()
    for match in prose_tokens(problem, WORD):
        word = match.group()
        if len(mapping) >= max_terms:
            break
        if word in seen or word != word.lower() or not word.isalpha() or len(word) < 3:
            continue
        seen.add(word)
        antonym = _antonym(word, problem, set(mapping.values()))
        if antonym is not None:
            mapping[word] = antonym
    if not mapping:
        raise NotApplicable("no verb or adjective with a usable WordNet antonym")
    swapped = replace_prose_tokens(problem, WORD, mapping.get)
    block = defyn_block([(antonym, word) for word, antonym in mapping.items()])
    return finish(insert_block(swapped, block))


def inverse_opposites(transformed: str) -> str:
    """Remove the defyn block and put every declared word back (prose only, whole words)."""
    text, pairs = remove_block(transformed)
    meant = dict(pairs)
    return replace_prose_tokens(text, WORD, meant.get)


# ---------------------------------------------------------------- wrappers


def wrappers(text: str, rng: random.Random | None = None, max_terms: int = 3) -> str:
    """Wrap up to ``max_terms`` nouns/numbers as ``k(token)`` (k from 2 to 9) and declare them.

    Which eligible tokens (distinct, outside math) and which k are drawn from ``rng`` (default:
    seeded with 0); every occurrence of a chosen token is wrapped; the block says
    ``let "k(token)" mean "token"``. A wrapped form already present in the text is never used.
    """
    rng = rng or random.Random(0)
    problem = preprocess(text)
    require_text(problem)
    _refuse_existing_block(problem)
    eligible = list(
        dict.fromkeys(
            m.group()
            for m in prose_tokens(problem, TOKEN)
            if NUMBER.fullmatch(m.group()) or is_noun(m.group())
        )
    )
    if not eligible:
        raise NotApplicable("no noun or number outside math to wrap")
    chosen = sorted(rng.sample(eligible, min(max_terms, len(eligible))), key=eligible.index)
    mapping: dict[str, str] = {}
    for token in chosen:
        for _ in range(8):
            wrapped = f"{rng.randint(2, 9)}({token})"
            if wrapped not in problem:
                mapping[token] = wrapped
                break
    if not mapping:
        raise NotApplicable("every wrapped form already occurs in the text")
    wrapped_text = replace_prose_tokens(problem, TOKEN, mapping.get)
    block = defyn_block([(wrapped, token) for token, wrapped in mapping.items()])
    return finish(insert_block(wrapped_text, block))


def inverse_wrappers(transformed: str) -> str:
    """Remove the defyn block and unwrap every declared ``k(token)``."""
    text, pairs = remove_block(transformed)
    if not pairs:
        return text
    meant = dict(pairs)
    pattern = re.compile("|".join(re.escape(shown) for shown in sorted(meant, key=len)[::-1]))
    return pattern.sub(lambda match: meant[match.group()], text)
