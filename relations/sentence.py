"""sentence.* — LLMorph's sentence-level relations (catalogue numbers in ``ref``).

Identity (49), paraphrase (51), sentence shuffle (19), a random neutral sentence added (84),
back-translation through the transformation endpoint (120) and upper-casing (102). Each should
leave the answer unchanged (EQUIVALENT).
"""

from __future__ import annotations

from relations.base import (
    CLAIM_FIELDS,
    NOT_FOR_NLI,
    NotApplicable,
    RelationKind,
    Rewriter,
    TransformContext,
)
from relations.candidates import best_of_k
from relations.llm_prompts import (
    PARAPHRASE_EXAMPLES,
    PRESERVATION_CONSTRAINT,
    clean_rewrite,
    llm_rewrite,
)
from relations.registry import transform_relation
from relations.text_utils import (
    join_sentences,
    outside_math,
    permute_changed,
    sentence_groups,
    split_question,
    split_sentences,
)

EXAMPLE = "The hotel room was small. The staff, however, were friendly and quick to help."

# Our own sentiment-neutral, number-free sentences for LLMorph 84.
NEUTRAL_SENTENCES = (
    "The station has a large clock above its main entrance.",
    "Some people read the newspaper with their morning coffee.",
    "The river runs along the eastern edge of the town.",
    "Most of the shelves in the shop are made of pine.",
    "A weather report is broadcast after the evening news.",
    "The library lends out maps as well as books.",
    "Buses leave from the square in front of the town hall.",
    "The path to the lake is lined with tall grass.",
)

# Intermediate languages for LLMorph 120, picked by the case seed (overridable via params).
BACK_TRANSLATION_LANGUAGES = ("French", "German", "Spanish", "Italian", "Portuguese")

_PARAPHRASE = (
    "Paraphrase the text below: say exactly the same thing with different words, keeping its tone."
)
_TO_PIVOT = """Translate the text below into {language}.
Keep every number, name and mathematical expression exactly as written.
Reply with the {language} translation only.
{example}
<text>
{text}
</text>"""
_FROM_PIVOT = """Translate the {language} text below into English.
{constraint}
Reply with the English translation only.
{example}
<text>
{text}
</text>"""


def _llmorph(number: int) -> str:
    return f"LLMorph {number}"


# A worked example of each translation direction for a small rewriter (ours).
_ENGLISH_EXAMPLE = "Mia has 5 pens and buys 2 more."
_PIVOT_EXAMPLE = {
    "French": "Mia a 5 stylos et en achète 2 de plus.",
    "German": "Mia hat 5 Stifte und kauft 2 weitere.",
    "Spanish": "Mia tiene 5 bolígrafos y compra 2 más.",
    "Italian": "Mia ha 5 penne e ne compra altre 2.",
    "Portuguese": "Mia tem 5 canetas e compra mais 2.",
}
_EXAMPLE = "\nExample:\n<text>\n{source}\n</text>\n{translation}\n"


def _pivot_examples(language: str, few_shot: bool) -> tuple[str, str]:
    """The examples of the two translation prompts ("" each without few-shot, or for a language
    we have no example in): into the pivot language, and back into English."""
    pivot = _PIVOT_EXAMPLE.get(language)
    if not few_shot or pivot is None:
        return "", ""
    return (
        _EXAMPLE.format(source=_ENGLISH_EXAMPLE, translation=pivot),
        _EXAMPLE.format(source=pivot, translation=_ENGLISH_EXAMPLE),
    )


@transform_relation(
    id="sentence.identity",
    name="Identity",
    category="sentence",
    description="The unchanged input (LLMorph's identity relation; measures sampling noise).",
    example=EXAMPLE,
    ref=_llmorph(49),
    params={"allow_identical": True},
)
def identity(text: str, ctx: TransformContext) -> str:
    return text


@transform_relation(
    id="sentence.paraphrase",
    name="Paraphrase",
    category="sentence",
    description="Paraphrase the input with the transformation endpoint.",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions="a transformation endpoint (an empty rewrite is skipped)",
    ref=_llmorph(51),
    similarity_floor=0.7,
)
def paraphrase(text: str, ctx: TransformContext) -> str:
    return llm_rewrite(
        ctx, _PARAPHRASE, text, what="paraphrase", examples=PARAPHRASE_EXAMPLES, by_sentence=True
    )


@transform_relation(
    id="sentence.shuffle",
    name="Shuffle sentences",
    category="sentence",
    description="Put the sentences after the first in a seeded new order (joined with single "
    "spaces). The first sentence (it introduces who and what) and the question stay where they "
    "are, and a sentence that refers back ('She …', 'Then …', '… it') moves with the one before "
    "it, so every pronoun still follows the name it stands for.",
    example=EXAMPLE,
    preconditions="2 different sentences after the first that can move on their own",
    ref=_llmorph(19),
    # As in LLMorph: an NLI premise is one or two sentences, and the order of its events can be
    # what the hypothesis is about.
    gate=NOT_FOR_NLI,
)
def shuffle(text: str, ctx: TransformContext) -> str:
    sentences = split_sentences(text)
    if len(sentences) < 2:
        raise NotApplicable(f"needs at least 2 sentences, found {len(sentences)}")
    if len(set(sentences)) < 2:
        raise NotApplicable("all sentences are the same; no order can differ")
    context, question = split_question(sentences)
    if question is not None and question != sentences[-1]:
        context, question = sentences, None  # a question mid-text is just another sentence
    # The first sentence introduces who and what the others talk about: it stays first.
    head, *groups = sentence_groups(context)
    if len(groups) < 2 or all(group == groups[0] for group in groups):
        raise NotApplicable("no two sentences after the first that can move on their own")
    moved = [sentence for group in permute_changed(groups, ctx.rng) for sentence in group]
    return join_sentences(head + moved + ([question] if question is not None else []))


@transform_relation(
    id="sentence.add_random",
    name="Add a random sentence",
    category="sentence",
    description="Append a neutral, unrelated sentence (from a fixed list, picked by the case "
    "seed). In NLI only the premise gets it: an extra sentence in the hypothesis is an extra "
    "claim, which can break an entailment.",
    example=EXAMPLE,
    ref=_llmorph(84),
    kept_fields=CLAIM_FIELDS,
)
def add_random(text: str, ctx: TransformContext) -> str:
    return f"{text.rstrip()} {ctx.rng.choice(NEUTRAL_SENTENCES)}"


@transform_relation(
    id="sentence.back_translation",
    name="Back-translation",
    category="sentence",
    description="Translate into an intermediate language (chosen by the case seed) and back to "
    "English, both with the transformation endpoint.",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions="a transformation endpoint (two calls; an empty translation is skipped)",
    ref=_llmorph(120),
    similarity_floor=0.7,
    params={"languages": BACK_TRANSLATION_LANGUAGES},
)
def back_translation(text: str, ctx: TransformContext) -> str:
    ctx.require_rewriter()
    language = ctx.rng.choice(tuple(ctx.params.get("languages") or BACK_TRANSLATION_LANGUAGES))

    def make(rewrite: Rewriter) -> str:
        to_pivot, from_pivot = _pivot_examples(language, ctx.few_shot)
        pivot = clean_rewrite(
            rewrite(_TO_PIVOT.format(language=language, example=to_pivot, text=text))
        )
        if not pivot:
            raise NotApplicable(
                f"the transformation endpoint returned an empty {language} translation"
            )
        back = clean_rewrite(
            rewrite(
                _FROM_PIVOT.format(
                    language=language,
                    constraint=PRESERVATION_CONSTRAINT,
                    example=from_pivot,
                    text=pivot,
                )
            )
        )
        if not back:
            raise NotApplicable(
                f"the transformation endpoint returned an empty translation from {language}"
            )
        return back

    return best_of_k(ctx, text, make)


@transform_relation(
    id="sentence.uppercase",
    name="Upper-case",
    category="sentence",
    description="Upper-case every letter of the prose; math spans ($…$, \\(…\\)) and LaTeX "
    "commands are left as they are, since case matters there.",
    example=EXAMPLE,
    preconditions="some lower-case prose",
    ref=_llmorph(102),
)
def uppercase(text: str, ctx: TransformContext) -> str:
    upper = outside_math(text, str.upper)
    if upper == text:
        raise NotApplicable("no lower-case letters outside math to upper-case")
    return upper
