"""The validity gate on rewrites by a small model (issue 23, item 7).

Every example the issue lists, each SKIPped with a named reason. The semantic-invariance paper
(§3, its transformations must keep "the semantic content required to solve the problem") and
LLMorph (§3, an invariance relation's follow-up says the same thing as its source) are the rule:
a rewrite that answers, comments, drops the question or changes a quantity is no paraphrase, and
a verdict judged on it is evidence of nothing.
"""

from __future__ import annotations

import pytest

from relations.llm_prompts import clean_rewrite
from relations.registry import get_relation
from relations.requirements import wordnet_status
from relations.validity import check_followup, opening_names

PROBLEM = "Tom has 3 marbles and gives 2 to Ann. How many marbles does Tom have now?"
TRAIN = "The train leaves Leeds at 6:45 and the trip takes 45 minutes. When does it arrive?"
REVIEW = "The staff were friendly, the room was lovely and the breakfast was delicious."

# (relation, source, rewrite, the gate's reason) — each reason worked out by hand below.
SMALL_MODEL_REWRITES = [
    # Meta-text: the rewriter answers instead of rewriting.
    (
        "si.paraphrase",
        PROBLEM,
        "The answer to the question is: Tom has 3 marbles and gives 2 to Ann. How many marbles "
        "does Tom have now?",
        'invalid_followup: meta-commentary ("The answer to the question is")',
    ),
    # Meta-text: it talks about the rewrite.
    (
        "ad.paraphrase",
        PROBLEM,
        "This sentence can be rephrased as: Tom has 3 marbles and gives 2 to Ann. How many "
        "marbles does Tom have now?",
        'invalid_followup: meta-commentary ("This sentence can be rephrased")',
    ),
    # … with "the" (SmolLM2 on a held-out review, bench/data/rewriter_texts_held_out_4.jsonl).
    (
        "ad.paraphrase",
        REVIEW,
        "The text could be rephrased to: The staff were friendly, the room was lovely and the "
        "breakfast was delicious.",
        'invalid_followup: meta-commentary ("The text could be rephrased")',
    ),
    # Instruction echo, from the back-translation prompt.
    (
        "sentence.back_translation",
        REVIEW,
        "Translate this to Spanish: the staff were friendly, the room was lovely and the "
        "breakfast was delicious.",
        'invalid_followup: meta-commentary ("Translate this")',
    ),
    # "Here is …" left inside the text (mid-reply, so the cleaner did not take it off).
    (
        "si.expand",
        REVIEW,
        "The hotel stay went well. Here is the expanded text: the staff were friendly, the room "
        "was lovely and the breakfast was delicious.",
        'invalid_followup: meta-commentary ("Here is")',
    ),
    # A pivot language's opener: French "voici" (here is).
    (
        "sentence.back_translation",
        REVIEW,
        "Voici: the staff were friendly, the room was lovely and the breakfast was delicious.",
        'invalid_followup: meta-commentary ("Voici")',
    ),
    # Two versions in one reply: a label with text after it.
    (
        "si.paraphrase",
        REVIEW,
        "The staff were friendly and the room was lovely. Rewritten text: the breakfast was "
        "delicious, the staff friendly and the room lovely.",
        'invalid_followup: meta-commentary ("Rewritten text:")',
    ),
    # The translation never came back into English: of its 11 words none is an English function
    # word (0 < 5 %), while the source has "the" ×3, "were", "was" ×2, "and": 7 of 13 (54 %).
    (
        "sentence.back_translation",
        REVIEW,
        "El personal fue amable, la habitación era bonita y el desayuno delicioso.",
        "invalid_followup: not in English",
    ),
    # A question replaced by a statement (numbers and names kept, so only the question is gone).
    (
        "si.paraphrase",
        TRAIN,
        "The train leaves Leeds at 6:45, the trip takes 45 minutes and it arrives.",
        "invalid_followup: the question became a statement",
    ),
    # The question replaced by its answer: 6 and 45 of the source are gone (dropped content is
    # checked first), "7:30" is new.
    (
        "si.paraphrase",
        TRAIN,
        "The train from Leeds arrives at 7:30.",
        "invalid_followup: dropped 6, 45",
    ),
    # An answer added after the question.
    (
        "si.expand",
        PROBLEM,
        "Tom has 3 marbles and gives 2 to Ann, his sister. How many marbles does Tom have now? "
        "He has one left.",
        'invalid_followup: text added after the question ("He has one left.")',
    ),
    # "Tom has now 1 of them": 3 and 2 kept, the question kept, 1 added (3 − 2, the answer).
    (
        "ad.paraphrase",
        PROBLEM,
        "Tom has 3 marbles, gives 2 to Ann and has now 1 of them. How many marbles does Tom have?",
        "invalid_followup: numbers added (1)",
    ),
    # A number written in words dropped: "three" is 3, not in the rewrite.
    (
        "si.paraphrase",
        "Ann read three books in May. How many books did Ann read?",
        "Ann read some books in May. How many books did Ann read?",
        "invalid_followup: numbers dropped (3)",
    ),
    # The worked examples of the small rewriter's prompt copied in: "staff" and "kind" are words
    # of our examples, not of the source (read in the rewriter bench's output).
    (
        "si.paraphrase",
        "The waiter was friendly and the soup was delicious.",
        "The waiter was friendly and the soup was delicious, but the staff were kind.",
        "invalid_followup: copied from the prompt's examples (staff, kind)",
    ),
    # Commentary on the rewrite, from the same bench.
    (
        "si.expand",
        "The waiter was friendly and the soup was delicious.",
        "The waiter was friendly and the soup was delicious. In this context, it is referring to "
        "a friendly waiter.",
        'invalid_followup: meta-commentary ("In this context")',
    ),
    # Sentiment words lost: friendly, lovely, delicious (3 positive) → friendly (1); 1 < 3 / 2.
    (
        "si.paraphrase",
        REVIEW,
        "The staff were friendly, and there was a room and a breakfast.",
        "invalid_followup: sentiment words lost (positive: 3 → 1)",
    ),
    # The embedded SmolLM2's rewrites on the 20-text bench (bench/data/rewriter_review.jsonl),
    # judged before these checks and read as invalid by us:
    # the speaker changed: "my headphones" are someone else's now.
    (
        "si.paraphrase",
        "My new headphones broke after two days, which is really disappointing.",
        "Your new headphones broke after two days, which is really disappointing.",
        "invalid_followup: the speaker changed (my → your)",
    ),
    # Held-out set 8 (asked sentence by sentence): another person does the work, and a summary
    # announced before the text.
    (
        "si.paraphrase",
        "Hugo earns 12 pounds an hour. He works 6 hours on Sunday. How much does he earn on "
        "Sunday?",
        "Hugo earns 12 pounds an hour. She works 6 hours on Sunday. How much does he earn on "
        "Sunday?",
        "invalid_followup: a pronoun changed (he → she)",
    ),
    (
        "ad.paraphrase",
        "A bag of rice weighs 5 kilograms. A family eats 250 grams a day. How many days does the "
        "bag last?",
        "To summarize, A bag of rice weighs 5 kilograms. A family eats 250 grams every day. How "
        "many days does the bag last?",
        'invalid_followup: meta-commentary ("To summarize")',
    ),
    # a comment on the source's wording after the source itself.
    (
        "si.expand",
        "The hotel room was clean, quiet and comfortable.",
        "The hotel room was clean, quiet and comfortable.\nThis sentence uses the adjective "
        '"clean" to describe the room.',
        'invalid_followup: meta-commentary ("This sentence uses")',
    ),
    # two versions under labels.
    (
        "si.paraphrase",
        "Our guide in Lisbon was helpful and made the tour fun.",
        'Original: "The guide in Lisbon was helpful and made the tour fun."\nRephrased: "Our '
        'guide in Lisbon helped and made the tour fun"',
        'invalid_followup: meta-commentary ("Original:")',
    ),
    # a label of the rewriter's own before the text.
    (
        "si.expand",
        "The delivery arrived early and the packaging was perfect.",
        "The text: The delivery arrived early and the packaging was perfect.",
        'invalid_followup: meta-commentary ("The text:")',
    ),
    # the question framed as someone's request.
    (
        "si.paraphrase",
        "Omar cycles 18 kilometres in 45 minutes. What is his speed in kilometres per hour?",
        "A user asks the question: Omar cycles 18 kilometres in 45 minutes. What is his speed "
        "in kilometres per hour?",
        'invalid_followup: meta-commentary ("A user asks")',
    ),
    # our prompt ("do not add a title"), and an instruction of its own, echoed.
    (
        "si.expand",
        "The laptop is fast, but the screen is dull and the keyboard feels cheap.",
        "The laptop is fast, but the screen is dull and the keyboard feels cheap.\nRefuse to "
        "answer or add a title.",
        'invalid_followup: meta-commentary ("Refuse to answer")',
    ),
    (
        "si.expand",
        "The hotel room was clean, quiet and comfortable.",
        'The hotel room was clean, quiet and comfortable.\nRefine the sentence to: "The hotel '
        'room is clean, quiet, and also..."',
        'invalid_followup: meta-commentary ("Refine the sentence to")',
    ),
    # our preservation constraint's list, echoed after the text (second held-out bench set).
    (
        "si.paraphrase",
        "This little cafe makes the best pancakes in town.",
        "This little cafe makes the best pancakes in town, keeping every number, quantity, unit, "
        "name, and mathematical expression unchanged.",
        'invalid_followup: meta-commentary ("number, quantity, unit")',
    ),
]


@pytest.mark.parametrize(("relation_id", "source", "rewrite", "reason"), SMALL_MODEL_REWRITES)
def test_invalid_rewrites_of_a_small_model_are_skipped_with_a_named_reason(
    relation_id, source, rewrite, reason
):
    """Issue 23 item 7: each example of the issue (semantic-invariance paper §3) is a SKIP."""
    assert check_followup(get_relation(relation_id), source, rewrite) == reason


@pytest.mark.parametrize(
    ("relation_id", "source", "rewrite"),
    [
        # A paraphrase that keeps numbers, names, the question and the polarity.
        (
            "si.paraphrase",
            PROBLEM,
            "Tom owns 3 marbles and hands 2 of them to Ann. How many marbles has Tom got now?",
        ),
        # "one" adds no quantity ("one of them" stands for a thing, not a count).
        (
            "ad.paraphrase",
            PROBLEM,
            "Tom has 3 marbles and gives 2 to Ann, one friend of his. How many marbles does Tom "
            "have now?",
        ),
        # Two of three positive words kept: 2 ≥ 3 / 2.
        (
            "si.paraphrase",
            REVIEW,
            "The breakfast was delicious, the room lovely, and the staff were welcoming.",
        ),
        # The source itself says "the answer is": saying it again is no commentary.
        (
            "si.paraphrase",
            "If the answer is 4, what was the question?",
            "What was the question, if the answer is 4?",
        ),
        # The speaker may stay the speaker, and a question may still address the reader.
        (
            "si.paraphrase",
            "I waited an hour on the phone and the agent was rude to me.",
            "I spent an hour on hold, and the agent was rude to me.",
        ),
        (
            "si.paraphrase",
            "How many apples do you have left after you eat 2 of 5?",
            "After you eat 2 of 5 apples, how many do you have left?",
        ),
        # "text" and "original" inside a sentence are no labels.
        (
            "si.paraphrase",
            "The original plan was to send the text by noon.",
            "The plan at first was to send the text by noon.",
        ),
        # An expansion may add words before the question, as long as it stays last.
        (
            "si.expand",
            PROBLEM,
            "Tom, a boy, has 3 marbles, small glass balls, and gives 2 to Ann. How many marbles "
            "does Tom have now?",
        ),
    ],
)
def test_faithful_rewrites_pass_the_gate(relation_id, source, rewrite):
    """The gate rejects what changed the meaning, not every rewording (LLMorph §3)."""
    assert check_followup(get_relation(relation_id), source, rewrite) is None


def test_a_trailing_rewritten_text_label_is_cut_off_and_the_rewrite_kept():
    """Issue 23 item 7: a dangling "Rewritten text:" is the small model starting our prompt's
    format again; nothing follows it, so it is stripped and the text before it is the rewrite.
    """
    reply = "Tom owns 3 marbles and hands 2 to Ann. How many has he now?\n\nRewritten text:"
    assert clean_rewrite(reply) == "Tom owns 3 marbles and hands 2 to Ann. How many has he now?"
    assert clean_rewrite("Ann reads a book. Paraphrase:") == "Ann reads a book."
    # A reply that is nothing but the label is empty: the relation SKIPs it as an empty rewrite.
    assert clean_rewrite("Rewritten text:") == ""


needs_wordnet = pytest.mark.skipif(
    not wordnet_status()[0], reason="WordNet is not installed (make installs it)"
)


@needs_wordnet
def test_a_name_that_opens_a_sentence_is_protected_too():
    """The embedded SmolLM2 wrote "Alejandra is 9 years old, …" for "Lena is 9 years old, …"
    (bench, statements-only prompt): another girl. 'Lena' opens the only sentence it is in, so
    the capitalised-word check skipped it, and it is on none of our name lists; WordNet knows no
    common word 'lena' (only the river "Lena"), so it is a name."""
    source = "Lena is 9 years old and her brother is 4 years older. How old will he be in 3 years?"
    renamed = (
        "Alejandra is 9 years old, and her brother is 4 years older. How old will he be in 3 years?"
    )
    paraphrase = get_relation("si.paraphrase")
    assert opening_names(source) == ["Lena"]
    assert check_followup(paraphrase, source, renamed) == "invalid_followup: dropped Lena"
    kept = "Lena is nine years old and her brother is four years older."
    assert check_followup(paraphrase, source, kept + " How old will he be in 3 years?") is None
    # Opening pronouns and determiners are no names, even where WordNet lacks them ("My").
    assert opening_names("My phone broke. He said so. Its screen is dark.") == []
    # Opening words that are common words are no names ("Every", "Shop", "Overall").
    assert opening_names("Every day Sam reads 15 pages. Overall, it was fun. Shop 3 is shut.") == []
    moved = "Each week Priya saves 12 dollars. How many weeks until she has saved 96 dollars?"
    source = "Priya saves 12 dollars a week. How many weeks does she need to save 96 dollars?"
    assert check_followup(paraphrase, source, moved) is None


def test_without_wordnet_only_the_listed_names_are_known(monkeypatch):
    """The gate never fails for want of WordNet: opening names are then not checked."""
    import relations.wordnet

    def missing(word: str) -> bool:
        raise RuntimeError("WordNet is not installed")

    monkeypatch.setattr(relations.wordnet, "is_common_word", missing)
    assert opening_names("Lena is 9 years old.") == []


def test_a_pronoun_swap_counts_only_where_the_source_speaks_of_one_person():
    """ "He" → "she" is another person; a source that has both may have its pronouns moved."""
    from relations.validity import person_reason

    assert person_reason("He runs. He rests.", "She runs. He rests.") == (
        "a pronoun changed (he → she)"
    )
    assert person_reason("She thanked him.", "He was thanked by her.") is None
    assert person_reason("Mia reads her book.", "Mia reads his book.") == (
        "a pronoun changed (her → his)"
    )
