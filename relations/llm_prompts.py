"""Shared pieces of the LLM-prompted relations: our rewrite prompt, response cleaning, filters.

Every rewrite prompt states the rewrite, the preservation constraint and "reply with the text only";
the response is then cleaned of what chat models like to wrap around it (a "Here is the
paraphrase:" line, quotes, code fences, a trailing "Note: …"). An empty result is NotApplicable —
a SKIP with a reason, never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from relations.base import NotApplicable, Rewriter, TransformContext
from relations.candidates import MakeCandidate, MakeCandidateOf, best_by_sentence, best_of_k
from relations.text_utils import normalise_whitespace

PRESERVATION_CONSTRAINT = (
    "Preserve every number, entity and the question: keep each number, quantity, unit, name and "
    "mathematical expression exactly as written, and keep what is being asked unchanged."
)

_PROMPT = """{instruction}

{constraint}
Do not answer, solve or comment on the text, and do not add a title.
Reply with the {result} only{layout}.
{examples}
<text>
{text}
</text>"""
_EXAMPLE = """
Example:
<text>
{source}
</text>
{rewrite}
"""

# Worked examples for a small rewriter (ours): a word problem and a review, each rewritten the way
# the relation asks, numbers, names, the question and the sentiment kept.
PARAPHRASE_EXAMPLES = (
    (
        "Mia has 5 pens and buys 2 more. How many pens does Mia have now?",
        "Mia owns 5 pens and gets 2 more. How many pens does Mia own now?",
    ),
    ("The staff were kind and the room was tidy.", "The room was tidy, and the staff were kind."),
)
EXPAND_EXAMPLES = (
    (
        "Mia has 5 pens and buys 2 more. How many pens does Mia have now?",
        "Mia, a pupil, has 5 pens that she uses at school, and she buys 2 more at the shop. How "
        "many pens does Mia have now?",
    ),
    (
        "The staff were kind and the room was tidy.",
        "The staff, the people who work at the hotel, were kind, and the room we stayed in was "
        "tidy.",
    ),
)

# Openers that chat models put before the rewrite. Each pattern ends at the colon that closes it.
_POLITE_OPENER = re.compile(r"^(?:sure|certainly|okay|ok|of course|absolutely)\b[,.!]*\s*", re.I)
_PREAMBLES = (
    re.compile(r"^here(?:'s|’s| is| are)\b[^:\n]{0,80}:\s*", re.I),
    re.compile(
        r"^(?:the\s+)?(?:rewritten|paraphrased|expanded|contracted|shortened|condensed|reordered|"
        r"revised|reworded|translated|contrastive|modified|new|final)\s+(?:text|version|problem|"
        r"question|passage|sentence|input)\b[^:\n]{0,40}:\s*",
        re.I,
    ),
    re.compile(
        r"^(?:paraphrase|rewrite|rewritten|translation|output|result|response)\s*:\s*", re.I
    ),
)
_COMMENTARY = re.compile(
    r"^\(?(?:note|notes|explanation|changes|i have|i've|i kept|this version|this rewrite|"
    r"this paraphrase|the rewrite|the paraphrase|in this example|in this version|in this rewrite|"
    r"the revised|the original|the expanded|the rewritten)\b",
    re.I,
)
# A label left dangling at the end ("… 5 apples.\n\nRewritten text:"): the small model starting a
# second round of our prompt's format. Nothing follows it, so it is cut off and the text before it
# is the rewrite (still gated like any other); a label with text after it is two versions in one
# reply, which the gate rejects as meta-text.
_TRAILING_LABEL = re.compile(
    r"\s*(?:(?:the\s+)?(?:rewritten|paraphrased|expanded|translated|new|final)\s+(?:text|version|"
    r"sentence|question|problem)|paraphrase|rewrite|translation|output|<text>)\s*:?\s*$",
    re.I,
)
_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_TAGS = re.compile(r"</?text>", re.I)
_QUOTE_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "`": "`"}


def build_rewrite_prompt(
    instruction: str,
    text: str,
    *,
    result: str = "rewritten text",
    single_line: bool = False,
    examples: Sequence[tuple[str, str]] = (),
) -> str:
    """Our rewrite prompt: the instruction, the preservation constraint, worked examples (for a
    small rewriter; none: the prompt is the one every rewrite had before), then the text."""
    layout = ", on a single line" if single_line else ""
    shown = "".join(_EXAMPLE.format(source=s, rewrite=r) for s, r in examples)
    return _PROMPT.format(
        instruction=instruction.strip(),
        constraint=PRESERVATION_CONSTRAINT,
        result=result,
        layout=layout,
        examples=shown,
        text=text,
    )


def _strip_preamble(text: str) -> str:
    for _ in range(3):  # "Sure! Here is the paraphrase:" needs two passes
        before = text
        text = _POLITE_OPENER.sub("", text, count=1)
        for pattern in _PREAMBLES:
            text = pattern.sub("", text, count=1)
        text = text.lstrip()
        if text == before:
            break
    return text


def _strip_commentary(text: str) -> str:
    paragraphs = re.split(r"\n[ \t]*\n", text)
    while len(paragraphs) > 1 and _COMMENTARY.match(paragraphs[-1].strip()):
        paragraphs.pop()
    return "\n\n".join(paragraphs)


def _strip_quotes(text: str) -> str:
    if len(text) < 2 or text[0] not in _QUOTE_PAIRS or text[-1] != _QUOTE_PAIRS[text[0]]:
        return text
    opening, closing = text[0], text[-1]
    inner = text[1:-1]
    if opening in inner or closing in inner:  # '"Hi," she said, "bye"' is not one quoted block
        return text
    return inner.strip()


def clean_rewrite(response: str | None) -> str:
    """The rewritten text out of a chat response ("" when nothing usable is left).

    >>> clean_rewrite('Here is the paraphrase:\\n\\n"Tom owns 3 apples."')
    'Tom owns 3 apples.'
    """
    if not response:
        return ""
    text = response.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    text = _TAGS.sub("", text).strip()
    text = _strip_preamble(text)
    text = _strip_commentary(text).strip()
    text = _strip_quotes(text)
    text = _strip_preamble(text).strip()
    return _strip_trailing_label(text)


def _strip_trailing_label(text: str) -> str:
    stripped = _TRAILING_LABEL.sub("", text).rstrip()
    return stripped if stripped else text


def first_nonempty_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def llm_rewrite(
    ctx: TransformContext,
    instruction: str,
    text: str,
    *,
    what: str,
    examples: Sequence[tuple[str, str]] = (),
    by_sentence: bool = False,
) -> str:
    """Ask the transformation endpoint for a rewrite (the best of k candidates, see
    ``relations.candidates``); NotApplicable when every candidate comes back empty. A small
    rewriter (``ctx.few_shot``) gets ``examples`` in its prompt; ``by_sentence``: the rewrite
    may be asked sentence by sentence, which a small rewriter is (``ctx.by_sentence``)."""
    shown = examples if ctx.few_shot else ()

    def make_of(piece: str) -> MakeCandidate:
        prompt = build_rewrite_prompt(instruction, piece, examples=shown)

        def make(rewrite: Rewriter) -> str:
            cleaned = clean_rewrite(rewrite(prompt))
            if not cleaned:
                raise NotApplicable(f"the transformation endpoint returned an empty {what}")
            return cleaned

        return make

    return _best(ctx, text, make_of, by_sentence)


def _best(ctx: TransformContext, text: str, make_of: MakeCandidateOf, by_sentence: bool) -> str:
    if by_sentence and ctx.by_sentence:
        return best_by_sentence(ctx, text, make_of)
    return best_of_k(ctx, text, make_of(text))


def single_line_rewrite(
    ctx: TransformContext,
    instruction: str,
    text: str,
    *,
    what: str,
    min_ratio: float = 0.5,
    max_ratio: float = 2.0,
    examples: Sequence[tuple[str, str]] = (),
    by_sentence: bool = False,
) -> str:
    """AgentDiff-style filtered rewrite: first non-empty line, sane length, not identical (each
    candidate filtered, then the best of k kept; ``by_sentence``: see ``llm_rewrite``)."""
    shown = examples if ctx.few_shot else ()

    def make_of(piece: str) -> MakeCandidate:
        prompt = build_rewrite_prompt(instruction, piece, single_line=True, examples=shown)

        def make(rewrite: Rewriter) -> str:
            return _filtered_line(rewrite(prompt), piece, what, min_ratio, max_ratio)

        return make

    return _best(ctx, text, make_of, by_sentence)


def _filtered_line(response: str, text: str, what: str, min_ratio: float, max_ratio: float) -> str:
    line = first_nonempty_line(clean_rewrite(response))
    if not line:
        raise NotApplicable(f"the transformation endpoint returned an empty {what}")
    source_length = max(1, len(text.strip()))
    ratio = len(line) / source_length
    if ratio < min_ratio:
        raise NotApplicable(
            f"{what} rejected: too short ({len(line)} characters for a source of {source_length})"
        )
    if ratio > max_ratio:
        raise NotApplicable(
            f"{what} rejected: too long ({len(line)} characters for a source of {source_length})"
        )
    if normalise_whitespace(line) == normalise_whitespace(text):
        raise NotApplicable(f"{what} rejected: identical to the source")
    return line
