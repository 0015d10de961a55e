"""si.* — the eight semantic-invariance relations for reasoning agents.

From the semantic-invariance paper: structural (identity, paraphrase, fact reordering), verbosity
(expansion, contraction) and contextual (academic, business framing; contrastive formulation, the
paper's negative control). Identity and the two framings are rule-based; the others are rewritten
by the transformation endpoint under an explicit "preserve every number, entity and the question"
constraint, and fact reordering falls back to a seeded sentence permutation without an endpoint.
"""

from __future__ import annotations

from relations.base import NotApplicable, RelationKind, TransformContext
from relations.llm_prompts import EXPAND_EXAMPLES, PARAPHRASE_EXAMPLES, llm_rewrite
from relations.registry import transform_relation
from relations.text_utils import (
    join_sentences,
    permute_changed,
    sentence_groups,
    split_question,
    split_sentences,
)

PAPER = "semantic-invariance-agentic-ai"
EXAMPLE = (
    "A cyclist rides 36 km in 1.5 hours. Her friend Maya rides the same route at 20 km/h. "
    "How long does Maya take?"
)
LLM_PRECONDITION = "a transformation endpoint (an empty rewrite is skipped)"

# Our own scholarly and professional framings; the original text sits unchanged inside them.
ACADEMIC_FRAMINGS = (
    "The following exercise is taken from the end-of-chapter problem set of an introductory "
    "university textbook.\n\n{text}",
    "Written examination, closed book. Read the item below carefully before you answer.\n\n{text}",
    "In a graduate seminar, the lecturer hands out the following item for the class to work "
    "through.\n\n{text}",
    "This item comes from a collection of teaching exercises used in undergraduate lecture "
    "courses.\n\n{text}\n\n(End of exercise.)",
)
BUSINESS_FRAMINGS = (
    "A logistics coordinator at a regional distribution centre passes on the following item from "
    "this morning's planning meeting.\n\n{text}",
    "Quality-control briefing: the inspection team has flagged the item below for review before "
    "the next production run.\n\n{text}",
    "An operations analyst includes the following item in the weekly report to management.\n\n"
    "{text}",
    "A client's project manager forwards the following item to the consulting team and asks for "
    "an assessment.\n\n{text}\n\n(End of forwarded item.)",
)

_PARAPHRASE = (
    "Paraphrase the text below: express exactly the same content with different words and a "
    "different sentence structure."
)
_REORDER = (
    "Rewrite the text below so that its independent facts are stated in a different order. "
    "Keep the question (or the instruction saying what to find) as the last sentence, and change "
    "the wording of the facts only as much as needed for the new order to read naturally."
)
_EXPAND = (
    "Expand the text below with clarifying elaboration: restate what the situation means, spell "
    "out definitions of the terms it uses, or describe the setting in more words. The additions "
    "must not contain any new information that would be needed or useful to answer it."
)
_CONTRACT = (
    "Make the text below as short as possible: remove redundant or non-essential wording, but keep "
    "every fact needed to answer it."
)
_CONTRASTIVE = (
    "Rewrite the text below and add one or two sentences that contrast it with a different "
    "scenario or point out a common misconception about this kind of problem. The added sentences "
    "must not change the facts or the question and must not hint at the answer."
)


@transform_relation(
    id="si.identity",
    name="Identity",
    category="structural",
    description="The unchanged input, sent again: measures the model's own sampling noise (the "
    "baseline every other relation is compared with).",
    example=EXAMPLE,
    ref=f"{PAPER}: τ_id (identity)",
    params={"allow_identical": True},
    noise_floor=True,
)
def identity(text: str, ctx: TransformContext) -> str:
    return text


@transform_relation(
    id="si.paraphrase",
    name="Paraphrase",
    category="structural",
    description="Rephrase the input with other words and sentence structure, same meaning.",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions=LLM_PRECONDITION,
    ref=f"{PAPER}: τ_para (paraphrase)",
    similarity_floor=0.7,
)
def paraphrase(text: str, ctx: TransformContext) -> str:
    return llm_rewrite(
        ctx, _PARAPHRASE, text, what="paraphrase", examples=PARAPHRASE_EXAMPLES, by_sentence=True
    )


def permute_facts(text: str, ctx: TransformContext) -> str:
    """Rule-based fact reordering: permute independent fact sentences, keep the question last."""
    facts, question = split_question(split_sentences(text))
    groups = sentence_groups(facts)
    if len(groups) < 2:
        raise NotApplicable(
            f"needs at least 2 independent fact sentences to reorder, found {len(groups)}"
        )
    if all(group == groups[0] for group in groups):
        raise NotApplicable("the fact sentences are all the same; no order can differ")
    reordered = [sentence for group in permute_changed(groups, ctx.rng) for sentence in group]
    return join_sentences(reordered + ([question] if question else []))


@transform_relation(
    id="si.reorder_facts",
    name="Reorder facts",
    category="structural",
    description="Permute the order of the independent facts, keeping the question last. Rewritten "
    "by the transformation endpoint; without one, a seeded permutation of the fact sentences "
    "(a sentence starting with 'He', 'Then', 'After that' … moves with the one before it).",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions="at least 2 independent fact sentences (without a transformation endpoint)",
    ref=f"{PAPER}: τ_reord (reorder facts)",
    similarity_floor=0.8,
)
def reorder_facts(text: str, ctx: TransformContext) -> str:
    if ctx.rewrite is None:
        return permute_facts(text, ctx)
    return llm_rewrite(ctx, _REORDER, text, what="fact reordering")


@transform_relation(
    id="si.expand",
    name="Expand",
    category="verbosity",
    description="Add clarifying but non-informative elaboration (definitions, restatements).",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions=LLM_PRECONDITION,
    ref=f"{PAPER}: τ_exp (expand)",
    similarity_floor=0.6,
)
def expand(text: str, ctx: TransformContext) -> str:
    return llm_rewrite(
        ctx, _EXPAND, text, what="expansion", examples=EXPAND_EXAMPLES, by_sentence=True
    )


@transform_relation(
    id="si.contract",
    name="Contract",
    category="verbosity",
    description="Remove redundant wording while keeping every fact needed for the answer.",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions=LLM_PRECONDITION,
    ref=f"{PAPER}: τ_con (contract)",
    similarity_floor=0.7,
)
def contract(text: str, ctx: TransformContext) -> str:
    return llm_rewrite(ctx, _CONTRACT, text, what="contraction", by_sentence=True)


@transform_relation(
    id="si.academic",
    name="Academic framing",
    category="contextual",
    description="Frame the unchanged input as a textbook exercise or exam item (one of four "
    "framings, chosen by the case seed).",
    example=EXAMPLE,
    ref=f"{PAPER}: τ_acad (academic context)",
)
def academic(text: str, ctx: TransformContext) -> str:
    return ctx.rng.choice(ACADEMIC_FRAMINGS).format(text=text)


@transform_relation(
    id="si.business",
    name="Business framing",
    category="contextual",
    description="Frame the unchanged input as a logistics, quality-control or operations item "
    "(one of four framings, chosen by the case seed).",
    example=EXAMPLE,
    ref=f"{PAPER}: τ_bus (business context)",
)
def business(text: str, ctx: TransformContext) -> str:
    return ctx.rng.choice(BUSINESS_FRAMINGS).format(text=text)


@transform_relation(
    id="si.contrastive",
    name="Contrastive formulation",
    category="contextual",
    description="Add a contrast with an alternative scenario or a common misconception. Negative "
    "control: not strictly meaning-preserving, it stresses focus under distracting comparisons.",
    example=EXAMPLE,
    kind=RelationKind.LLM,
    preconditions=LLM_PRECONDITION,
    ref=f"{PAPER}: τ_contr (contrastive; negative control)",
    negative_control=True,
    similarity_floor=0.5,
)
def contrastive(text: str, ctx: TransformContext) -> str:
    return llm_rewrite(ctx, _CONTRASTIVE, text, what="contrastive rewrite")
