"""rrb.* — the Robust Reasoning Benchmark's structural perturbations.

Each relation rewrites the ``problem`` field with a deterministic, reversible transformation and
asks the model to decode it first, then solve: the follow-up's ``preamble`` holds our decoding
protocol and rule, its ``problem`` field is ``TRANSFORMED INPUT:`` plus the transformed text, and
``FollowUp.transformed`` is the bare transformed text. The answer must equal the source answer.

The pure encoders and their inverses live in ``rrb_text``, ``rrb_grids`` and ``rrb_lexical`` and
are re-exported here; every relation with a pure inverse registers it as ``Relation.inverse``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from core.types import Sample
from relations.base import (
    BuildFn,
    Expectation,
    FollowUp,
    NotApplicable,
    Relation,
    RelationKind,
    TransformContext,
)
from relations.registry import register
from relations.rrb_grids import (
    inverse_rail_fence,
    inverse_rectangle_perimeter,
    inverse_snake_horizontal,
    inverse_snake_vertical,
    rail_fence,
    rectangle_perimeter,
    snake_horizontal,
    snake_vertical,
)
from relations.rrb_lexical import (
    inverse_not_not,
    inverse_opposites,
    inverse_wrappers,
    not_not,
    opposites,
    wrappers,
)
from relations.rrb_text import (
    context_saturation,
    interleave_line,
    interleave_symbol,
    interleave_word,
    inverse_context_saturation,
    inverse_interleave_line,
    inverse_interleave_symbol,
    inverse_interleave_word,
    inverse_sentence_reversal,
    inverse_sequential_overload,
    inverse_split_reversal,
    inverse_word_reversal,
    inverse_word_split_swap,
    preprocess,
    require_text,
    sentence_reversal,
    sequential_overload,
    split_reversal,
    word_reversal,
    word_split_swap,
)

__all__ = [
    "context_saturation",
    "interleave_line",
    "interleave_symbol",
    "interleave_word",
    "inverse_context_saturation",
    "inverse_interleave_line",
    "inverse_interleave_symbol",
    "inverse_interleave_word",
    "inverse_not_not",
    "inverse_opposites",
    "inverse_rail_fence",
    "inverse_rectangle_perimeter",
    "inverse_sentence_reversal",
    "inverse_sequential_overload",
    "inverse_snake_horizontal",
    "inverse_snake_vertical",
    "inverse_split_reversal",
    "inverse_word_reversal",
    "inverse_word_split_swap",
    "inverse_wrappers",
    "not_not",
    "opposites",
    "preprocess",
    "rail_fence",
    "rectangle_perimeter",
    "sentence_reversal",
    "sequential_overload",
    "snake_horizontal",
    "snake_vertical",
    "split_reversal",
    "word_reversal",
    "word_split_swap",
    "wrappers",
]

PAPER = "Robust Reasoning Benchmark (seeds/robust-reasoning-benchmark.txt)"
TASKS = frozenset({"reasoning", "math"})
PROBLEM_FIELD = "problem"
INPUT_HEADER = "TRANSFORMED INPUT:"
RULE_HEADER = "TRANSFORMATION RULE:"

DECODE_PROTOCOL = (
    "The problem below has been disguised by a deterministic, reversible transformation, "
    "described after the heading TRANSFORMATION RULE. Work in two stages. Stage 1: apply the "
    "rule backwards to the text after the heading TRANSFORMED INPUT and write out the original "
    "problem statement. Stage 2: solve the recovered problem exactly as the instructions below "
    "ask."
)
FILLER_PROTOCOL = (
    "The input below holds more than the problem you must answer. The text after the heading "
    "TRANSFORMATION RULE says which problem counts; solve that one exactly as the instructions "
    "below ask."
)
OVERLOAD_PROTOCOL = (
    "The input below holds several problems that have nothing to do with each other. The text "
    "after the heading TRANSFORMATION RULE says how to answer them."
)

EXAMPLE = (
    "A farmer picks 12 red apples and 7 green apples. She sells $\\frac{1}{4}$ of the red "
    "ones.\nHow many apples does she have left?"
)
# Partner problems for the catalog's live example (the Relations page reads "example_partners").
EXAMPLE_PARTNERS = (
    {
        PROBLEM_FIELD: "A train leaves at 3 pm and covers 180 km at a steady 60 km/h. At what "
        "time does it arrive?"
    },
    {PROBLEM_FIELD: "What is the greatest common divisor of 84 and 126?"},
    {PROBLEM_FIELD: "A square has a diagonal of length $6\\sqrt{2}$. What is its area?"},
)

# An encoder gets the raw field text and the case context; returns (transformed text, note).
Encoder = Callable[[str, TransformContext], tuple[str, str]]


def _plain(encode: Callable[[str], str]) -> Encoder:
    return lambda text, ctx: (encode(text), "")


def _target_field(task_fields: Sequence[str]) -> str:
    if PROBLEM_FIELD in task_fields:
        return PROBLEM_FIELD
    if not task_fields:
        raise NotApplicable("the task has no input field to transform")
    return task_fields[0]


def partner_samples(ctx: TransformContext, limit: int) -> list[tuple[Sample, str]]:
    """The first ``limit`` usable partners: (sample, its text) for the context's field (else the
    sample's first field), skipping empty ones and copies of the source problem.

    Stops at ``limit``: the partners are the rest of the batch, so reading them all made
    planning quadratic in the number of inputs."""
    source = preprocess(ctx.sample_fields.get(ctx.field, ""))
    usable: list[tuple[Sample, str]] = []
    if limit < 1:
        return usable
    for partner in ctx.partners:
        if ctx.field in partner.fields:
            text = partner.fields[ctx.field]
        else:
            text = next(iter(partner.fields.values()), "")
        problem = preprocess(text)
        if problem.strip() and problem != source:
            usable.append((partner, text))
            if len(usable) == limit:
                break
    return usable


def _interleaver(interleave: Callable[[str, str], str]) -> Encoder:
    def encode(text: str, ctx: TransformContext) -> tuple[str, str]:
        partners = partner_samples(ctx, limit=1)
        if not partners:
            raise NotApplicable("interleaving needs a partner: another sample in the batch")
        partner, partner_text = partners[0]
        return interleave(text, partner_text), f"problem B: sample {partner.id}"

    return encode


def _encode_saturation(text: str, ctx: TransformContext) -> tuple[str, str]:
    count = int(ctx.params.get("n_problems", 6))
    return context_saturation(text, n_problems=count, rng=ctx.rng), f"{count} worked examples"


def _encode_overload(text: str, ctx: TransformContext) -> tuple[str, str]:
    others = partner_samples(ctx, limit=int(ctx.params.get("k", 3)))
    if not others:
        raise NotApplicable("sequential overload needs other samples in the batch")
    ids = ", ".join(partner.id for partner, _ in others)
    transformed = sequential_overload(text, [other for _, other in others])
    return transformed, f"problems 1–{len(others)}: samples {ids}; graded: the last"


def _encode_wrappers(text: str, ctx: TransformContext) -> tuple[str, str]:
    return wrappers(text, rng=ctx.rng, max_terms=int(ctx.params.get("max_terms", 3))), ""


def _encode_opposites(text: str, ctx: TransformContext) -> tuple[str, str]:
    return opposites(text, max_terms=int(ctx.params.get("max_terms", 3))), ""


def rrb_build(encode: Encoder, preamble: str) -> BuildFn:
    """The ``build`` of an rrb relation: one follow-up with the decoding preamble."""

    def build(
        sample: Sample, task_id: str, task_fields: Sequence[str], ctx: TransformContext
    ) -> list[FollowUp]:
        field = _target_field(task_fields)
        text = sample.fields.get(field, "")
        require_text(preprocess(text))
        try:
            transformed, note = encode(text, dataclasses.replace(ctx, field=field))
        except ValueError as exc:  # a bad parameter, e.g. n_problems=0
            raise NotApplicable(str(exc)) from None
        if transformed == preprocess(text).rstrip():
            raise NotApplicable("the transformation leaves this text unchanged")
        fields = {**sample.fields, field: f"{INPUT_HEADER}\n{transformed}"}
        return [
            FollowUp(
                fields=fields, target=field, preamble=preamble, note=note, transformed=transformed
            )
        ]

    return build


def rrb_relation(
    *,
    id: str,
    name: str,
    category: str,
    description: str,
    rule: str,
    encode: Encoder,
    inverse: Callable[[str], str] | None,
    section: str,
    protocol: str = DECODE_PROTOCOL,
    example: str = EXAMPLE,
    kind: RelationKind = RelationKind.RULE,
    requires: tuple[str, ...] = (),
    params: dict | None = None,
    preconditions: str = "",
) -> Relation:
    """Register one rrb relation: decoding rule + encoder + inverse, with the family defaults."""
    preamble = f"{protocol}\n\n{RULE_HEADER} {rule}"
    return register(
        Relation(
            id=id,
            name=name,
            family="rrb",
            category=category,
            description=description,
            example=example,
            kind=kind,
            expectation=Expectation.EQUIVALENT,
            build=rrb_build(encode, preamble),
            tasks=TASKS,
            fields=(PROBLEM_FIELD,),
            preconditions=preconditions or "a non-empty problem that the transformation changes",
            ref=f"{PAPER}, {section}",
            inverse=inverse,
            requires=requires,
            params={"preamble": preamble, **(params or {})},
        )
    )


# ---------------------------------------------------------------- syntactic distortions (§3.3)

SYNTACTIC = "syntactic distortion"

rrb_relation(
    id="rrb.word_reversal",
    name="Word reversal",
    category=SYNTACTIC,
    description="Reverse the order of the words; the whitespace between them stays in place.",
    rule=(
        "The words of the problem are in reverse order: the last word was moved to the front, "
        "and so on. A word is any run of characters between whitespace, so punctuation stays "
        "attached to its word, and the whitespace between words was not moved. Read the words "
        "from last to first to get the original text back."
    ),
    encode=_plain(word_reversal),
    inverse=inverse_word_reversal,
    section="§3.3 word reversal",
)

rrb_relation(
    id="rrb.sentence_reversal",
    name="Sentence reversal",
    category=SYNTACTIC,
    description="Cut at every period and reverse the order of the pieces.",
    rule=(
        "The text was cut at every period '.', including periods inside numbers such as 3.5, and "
        "the pieces were put back in reverse order, joined again by periods. If the original "
        "ended with a period, that period is still at the very end. Reverse the order of the "
        "period-separated pieces to get the original text back."
    ),
    encode=_plain(sentence_reversal),
    inverse=inverse_sentence_reversal,
    section="§3.3 sentence reversal",
)

rrb_relation(
    id="rrb.split_reversal",
    name="Split reversal (symbol reversal)",
    category=SYNTACTIC,
    description="Spell every space-separated word backwards.",
    rule=(
        "Every word is spelled backwards. Words are the pieces between single space characters; "
        "the spaces themselves were not moved. Spell each word backwards again to get the "
        "original text back (for example 'teL' is 'Let')."
    ),
    encode=_plain(split_reversal),
    inverse=inverse_split_reversal,
    section="§3.3 symbol reversal",
)

rrb_relation(
    id="rrb.word_split_swap",
    name="Word split swap",
    category=SYNTACTIC,
    description="Cut every space-separated word in the middle and swap the two halves.",
    rule=(
        "Every word (a piece between single space characters) was cut into a front half and a "
        "back half and the halves were swapped. For a word with an odd number of characters the "
        "front half was the shorter one. To decode a word of n characters, move its last n // 2 "
        "characters (n divided by 2, rounded down) to its front: 'etL' becomes 'Let', 'CDAB' "
        "becomes 'ABCD'."
    ),
    encode=_plain(word_split_swap),
    inverse=inverse_word_split_swap,
    section="appendix A.1 word split swap",
)

# ---------------------------------------------------------------- interleaved contexts (§3.2)

OVERLOAD = "contextual overload"
PARTNER_PRECONDITION = "another sample in the batch (the partner problem B)"
_REPEAT = (
    "When one problem ran out, it was started again from its beginning until the longer one "
    "ended, so problem A may repeat: stop reading A when it starts over."
)

rrb_relation(
    id="rrb.interleave_word",
    name="Interleaved problems (word level)",
    category=OVERLOAD,
    description="Alternate the words of the problem (A) with those of another sample (B).",
    rule=(
        "Two unrelated problems, A and B, were merged word by word: the 1st, 3rd, 5th, … words "
        "belong to problem A and the 2nd, 4th, 6th, … words to problem B (words are separated by "
        f"single spaces). {_REPEAT} Solve problem A only and ignore problem B."
    ),
    encode=_interleaver(interleave_word),
    # Not recoverable from the text alone: the word split forgets A's whitespace, and a repeated
    # A cannot be told from a longer one (see inverse_interleave_word, which takes n_words_a).
    inverse=None,
    section="§3.2 interleaved contexts (word level)",
    params={"example_partners": EXAMPLE_PARTNERS},
    preconditions=PARTNER_PRECONDITION,
)

rrb_relation(
    id="rrb.interleave_symbol",
    name="Interleaved problems (symbol level)",
    category=OVERLOAD,
    description="Alternate the characters of the problem (A) with those of another sample (B).",
    rule=(
        "Two unrelated problems, A and B, were merged character by character, spaces included: "
        "the 1st, 3rd, 5th, … characters belong to problem A and the 2nd, 4th, 6th, … characters "
        f"to problem B. {_REPEAT} Solve problem A only and ignore problem B."
    ),
    encode=_interleaver(interleave_symbol),
    # Not recoverable from the text alone when A was the shorter problem ("ab" + "wxyz" and
    # "abab" + "wxyz" interleave identically): inverse_interleave_symbol takes len_a.
    inverse=None,
    section="§3.2 interleaved contexts (symbol level)",
    params={"example_partners": EXAMPLE_PARTNERS},
    preconditions=PARTNER_PRECONDITION,
)

rrb_relation(
    id="rrb.interleave_line",
    name="Interleaved problems (line level)",
    category=OVERLOAD,
    description="Alternate 60-character tagged lines of the problem (A) and another sample (B).",
    rule=(
        "Two unrelated problems, A and B, were cut into pieces of at most 60 characters. Each "
        "piece is on its own line after the tag '<Problem A> ' or '<Problem B> ', and the lines "
        "alternate A, B, A, B, … Join the A pieces in order, directly one after the other, "
        f"without adding spaces. {_REPEAT} Solve problem A only and ignore problem B."
    ),
    encode=_interleaver(interleave_line),
    inverse=inverse_interleave_line,
    section="§3.2 interleaved contexts (line level)",
    params={"example_partners": EXAMPLE_PARTNERS},
    preconditions=PARTNER_PRECONDITION,
)

# ---------------------------------------------------------------- visual and spatial (§3.4)

SPATIAL = "visual/spatial encoding"
_GRID = (
    "The grid is given between the lines GRID START and GRID END. Spaces in the grid are real "
    "characters of the text (the text contains no line breaks)."
)

rrb_relation(
    id="rrb.rail_fence",
    name="Rail fence (3 rails)",
    category=SPATIAL,
    description="Write the text in a zig-zag over 3 rows; empty cells are dots.",
    rule=(
        f"{_GRID} The text was written in a zig-zag over 3 rows, one character per column: the "
        "1st character on the top row, the 2nd on the middle row, the 3rd on the bottom row, the "
        "4th on the middle row, the 5th on the top row again, and so on. All other cells hold a "
        "dot '.'. To decode, go through the columns from left to right and take, in each column, "
        "the character on the zig-zag path (top, middle, bottom, middle, top, …); that character "
        "may itself be a real '.' of the text."
    ),
    encode=_plain(rail_fence),
    inverse=inverse_rail_fence,
    section="§3.4 rail fence cipher",
)

rrb_relation(
    id="rrb.rectangle_perimeter",
    name="Rectangle perimeter",
    category=SPATIAL,
    description="Write the text clockwise along the border of a rectangle; the inside is dots.",
    rule=(
        f"{_GRID} The text was written as one continuous line along the border of a rectangle, "
        "clockwise from the top-left corner: left to right along the top row, down the right "
        "column, right to left along the bottom row, then up the left column. Spaces fill the "
        "border after the end of the text; the inside of the rectangle is dots and is not part "
        "of the text. Read the border clockwise from the top-left corner."
    ),
    encode=_plain(rectangle_perimeter),
    inverse=inverse_rectangle_perimeter,
    section="§3.4 rectangle perimeter",
)

rrb_relation(
    id="rrb.snake_vertical",
    name="Snake (vertical)",
    category=SPATIAL,
    description="Write the text into 5 rows, column by column, alternately down and up.",
    rule=(
        f"{_GRID} The text was written into a grid of 5 rows, column by column: down the first "
        "column, up the second, down the third, and so on. The last column may be only partly "
        "filled, so some rows are one character shorter (the bottom rows if the last column runs "
        "down, the top rows if it runs up). Read the columns in order, alternately top to bottom "
        "and bottom to top."
    ),
    encode=_plain(snake_vertical),
    inverse=inverse_snake_vertical,
    section="§3.4 snake (vertical)",
)

rrb_relation(
    id="rrb.snake_horizontal",
    name="Snake (horizontal)",
    category=SPATIAL,
    description="Write the text into 5 rows, row by row, alternately left-to-right and back.",
    rule=(
        f"{_GRID} The text was written into 5 rows, row by row: left to right along the first "
        "row, right to left along the second, left to right along the third, and so on. The last "
        "written row may be shorter and rows after the end of the text are empty. Read the rows "
        "in order, alternately left to right and right to left."
    ),
    encode=_plain(snake_horizontal),
    inverse=inverse_snake_horizontal,
    section="§3.4 snake (horizontal)",
)

# ---------------------------------------------------------------- semantic and lexical (§3.1)

LEXICAL = "semantic/lexical substitution"
_DEFYN = (
    'The substitutions are declared in a block of the form defyn{let "X" mean "Y", …} placed in '
    "the middle of the text; the block is not part of the problem."
)

rrb_relation(
    id="rrb.not_not",
    name="Not not",
    category=LEXICAL,
    description="Put a double negation 'not not' before adjectives and numbers (outside math).",
    rule=(
        "The words 'not not' were put in front of some numbers and adjectives. Two negations "
        "cancel each other, so every 'not not' means nothing at all: delete each 'not not ' to "
        "get the original problem back."
    ),
    encode=_plain(not_not),
    inverse=inverse_not_not,
    section="§3.1 not not",
    preconditions="an adjective or number outside math, and no 'not not' in the text already",
)

rrb_relation(
    id="rrb.opposites",
    name="Opposites",
    category=LEXICAL,
    description="Swap verbs/adjectives for WordNet antonyms and declare what they mean.",
    rule=(
        f'Some words were replaced by their opposites. {_DEFYN} let "X" mean "Y" says that X, '
        "wherever it appears in the text, stands for Y: remove the block and read every such X "
        "as Y."
    ),
    encode=_encode_opposites,
    inverse=inverse_opposites,
    section="§3.1 opposites",
    kind=RelationKind.LIBRARY,
    requires=("wordnet",),
    params={"max_terms": 3},
    preconditions="WordNet; a verb or adjective with an antonym that the text does not use",
)

rrb_relation(
    id="rrb.wrappers",
    name="Wrappers",
    category=LEXICAL,
    description="Wrap nouns and numbers as k(token), an identity wrapper, and declare them.",
    rule=(
        "Some words and numbers were wrapped as k(token), where k is a small integer. The "
        f"wrapper does nothing: k(token) simply means token. {_DEFYN} Remove the block and "
        "unwrap every declared k(…)."
    ),
    encode=_encode_wrappers,
    inverse=inverse_wrappers,
    section="§3.1 wrappers",
    params={"max_terms": 3},
    preconditions="a noun or number outside math",
)

# ---------------------------------------------------------------- saturation and overload (§3.2)

rrb_relation(
    id="rrb.context_saturation",
    name="Context saturation",
    category=OVERLOAD,
    description="Put a long block of unrelated worked examples before the problem.",
    rule=(
        "The input starts with worked examples of other, unrelated problems, each with its "
        "solution. They are filler: do not answer them and do not let them influence you. The "
        "only problem to solve is the one after 'TARGET PROBLEM:' at the end (its line breaks, "
        "if any, were written as '; ')."
    ),
    encode=_encode_saturation,
    inverse=inverse_context_saturation,
    section="§3.2 context saturation",
    protocol=FILLER_PROTOCOL,
    params={"n_problems": 6},
)

rrb_relation(
    id="rrb.sequential_overload",
    name="Sequential overload",
    category=OVERLOAD,
    description="Ask for k other samples' answers first; only the last problem (ours) is graded.",
    rule=(
        "The problems are numbered Problem 1, Problem 2, … Solve all of them, one after another "
        "in the order given, and finish each one with its final answer inside \\boxed{}. The "
        "last \\boxed{} you write must be the answer to the last problem."
    ),
    encode=_encode_overload,
    inverse=inverse_sequential_overload,
    section="§3.2 / §4 sequential cognitive overload",
    protocol=OVERLOAD_PROTOCOL,
    params={"k": 3, "example_partners": EXAMPLE_PARTNERS},
    preconditions="other samples in the batch",
)
