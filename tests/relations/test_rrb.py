"""rrb.*: exact outputs worked by hand from the benchmark's rules, inverses, seeds, skips and the follow-up shape."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.tasks import BUILTIN_TASKS
from core.types import Sample
from relations.apply import SkippedFollowUp, generate_followups
from relations.base import Expectation, NotApplicable, RelationKind
from relations.registry import get_relation, list_relations
from relations.requirements import CHECKS, wordnet_status
from relations.rrb import (
    context_saturation,
    interleave_line,
    interleave_symbol,
    interleave_word,
    inverse_context_saturation,
    inverse_interleave_line,
    inverse_interleave_symbol,
    inverse_interleave_word,
    inverse_not_not,
    inverse_opposites,
    inverse_rail_fence,
    inverse_rectangle_perimeter,
    inverse_sentence_reversal,
    inverse_sequential_overload,
    inverse_snake_horizontal,
    inverse_snake_vertical,
    inverse_split_reversal,
    inverse_word_reversal,
    inverse_word_split_swap,
    inverse_wrappers,
    not_not,
    opposites,
    preprocess,
    rail_fence,
    rectangle_perimeter,
    sentence_reversal,
    sequential_overload,
    snake_horizontal,
    snake_vertical,
    split_reversal,
    word_reversal,
    word_split_swap,
    wrappers,
)

RRB_IDS = {
    "rrb.word_reversal",
    "rrb.sentence_reversal",
    "rrb.split_reversal",
    "rrb.word_split_swap",
    "rrb.interleave_word",
    "rrb.interleave_symbol",
    "rrb.interleave_line",
    "rrb.rail_fence",
    "rrb.rectangle_perimeter",
    "rrb.snake_vertical",
    "rrb.snake_horizontal",
    "rrb.not_not",
    "rrb.opposites",
    "rrb.wrappers",
    "rrb.context_saturation",
    "rrb.sequential_overload",
}

# Our own varied problems: LaTeX (escape hazards, \frac, \( \)), decimals, newlines, periods,
# repeated spaces, tabs and % comments.
TEXTS = [
    "Let $\\omega\\neq 1$ be a root of $x^3=1$. Compute "
    "$\\frac{1}{1+\\omega}+\\frac{1}{1+\\omega^2}$.",
    "Use \\(a\\) and \\(b\\) with \\(a+b=10\\). What is the largest value of \\(ab\\)?",
    "A circle has radius 3.14 cm.\nIts area is $\\pi r^2$.\nRound to 2 decimal places.",
    "Tom has 3 red apples.  He buys  5 more.\tHow many apples does he have now?",
    "Compute $x$ % the unknown\nwhere $x = 2^{10}$   % a note\nand report it.",
    "The price rose by 20\\% in May. What was the old price if the new one is 60 dollars?",
    "  Leading spaces first, then text; and a final period.",
    "Trailing spaces and a newline   \n",
    "Five friends share 2 large pizzas equally, and each pizza has 8 slices",
    "$$\\sum_{n=1}^{10} n$$ equals what? Give a whole number.",
    "A rectangular garden is 12.5 m long and 8 m wide.\n\nA path 1 m wide runs around it. "
    "What is the area of the path, in square meters?",
    "Solve for $t$: $\\tan t = 1$ with $0 < t < \\pi/2$ (answer in radians).",
]
PARTNER = "A bus leaves at 9 am and drives 150 km at a steady 50 km/h. When does it arrive?"


def _contract(inverse, transformed: str, text: str) -> None:
    assert inverse(transformed).rstrip() == preprocess(text).rstrip()


def _first(relation_id: str, text: str, **kwargs):
    sample = Sample({"problem": text})
    return generate_followups(
        get_relation(relation_id), sample, BUILTIN_TASKS["math"], ["problem"], **kwargs
    )[0]


# ---------------------------------------------------------------- preprocessing (the rules verbatim)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  % note\nb", "a  ; b"),  # the comment goes, the spaces before it and the break stay
        ("x\n% only a comment\ny", "x; ; y"),  # a comment-only line leaves an empty line
        ("50\\% off % but this goes", "50\\% off "),  # an escaped percent is text
        ("$\\omega\\neq 1$", "$\\omega \\neq 1$"),
        ("\\(a\\)", "\\(a \\)"),
        ("$s+\\frac{1}{2}$", "$s+\\frac{1}{2}$"),  # after '+': untouched
        ("$AB\\cdot CD$", "$AB\\cdot CD$"),  # after an upper-case letter: untouched
        ("$1\\le b\\times r\\to f\\in$", "$1\\le b \\times r \\to f \\in$"),
        ("one\ntwo\n", "one; two; "),  # nothing is stripped at this stage
        ("a%x\n\\beta", "a; \\beta"),  # comments go before spacing and flattening
    ],
)
def test_preprocess_follows_the_spec(text, expected):
    assert preprocess(text) == expected


# ---------------------------------------------------------------- split-modify-join


def test_word_reversal_keeps_whitespace_runs_in_place():
    assert word_reversal("Find  x, then y.") == "y.  then x, Find"
    assert word_reversal("  a b") == "  b a"  # leading whitespace is kept
    assert word_reversal("a\tb c") == "c\tb a"
    assert word_reversal("a b \n") == "; b a"  # "a b ; " → "; b a " → right-stripped


def test_sentence_reversal_splits_on_every_period():
    assert sentence_reversal("A. B.") == " B.A."  # a closing period stays last
    assert sentence_reversal("One. Two. Three") == " Three. Two.One"
    assert sentence_reversal("Pi is 3.14. Find r") == " Find r.14.Pi is 3"
    assert sentence_reversal("A. B. ") == " . B.A"  # the trailing " " is a piece; then rstrip
    assert sentence_reversal("No period here") == "No period here"


def test_split_reversal_splits_on_single_spaces():
    assert split_reversal("Let x  be") == "teL x  eb"
    assert split_reversal("ab\tcd ef") == "dc\tba fe"  # the tab stays inside its piece
    assert split_reversal("$\\frac{1}{2}$") == "$}2{}1{carf\\$"
    # Unprocessed, "at\b" would reverse to "b\ta", which holds "\t"; preprocessed it cannot.
    assert split_reversal("at\\b") == "ta b\\"


def test_word_split_swap_puts_the_longer_half_first():
    assert word_split_swap("Let") == "etL"
    assert word_split_swap("ABCD") == "CDAB"
    assert word_split_swap("Let x  be") == "etL x  eb"
    assert word_split_swap("Find $x$.") == "ndFi $.$x"


# ---------------------------------------------------------------- interleaving


def test_interleave_word_cycles_the_shorter_problem():
    assert interleave_word("a b c", "X") == "a X b X c X"
    assert interleave_word("a", "X  Y\tZ") == "a X a Y a Z"
    assert interleave_word("Find  x\nnow", "Why?") == "Find Why? x; Why? now Why?"


def test_interleave_symbol_uses_every_character():
    assert interleave_symbol("abc", "XY") == "aXbYcX"
    assert interleave_symbol("ab ", "XYZW") == "aXbY ZaW"
    assert interleave_symbol("ab  ", "X") == "aXbX X X"
    assert interleave_symbol("x ", "y ") == "xy"  # "xy  " right-stripped


def test_interleave_line_tags_sixty_character_chunks():
    a_text = "x" * 130
    expected = "\n".join(
        [
            "<Problem A> " + "x" * 60,
            "<Problem B> B problem",
            "<Problem A> " + "x" * 60,
            "<Problem B> B problem",
            "<Problem A> " + "x" * 10,
            "<Problem B> B problem",
        ]
    )
    assert interleave_line(a_text, "B problem   ") == expected  # B is right-stripped first
    assert interleave_line("short", "y" * 61) == (
        "<Problem A> short\n<Problem B> " + "y" * 60 + "\n<Problem A> short\n<Problem B> y"
    )


def test_interleave_needs_two_non_empty_problems():
    for interleave in (interleave_word, interleave_symbol, interleave_line):
        with pytest.raises(NotApplicable):
            interleave("a problem", "% only a comment")
    for interleave in (interleave_word, interleave_line):  # these drop whitespace
        with pytest.raises(NotApplicable):
            interleave(" \t ", "a problem")


# ---------------------------------------------------------------- grids


def test_rail_fence_zigzags_over_three_rails():
    assert rail_fence("Hello") == "GRID START\nH...o\n.e.l.\n..l..\nGRID END"
    assert rail_fence("a.b") == "GRID START\na..\n...\n..b\nGRID END"


def test_rectangle_perimeter_writes_clockwise_from_the_top_left():
    # n = 8: H = 3, W = 3, perimeter 8; top "abc", right "de", bottom "fg" leftwards, left "h".
    assert rectangle_perimeter("abcdefgh") == "GRID START\nabc\nh.d\ngfe\nGRID END"
    # n = 2: H = 3, W = 2, perimeter 6: padded with four spaces.
    assert rectangle_perimeter("Hi") == "GRID START\nHi\n  \n  \nGRID END"
    rows = rectangle_perimeter("x" * 20).split("\n")[1:-1]  # H = 3, W = ceil(18 / 2) = 9
    assert rows == ["x" * 9, "x" + "." * 7 + "x", "x" * 9]


def test_snake_vertical_fills_columns_down_then_up():
    # Column 1 runs upward from the bottom, so the top rows stay short.
    assert snake_vertical("abcdefgh") == "GRID START\na\nb\nch\ndg\nef\nGRID END"
    # Column 2 runs downward and holds two characters: the bottom rows stay short.
    assert snake_vertical("abcdefghijkl") == "GRID START\najk\nbil\nch\ndg\nef\nGRID END"


def test_snake_horizontal_matches_the_spec_example():
    assert snake_horizontal("Why 7?") == "GRID START\nWh\n y\n7?\n\n\nGRID END"
    # Row 3 runs right to left and holds two characters: its empty cell is on the left.
    assert snake_horizontal("abcdefghijk") == "GRID START\nabc\nfed\nghi\nkj\n\nGRID END"


# ---------------------------------------------------------------- not not


def test_not_not_before_first_adjective_and_every_second_eligible_token():
    assert (
        not_not("Two red balls and 3 blue ones")
        == "not not Two not not red balls and not not 3 blue ones"
    )
    assert (
        not_not("Add 1, 2 and 4 to a big pile")
        == "Add not not 1, 2 and not not 4 to a not not big pile"
    )


def test_not_not_skips_math_spans():
    assert (
        not_not("If $x = 2$ and \\(y > 3\\), find the smallest z above 7.")
        == "If $x = 2$ and \\(y > 3\\), find the not not smallest z above 7."
    )


def test_not_not_refuses_texts_it_cannot_invert():
    with pytest.raises(NotApplicable, match="already"):
        not_not("It is not not 5.")
    with pytest.raises(NotApplicable, match="no adjective"):
        not_not("Find $x$ if $x^2 = 4$.")


# ---------------------------------------------------------------- opposites and wrappers


@pytest.fixture
def fake_wordnet(monkeypatch):
    """A tiny stand-in for relations.wordnet, so opposites' own logic is tested without it."""
    from relations import wordnet

    parts = {"least": ["r", "a"], "positive": ["a", "n"], "even": ["r", "a"], "large": ["a"]}
    parts |= {"number": ["n", "v"], "find": ["v", "n"]}
    table = {
        ("least", "a"): ["most"],
        ("positive", "a"): ["negative", "neutral"],
        ("even", "a"): ["odd", "uneven"],
        ("large", "a"): ["small"],
        ("number", "v"): ["unnumber"],
    }
    monkeypatch.setattr(wordnet, "load_wordnet", lambda: object())
    monkeypatch.setattr(wordnet, "pos_candidates", lambda word: parts.get(word, []))
    monkeypatch.setattr(
        wordnet, "antonyms", lambda word, pos=None, indirect=True: table.get((word, pos), [])
    )


def test_opposites_declares_each_antonym_in_a_middle_block(fake_wordnet):
    text = "Find the least positive number n such that n is even and large."
    expected = (
        "Find the most negative number n defyn{"
        'let "most" mean "least", let "negative" mean "positive", let "odd" mean "even"} '
        "such that n is odd and large."
    )
    assert opposites(text) == expected
    assert inverse_opposites(expected) == preprocess(text)


def test_opposites_never_uses_an_antonym_already_in_the_text(fake_wordnet):
    text = "The positive root is negative here, and the least one is large."
    transformed = opposites(text, max_terms=5)
    assert 'let "neutral" mean "positive"' in transformed  # "negative" is taken
    assert 'let "small" mean "large"' in transformed
    assert inverse_opposites(transformed) == preprocess(text)


def test_opposites_without_candidates_is_not_applicable(fake_wordnet):
    with pytest.raises(NotApplicable):
        opposites("Compute $2+2$ now.")


def test_wrappers_are_seeded_and_declared():
    text = "A farmer has 12 apples and 7 pears; every farmer sells apples at 12 cents each."
    first = wrappers(text, rng=random.Random(5))
    assert first == wrappers(text, rng=random.Random(5))
    outputs = {wrappers(text, rng=random.Random(seed)) for seed in range(12)}
    assert len(outputs) > 1
    block = re.search(r" defyn\{(.*)\}", first).group(1)
    pairs = re.findall(r'let "(\d)\((\w+)\)" mean "(\w+)"', block)
    assert len(pairs) == 3
    outside = first.replace(block, "")
    bare = outside
    for k, token, meant in pairs:
        assert token == meant
        assert f"{k}({token})" in outside
        bare = bare.replace(f"{k}({token})", "")
    for _, token, _ in pairs:  # every occurrence of a chosen token is wrapped
        assert re.search(rf"(?<![\w.]){token}(?![\w])", bare) is None
    assert inverse_wrappers(first) == preprocess(text)


def test_wrappers_leave_math_alone_and_need_a_candidate():
    transformed = wrappers("Let $n = 12$ and n be a number.", rng=random.Random(0))
    assert "$n = 12$" in transformed
    assert re.search(r'let "\d\(number\)" mean "number"', transformed)
    with pytest.raises(NotApplicable):
        wrappers("Is $x > 1$ or not?")


def test_lexical_relations_refuse_an_existing_defyn_block():
    with pytest.raises(NotApplicable, match="defyn"):
        wrappers("A defyn{x} with 3 apples")


# ---------------------------------------------------------------- saturation and overload


def test_context_saturation_prepends_worked_examples():
    transformed = context_saturation("Find x.\nx = 2", n_problems=3, rng=random.Random(1))
    blocks = transformed.split("\n\n")
    assert len(blocks) == 4
    assert [b.split("\n")[0] for b in blocks[:3]] == [f"Worked example {i}." for i in (1, 2, 3)]
    assert all("\\boxed{" in b for b in blocks[:3])
    assert blocks[-1] == "TARGET PROBLEM: Find x.; x = 2"
    assert transformed == context_saturation("Find x.\nx = 2", n_problems=3, rng=random.Random(1))
    longer = context_saturation("Find x.", n_problems=20, rng=random.Random(1))
    assert longer.count("Worked example") == 20  # more than the pool: it cycles


def test_sequential_overload_numbers_the_problems_source_last():
    assert sequential_overload("Find y.", ["What is 2+2?", "Two\nlines"]) == (
        "Problem 1: What is 2+2?\n\nProblem 2: Two; lines\n\nProblem 3: Find y."
    )
    with pytest.raises(NotApplicable):
        sequential_overload("Find y.", [])


# ---------------------------------------------------------------- inverses


ENCODERS = {
    "word_reversal": (word_reversal, inverse_word_reversal),
    "sentence_reversal": (sentence_reversal, inverse_sentence_reversal),
    "split_reversal": (split_reversal, inverse_split_reversal),
    "word_split_swap": (word_split_swap, inverse_word_split_swap),
    "rail_fence": (rail_fence, inverse_rail_fence),
    "rectangle_perimeter": (rectangle_perimeter, inverse_rectangle_perimeter),
    "snake_vertical": (snake_vertical, inverse_snake_vertical),
    "snake_horizontal": (snake_horizontal, inverse_snake_horizontal),
    "interleave_line_a_first": (lambda t: interleave_line(t, PARTNER), inverse_interleave_line),
    "interleave_line_long_b": (
        lambda t: interleave_line(t, PARTNER * 6),
        inverse_interleave_line,
    ),
    "context_saturation": (
        lambda t: context_saturation(t, rng=random.Random(3)),
        inverse_context_saturation,
    ),
    "sequential_overload": (
        lambda t: sequential_overload(t, [PARTNER, "Find\nz."]),
        inverse_sequential_overload,
    ),
    "not_not": (not_not, inverse_not_not),
    "wrappers": (lambda t: wrappers(t, rng=random.Random(11)), inverse_wrappers),
}


@pytest.mark.parametrize("name", sorted(ENCODERS))
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_inverse_recovers_the_preprocessed_text(name, text):
    encode, inverse = ENCODERS[name]
    try:
        transformed = encode(text)
    except NotApplicable:
        assert name in ("not_not", "wrappers")  # no adjective/number/noun in some texts
        return
    _contract(inverse, transformed, text)


def test_lexical_encoders_apply_to_most_texts():
    applied = {
        name: sum(1 for t in TEXTS if _applies(ENCODERS[name][0], t))
        for name in ("not_not", "wrappers")
    }
    assert applied["not_not"] >= 8
    assert applied["wrappers"] >= 6


def _applies(encode, text: str) -> bool:
    try:
        encode(text)
    except NotApplicable:
        return False
    return True


def test_interleave_line_inverse_when_a_is_a_multiple_of_sixty():
    a_text = "".join(chr(ord("a") + i % 26) for i in range(120))  # two full chunks
    transformed = interleave_line(a_text, PARTNER * 5)
    _contract(inverse_interleave_line, transformed, a_text)


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_interleave_symbol_inverse_with_and_without_the_length(text):
    # A shorter than B: the length is needed; A at least as long as B: the text alone is enough.
    long_partner = PARTNER * 4
    transformed = interleave_symbol(text, long_partner)
    _contract(lambda t: inverse_interleave_symbol(t, len(preprocess(text))), transformed, text)
    transformed = interleave_symbol(text, "Why?")
    _contract(inverse_interleave_symbol, transformed, text)


def test_interleave_symbol_cannot_be_inverted_from_the_text_alone():
    # Why Relation.inverse is None: two different problems A give the same text.
    assert interleave_symbol("ab", "wxyz") == interleave_symbol("abab", "wxyz")
    assert get_relation("rrb.interleave_symbol").inverse is None


def test_interleave_word_inverse_gives_a_words():
    transformed = interleave_word("Find the sum of 2 and 3.", "Why?")
    assert inverse_interleave_word(transformed) == "Find the sum of 2 and 3."
    transformed = interleave_word("Add  2\tand 3.", PARTNER)
    # Whitespace comes back as single spaces: the word split cannot remember it.
    assert inverse_interleave_word(transformed, n_words_a=4) == "Add 2 and 3."
    assert interleave_word("go", "a b") == interleave_word("go go", "a b")
    assert get_relation("rrb.interleave_word").inverse is None


def test_grid_inverses_read_positions_not_dots():
    text = "Take 1.5 times 2. Then add 0.5. What is the result?"
    for encode, inverse in (
        (rail_fence, inverse_rail_fence),
        (rectangle_perimeter, inverse_rectangle_perimeter),
        (snake_vertical, inverse_snake_vertical),
        (snake_horizontal, inverse_snake_horizontal),
    ):
        assert inverse(encode(text)) == text


def test_known_edge_of_sentence_reversal_is_documented():
    # "A .B" and "A.B" both give "B.A": the rstrip erases the first piece's trailing space.
    assert sentence_reversal("A .B") == sentence_reversal("A.B") == "B.A"
    assert inverse_sentence_reversal("B.A") == "A.B"


def test_registered_inverses_are_the_pure_ones():
    expected = {
        "rrb.word_reversal": inverse_word_reversal,
        "rrb.sentence_reversal": inverse_sentence_reversal,
        "rrb.split_reversal": inverse_split_reversal,
        "rrb.word_split_swap": inverse_word_split_swap,
        "rrb.interleave_line": inverse_interleave_line,
        "rrb.rail_fence": inverse_rail_fence,
        "rrb.rectangle_perimeter": inverse_rectangle_perimeter,
        "rrb.snake_vertical": inverse_snake_vertical,
        "rrb.snake_horizontal": inverse_snake_horizontal,
        "rrb.not_not": inverse_not_not,
        "rrb.opposites": inverse_opposites,
        "rrb.wrappers": inverse_wrappers,
        "rrb.context_saturation": inverse_context_saturation,
        "rrb.sequential_overload": inverse_sequential_overload,
    }
    for relation_id, inverse in expected.items():
        assert get_relation(relation_id).inverse is inverse, relation_id


# ---------------------------------------------------------------- relations and follow-ups


def test_catalog_entries():
    relations = {r.id: r for r in list_relations() if r.family == "rrb"}
    assert set(relations) == RRB_IDS
    for relation in relations.values():
        assert relation.expectation is Expectation.EQUIVALENT
        assert relation.tasks == frozenset({"reasoning", "math"})
        assert relation.build is not None and relation.transform is None
        assert "Robust Reasoning Benchmark" in relation.ref
        expected_kind = (
            RelationKind.LIBRARY if relation.id == "rrb.opposites" else RelationKind.RULE
        )
        assert relation.kind is expected_kind
    assert relations["rrb.opposites"].requires == ("wordnet",)
    assert len(list_relations(BUILTIN_TASKS["math"])) >= len(RRB_IDS)
    assert all(r.id not in RRB_IDS for r in list_relations(BUILTIN_TASKS["sentiment"]))


def test_followup_holds_rule_header_and_bare_transformed_text():
    text = "Let $\\omega\\neq 1$ be given.\nFind  $x$."
    followup = _first("rrb.word_reversal", text)
    assert followup.transformed == word_reversal(text)
    assert followup.fields["problem"] == "TRANSFORMED INPUT:\n" + word_reversal(text)
    assert "TRANSFORMATION RULE:" in followup.preamble
    assert "reverse order" in followup.preamble
    assert followup.target == "problem"
    prompt = BUILTIN_TASKS["math"].render(followup.fields, followup.preamble)
    assert prompt.index("TRANSFORMATION RULE:") < prompt.index("TRANSFORMED INPUT:")
    assert prompt.endswith("TRANSFORMED INPUT:\n" + word_reversal(text))


@pytest.mark.parametrize(
    ("relation_id", "encode"),
    [
        ("rrb.sentence_reversal", sentence_reversal),
        ("rrb.split_reversal", split_reversal),
        ("rrb.word_split_swap", word_split_swap),
        ("rrb.rail_fence", rail_fence),
        ("rrb.rectangle_perimeter", rectangle_perimeter),
        ("rrb.snake_vertical", snake_vertical),
        ("rrb.snake_horizontal", snake_horizontal),
        ("rrb.not_not", not_not),
        ("rrb.interleave_word", lambda t: interleave_word(t, PARTNER)),
        ("rrb.interleave_symbol", lambda t: interleave_symbol(t, PARTNER)),
        ("rrb.interleave_line", lambda t: interleave_line(t, PARTNER)),
        ("rrb.sequential_overload", lambda t: sequential_overload(t, [PARTNER])),
    ],
)
def test_relation_transformed_equals_the_pure_function(relation_id, encode):
    text = TEXTS[3]
    followup = _first(relation_id, text, partners=[Sample({"problem": PARTNER})])
    assert followup.transformed == encode(text)
    assert followup.fields["problem"] == "TRANSFORMED INPUT:\n" + encode(text)
    assert get_relation(relation_id).params["preamble"] == followup.preamble


def test_partner_is_the_first_usable_sample_of_its_field():
    text = TEXTS[0]
    partners = [
        Sample({"problem": text}),  # a copy of the source is not a partner
        Sample({"question": "What?", "problem": PARTNER}),
        Sample({"problem": "Something else entirely."}),
    ]
    followup = _first("rrb.interleave_line", text, partners=partners)
    assert followup.transformed == interleave_line(text, PARTNER)
    assert partners[1].id in followup.note
    only_other_field = [Sample({"text": PARTNER})]  # no "problem": its first field is used
    followup = _first("rrb.interleave_word", text, partners=only_other_field)
    assert followup.transformed == interleave_word(text, PARTNER)


def test_sequential_overload_takes_k_partners():
    partners = [Sample({"problem": f"What is {i} + {i}?"}) for i in range(1, 6)]
    followup = _first("rrb.sequential_overload", "Find y.", partners=partners)
    assert followup.transformed == sequential_overload(
        "Find y.", ["What is 1 + 1?", "What is 2 + 2?", "What is 3 + 3?"]
    )
    assert followup.transformed.endswith("Problem 4: Find y.")
    assert "\\boxed{}" in followup.preamble


@pytest.mark.parametrize(
    "relation_id", ["rrb.interleave_word", "rrb.interleave_symbol", "rrb.interleave_line"]
)
def test_interleave_without_partner_is_skipped(relation_id):
    result = _first(relation_id, TEXTS[0])
    assert isinstance(result, SkippedFollowUp)
    assert "partner" in result.reason
    copy_only = [Sample({"problem": TEXTS[0]})]
    assert isinstance(_first(relation_id, TEXTS[0], partners=copy_only), SkippedFollowUp)


def test_sequential_overload_without_partners_is_skipped():
    result = _first("rrb.sequential_overload", TEXTS[0])
    assert isinstance(result, SkippedFollowUp)
    assert "other samples" in result.reason


def test_unchanged_or_empty_problems_are_skipped():
    unchanged = _first("rrb.word_reversal", "Why?")  # one word: reversing changes nothing
    assert isinstance(unchanged, SkippedFollowUp)
    assert "unchanged" in unchanged.reason
    empty = _first("rrb.snake_vertical", "  % only a comment")
    assert isinstance(empty, SkippedFollowUp)
    assert "empty" in empty.reason
    other_task = generate_followups(
        get_relation("rrb.word_reversal"),
        Sample({"text": "Good film"}),
        BUILTIN_TASKS["sentiment"],
        ["text"],
    )
    assert isinstance(other_task[0], SkippedFollowUp)


@pytest.mark.parametrize("relation_id", ["rrb.wrappers", "rrb.context_saturation"])
def test_seeded_relations_repeat_byte_for_byte(relation_id):
    text = TEXTS[3]
    first = _first(relation_id, text, run_seed=7)
    again = _first(relation_id, text, run_seed=7)
    assert first == again
    variants = {_first(relation_id, text, run_seed=seed).transformed for seed in range(10)}
    assert len(variants) > 1


def test_context_saturation_length_comes_from_params():
    relation = get_relation("rrb.context_saturation")
    assert relation.params["n_problems"] == 6
    followup = _first("rrb.context_saturation", TEXTS[2])
    assert followup.transformed.count("Worked example") == 6
    assert followup.transformed.endswith("TARGET PROBLEM: " + preprocess(TEXTS[2]).rstrip())


# ---------------------------------------------------------------- real WordNet


@pytest.mark.slow  # loading WordNet takes seconds
def test_opposites_with_real_wordnet():
    available, why = wordnet_status()
    if not available:
        pytest.skip(why)
    text = "Find the least positive integer n such that n is even and large."
    followup = _first("rrb.opposites", text)
    assert followup.transformed == opposites(text)
    assert followup.transformed == (
        'Find the most negative integer defyn{let "most" mean "least", let "negative" '
        'mean "positive", let "odd" mean "even"} n such that n is odd and large.'
    )
    applied = 0
    for sample_text in TEXTS:
        try:
            transformed = opposites(sample_text)
        except NotApplicable:
            continue
        applied += 1
        _contract(inverse_opposites, transformed, sample_text)
    assert applied >= 4


def test_rrb_imports_and_skips_opposites_without_wordnet(monkeypatch):
    # relations.wordnet is only imported inside opposites(): blocking it must not break import.
    script = (
        "import sys; sys.modules['relations.wordnet'] = None\n"
        "import relations.rrb\n"
        "from relations.rrb import opposites\n"
        "try:\n    opposites('a large box')\nexcept ImportError:\n    print('needs wordnet')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.strip() == "needs wordnet"
    monkeypatch.setitem(CHECKS, "wordnet", lambda: (False, "WordNet unavailable: not installed"))
    result = _first("rrb.opposites", "Find the least positive integer.")
    assert isinstance(result, SkippedFollowUp)
    assert "WordNet unavailable" in result.reason


class _CountingPartners(list):
    """The batch after the sample, counting the partners a relation reads."""

    read: int = 0

    def __iter__(self):
        for partner in super().__iter__():
            self.read += 1
            yield partner


def test_partner_relations_read_only_the_partners_they_use():
    """The partners are the whole rest of the batch: reading them all made planning quadratic
    (2,000 inputs took 9.5 s per relation, 0.07 s now). Empty partners and copies of the source
    are still skipped, and the same (first usable) partners are picked."""
    source = "Find y if 2y = 6."
    batch = [Sample({"problem": ""}), Sample({"problem": source})] + [
        Sample({"problem": f"What is {i} + {i}?"}) for i in range(200)
    ]
    interleave = _CountingPartners(batch)
    made = _first("rrb.interleave_word", source, partners=interleave)
    assert made.note == f"problem B: sample {batch[2].id}"
    assert interleave.read == 3  # the empty one, the copy, the first usable
    overload = _CountingPartners(batch)
    made = _first("rrb.sequential_overload", source, partners=overload)
    assert made.note.startswith(f"problems 1–3: samples {batch[2].id}, {batch[3].id}, ")
    assert overload.read == 5
