"""Pure text functions of the rrb family: preprocessing, split-modify-join, interleaving, overload.

Every encoder takes the raw problem text, preprocesses it (in order: drop LaTeX comments,
space out backslashes after ``b n t a f r``, flatten newlines to ``"; "``) and returns the
transformed text right-stripped. Every inverse takes that transformed text and gives back the
preprocessed problem: ``inverse(encode(x)).rstrip() == preprocess(x).rstrip()``. Inverses never
preprocess again (a reversed ``\\frac`` must stay ``carf\\``).

Where the format itself loses information (documented per function), the inverse is exact for
every text except that edge case; the tests pin both the normal case and the edge.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from itertools import cycle, islice

from relations.base import NotApplicable

# ---------------------------------------------------------------- preprocessing

# A "%" not escaped as "\%" starts a LaTeX comment that runs to the end of its line.
_LATEX_COMMENT = re.compile(r"(?<!\\)%[^\n]*")
# A backslash right after one of these letters: reversing the text could turn the pair into an
# escape sequence ("\b", "\n", "\t", "\a", "\f", "\r"), so a space goes in between.
_ESCAPE_HAZARD = re.compile(r"(?<=[bntafr])\\")


def preprocess(text: str) -> str:
    """The benchmark's preprocessing: comments dropped, escape hazards spaced, newlines → ``"; "``.

    Nothing is stripped here. ``"a  % note\\nb"`` → ``"a  ; b"``;
    ``"$\\omega\\neq 1$"`` → ``"$\\omega \\neq 1$"``.
    """
    text = _LATEX_COMMENT.sub("", text)
    text = _ESCAPE_HAZARD.sub(lambda _: " \\", text)
    return text.replace("\n", "; ")


def finish(transformed: str) -> str:
    """The last step of every rrb encoder: right-strip (leading whitespace is kept)."""
    return transformed.rstrip()


def require_text(text: str, what: str = "problem") -> None:
    """Raise NotApplicable when there is nothing left to transform."""
    if not text.strip():
        raise NotApplicable(f"the {what} text is empty after preprocessing")


# ---------------------------------------------------------------- split-modify-join


def _reverse_word_order(text: str) -> str:
    # Alternating whitespace runs and words; the words are reversed into the word slots, so
    # every whitespace run (leading ones included) keeps its place.
    tokens = re.findall(r"\s+|\S+", text)
    words = iter([token for token in tokens if not token[0].isspace()][::-1])
    return "".join(token if token[0].isspace() else next(words) for token in tokens)


def word_reversal(text: str) -> str:
    """Reverse the order of the whitespace-separated words; whitespace runs stay in place.

    ``"Find  x, then y."`` → ``"y.  then x, Find"``.
    """
    return finish(_reverse_word_order(preprocess(text)))


def inverse_word_reversal(transformed: str) -> str:
    """Word reversal is its own inverse (the trailing whitespace lost to rstrip stays lost)."""
    return _reverse_word_order(transformed)


def _reverse_sentence_order(text: str) -> str:
    pieces = text.split(".")
    if len(pieces) > 1 and pieces[-1] == "":
        # A closing period stays at the end: reverse the sentences before it.
        return ".".join([*pieces[-2::-1], ""])
    return ".".join(pieces[::-1])


def sentence_reversal(text: str) -> str:
    """Split on every ``.`` (decimals too), reverse the pieces, join with ``.``.

    A closing period stays last: ``"A. B."`` → ``" B.A."``; ``"A. B"`` → ``" B.A"``.
    """
    return finish(_reverse_sentence_order(preprocess(text)))


def inverse_sentence_reversal(transformed: str) -> str:
    """The same reversal again.

    Exact unless the text's first piece (before its first ``.``) ends in whitespace or is empty:
    that piece ends the transformed text, and the final rstrip erases its trailing whitespace
    (``"A .B"`` and ``"A.B"`` both become ``"B.A"``).
    """
    return _reverse_sentence_order(transformed)


def _reverse_pieces(text: str) -> str:
    return " ".join(piece[::-1] for piece in text.split(" "))


def split_reversal(text: str) -> str:
    """Reverse the characters of every piece between single spaces (``text.split(" ")``).

    Runs of spaces give empty pieces and survive as they are; tabs stay inside their piece.
    ``"Let x  be"`` → ``"teL x  eb"``.
    """
    return finish(_reverse_pieces(preprocess(text)))


def inverse_split_reversal(transformed: str) -> str:
    """Split reversal is its own inverse.

    Exact unless the last non-empty piece starts with whitespace other than a space (a tab):
    reversed, that whitespace ends the text and the final rstrip removes it.
    """
    return _reverse_pieces(transformed)


def _swap_halves(piece: str) -> str:
    half = len(piece) // 2
    return piece[half:] + piece[:half]


def _unswap_halves(piece: str) -> str:
    # The front half was the shorter one, so it is the last len//2 characters now.
    cut = len(piece) - len(piece) // 2
    return piece[cut:] + piece[:cut]


def word_split_swap(text: str) -> str:
    """Cut every piece between single spaces at ``len // 2`` and swap the halves.

    ``"Let"`` → ``"etL"``; ``"ABCD"`` → ``"CDAB"``; one-character pieces are unchanged.
    """
    return finish(" ".join(_swap_halves(piece) for piece in preprocess(text).split(" ")))


def inverse_word_split_swap(transformed: str) -> str:
    """Move the last ``len // 2`` characters of every piece back to its front.

    Exact unless the last non-empty piece holds non-space whitespace (a tab) that the swap moved
    to its end, where the final rstrip removes it.
    """
    return " ".join(_unswap_halves(piece) for piece in transformed.split(" "))


# ---------------------------------------------------------------- interleaving (problem A + B)

LINE_WIDTH = 60
TAG_A = "<Problem A> "
TAG_B = "<Problem B> "


def _cycled(items: Sequence[str], length: int) -> list[str]:
    """``items`` repeated from its start until it has ``length`` elements."""
    return list(islice(cycle(items), length))


def _alternate(first: Sequence[str], second: Sequence[str]) -> list[str]:
    length = max(len(first), len(second))
    pairs = zip(_cycled(first, length), _cycled(second, length), strict=True)
    return [item for pair in pairs for item in pair]


def interleave_word(text_a: str, text_b: str) -> str:
    """Alternate the words (``str.split()``) of A and B, A first, joined with single spaces.

    The shorter word list is cycled from its first word: ``("a b c", "X")`` → ``"a X b X c X"``.
    """
    words_a, words_b = preprocess(text_a).split(), preprocess(text_b).split()
    if not words_a or not words_b:
        raise NotApplicable("interleaving needs two non-empty problems")
    return finish(" ".join(_alternate(words_a, words_b)))


def inverse_interleave_word(transformed: str, n_words_a: int | None = None) -> str:
    """Problem A's words (every other word, from the first), joined with single spaces.

    Not a pure inverse, by necessity: the word split forgets A's whitespace (double spaces, tabs
    and leading spaces come back as single spaces), and when A was the shorter problem its words
    repeat, which only ``n_words_a`` can undo (``"ab"`` + ``"w x y z"`` and ``"ab ab"`` +
    ``"w x y z"`` give the same text). Without ``n_words_a``, A is taken to be the longer one.
    """
    words_a = transformed.split(" ")[0::2]
    if n_words_a is not None:
        words_a = words_a[:n_words_a]
    return " ".join(words_a)


def interleave_symbol(text_a: str, text_b: str) -> str:
    """Alternate the characters of A and B (whitespace included, nothing stripped), A first.

    The shorter text is cycled from its start: ``("abc", "XY")`` → ``"aXbYcX"``.
    """
    chars_a, chars_b = preprocess(text_a), preprocess(text_b)
    if not chars_a or not chars_b:
        raise NotApplicable("interleaving needs two non-empty problems")
    return finish("".join(_alternate(chars_a, chars_b)))


def inverse_interleave_symbol(transformed: str, len_a: int | None = None) -> str:
    """Problem A: the characters at even positions, cut to ``len_a`` when given.

    When A was the shorter text its characters repeat, and the transformed text alone cannot say
    where A ends (``"ab"`` + ``"wxyz"`` and ``"abab"`` + ``"wxyz"`` interleave identically), so
    pass ``len_a``; without it, A is taken to be at least as long as B.
    """
    chars_a = transformed[0::2]
    return chars_a if len_a is None else chars_a[:len_a]


def _line_chunks(text: str) -> list[str]:
    return [text[start : start + LINE_WIDTH] for start in range(0, len(text), LINE_WIDTH)]


def interleave_line(text_a: str, text_b: str) -> str:
    """60-character chunks of A and B, tagged ``<Problem A> `` / ``<Problem B> ``, alternating.

    Each problem is right-stripped before chunking; the shorter chunk list is cycled; one chunk
    per line, lines joined with ``\\n``.
    """
    chunks_a = [TAG_A + chunk for chunk in _line_chunks(preprocess(text_a).rstrip())]
    chunks_b = [TAG_B + chunk for chunk in _line_chunks(preprocess(text_b).rstrip())]
    if not chunks_a or not chunks_b:
        raise NotApplicable("interleaving needs two non-empty problems")
    return finish("\n".join(_alternate(chunks_a, chunks_b)))


def _smallest_period(items: Sequence[str]) -> int:
    for period in range(1, len(items) + 1):
        if all(items[index] == items[index % period] for index in range(len(items))):
            return period
    return len(items)


def inverse_interleave_line(transformed: str) -> str:
    """Problem A from its tagged lines (the even lines), stopping where A starts to repeat.

    A's chunks are 60 characters except its last, so the first shorter chunk ends A. When A's
    length is a multiple of 60 the repetition is found as the smallest period of the chunk list
    (ambiguous only for a text made of one 60-character block said several times).
    """
    chunks = [line[len(TAG_A) :] for line in transformed.split("\n")[0::2]]
    short = next((i for i, chunk in enumerate(chunks) if len(chunk) < LINE_WIDTH), None)
    count = short + 1 if short is not None else _smallest_period(chunks)
    return "".join(chunks[:count])


# ---------------------------------------------------------------- contextual overload

TARGET_MARKER = "TARGET PROBLEM: "

# Our own worked examples: short, self-contained, unrelated to any benchmark item.
SOLVED_PROBLEMS: tuple[tuple[str, str], ...] = (
    (
        "A bakery sells muffins in boxes of 6. How many boxes are needed for 45 muffins?",
        "45 / 6 = 7.5, and a part box still has to be a box, so we round up to 8. "
        "The answer is \\boxed{8}.",
    ),
    (
        "What is the remainder when $2^{10}$ is divided by 7?",
        "Powers of 2 modulo 7 repeat with period 3: 2, 4, 1. Since 10 = 3 \\cdot 3 + 1, "
        "$2^{10} \\equiv 2$. The answer is \\boxed{2}.",
    ),
    (
        "A rectangle has perimeter 30 and one side of length 6. What is its area?",
        "The two sides add up to 15, so the other side is 9 and the area is 6 \\cdot 9 = 54. "
        "The answer is \\boxed{54}.",
    ),
    (
        "How many positive divisors does 36 have?",
        "$36 = 2^2 \\cdot 3^2$, so it has (2+1)(2+1) = 9 divisors. The answer is \\boxed{9}.",
    ),
    (
        "A cyclist rides at 18 km/h for 40 minutes. How far does she travel, in km?",
        "40 minutes is 2/3 of an hour, and 18 \\cdot 2/3 = 12. The answer is \\boxed{12}.",
    ),
    (
        "Solve $3x - 7 = 11$ for $x$.",
        "Add 7 to both sides: $3x = 18$, then divide by 3: $x = 6$. The answer is \\boxed{6}.",
    ),
    (
        "What is the sum of the interior angles of a hexagon, in degrees?",
        "An n-gon's interior angles sum to (n - 2) \\cdot 180; for n = 6 that is 720. "
        "The answer is \\boxed{720}.",
    ),
    (
        "Two fair coins are tossed. What is the probability that both show heads?",
        "The four outcomes are equally likely and one of them is two heads. "
        "The answer is \\boxed{\\frac{1}{4}}.",
    ),
    (
        "What is the least common multiple of 8 and 12?",
        "$8 = 2^3$ and $12 = 2^2 \\cdot 3$, so the LCM is $2^3 \\cdot 3 = 24$. "
        "The answer is \\boxed{24}.",
    ),
    (
        "A shirt costs 40 dollars and is discounted by 15%. What is the new price in dollars?",
        "15% of 40 is 6, and 40 - 6 = 34. The answer is \\boxed{34}.",
    ),
    (
        "How many ways can 4 different books be arranged on a shelf?",
        "There are 4 choices for the first place, 3 for the next, and so on: "
        "4 \\cdot 3 \\cdot 2 \\cdot 1 = 24. The answer is \\boxed{24}.",
    ),
    (
        "The mean of five numbers is 8. Four of them are 5, 7, 9 and 10. What is the fifth?",
        "The five numbers add up to 40, and 5 + 7 + 9 + 10 = 31, so the fifth is 9. "
        "The answer is \\boxed{9}.",
    ),
)


def context_saturation(text: str, n_problems: int = 6, rng: random.Random | None = None) -> str:
    """``n_problems`` unrelated worked examples (seeded order), then ``TARGET PROBLEM: <text>``.

    Blocks are separated by blank lines; the preprocessed problem has no newline, so it is
    always the whole last block.
    """
    problem = preprocess(text)
    if n_problems < 1:
        raise ValueError("n_problems must be at least 1")
    order = list(range(len(SOLVED_PROBLEMS)))
    (rng or random.Random(0)).shuffle(order)
    blocks = []
    for number, index in enumerate(_cycled(order, n_problems), start=1):
        question, solution = SOLVED_PROBLEMS[index]
        blocks.append(f"Worked example {number}.\nProblem: {question}\nSolution: {solution}")
    blocks.append(TARGET_MARKER + problem)
    return finish("\n\n".join(blocks))


def inverse_context_saturation(transformed: str) -> str:
    """The target problem: the last blank-line-separated block, without its marker."""
    last = transformed.rsplit("\n\n", 1)[-1]
    return last.removeprefix(TARGET_MARKER)


_PROBLEM_LABEL = re.compile(r"^Problem \d+: ")


def sequential_overload(text: str, others: Sequence[str]) -> str:
    """``Problem 1: …`` to ``Problem k: …`` from ``others``, then the source as ``Problem k+1``.

    Every problem is preprocessed (so none holds a newline); blocks are separated by blank lines.
    """
    problems = [preprocess(other) for other in others]
    if not problems:
        raise NotApplicable("sequential overload needs at least one other sample in the batch")
    problems.append(preprocess(text))
    blocks = [f"Problem {number}: {problem}" for number, problem in enumerate(problems, start=1)]
    return finish("\n\n".join(blocks))


def inverse_sequential_overload(transformed: str) -> str:
    """The last problem (the graded source), without its ``Problem N: `` label."""
    last = transformed.rsplit("\n\n", 1)[-1]
    return _PROBLEM_LABEL.sub("", last, count=1)
