"""Clauses a rewrite must say again, each about the same thing (issue 23, items 7 and the target
of at most 1 judged case in 20 on an invalid rewrite).

LLMorph (§3) and the semantic-invariance paper (§3) ask an invariance relation's follow-up to say
what its source says; a rewrite that drops half a review's complaint, or moves one thing's fault
to another, says something else, and a verdict judged on it is evidence of nothing. The
rewrites below are the embedded SmolLM2's, read by us on the 20-text bench
(``bench/data/rewriter_review.jsonl``); the faithful ones are of our own writing
(``tests/relations/data/faithful_rewrites.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from relations.english.clauses import (
    CLAUSE_FLOOR,
    added_lines,
    dropped_clause,
    moved_detail,
    new_claim,
    split_clauses,
)
from relations.english.sentiment_words import polarity_counts
from relations.registry import get_relation
from relations.validity import check_followup
from storage.gate_verbs import reason_kind
from tests.relations.bench_readings import read_rewrites

LAPTOP = "The laptop is fast, but the screen is dull and the keyboard feels cheap."
PHONE = "I waited an hour on the phone and the agent was rude to me."


def test_clauses_split_where_a_new_subject_is_coordinated():
    assert split_clauses(LAPTOP) == [
        "The laptop is fast",
        "the screen is dull",
        "the keyboard feels cheap.",
    ]
    assert split_clauses(PHONE) == ["I waited an hour on the phone", "the agent was rude to me."]
    # A list of adjectives, and a verb phrase sharing its subject, stay one clause.
    assert split_clauses("The hotel room was clean, quiet and comfortable.") == [
        "The hotel room was clean, quiet and comfortable."
    ]
    assert split_clauses("Tom has 3 marbles and gives 2 to Ann. How many has he?") == [
        "Tom has 3 marbles and gives 2 to Ann.",
        "How many has he?",
    ]
    # A short opener belongs to the clause after it.
    assert split_clauses("However, the soup was cold and the bread was stale.") == [
        "However, the soup was cold",
        "the bread was stale.",
    ]


def test_a_detail_said_in_another_clause_than_its_own_has_moved():
    """'cheap' belongs to the keyboard's clause; the rewrite says "the screen feels cheap" and
    says the keyboard's clause again without it. 'beautiful' belongs to the paintings."""
    swapped = "The laptop is fast, but the screen feels cheap and the keyboard is dull."
    moved = moved_detail(LAPTOP, swapped)
    assert moved is not None
    assert moved.into == "the screen feels cheap"
    assert moved.between == ("the screen is dull", "the keyboard feels cheap.")
    museum = "The museum was quiet and the paintings were beautiful."
    moved = moved_detail(museum, "The museum was beautiful and the paintings were fine.")
    assert moved is not None
    assert moved.into == "The museum was beautiful"
    assert moved.between == ("The museum was quiet", "the paintings were beautiful.")
    # Reordered clauses, each with its own details, moved nothing.
    reordered = "The screen is dull and the keyboard feels cheap, but the laptop is fast."
    assert moved_detail(LAPTOP, reordered) is None
    # One clause merging two is a faithful merge.
    merged = "The friendly waiter served a delicious soup."
    assert moved_detail("The waiter was friendly and the soup was delicious.", merged) is None
    # Naming the same thing again ("it" → "the tank") moves nothing: the tank is still said
    # where it belongs.
    tank = "A tank holds 200 litres of water and leaks 8 litres an hour. After how many hours is it empty?"
    again = (
        "A tank holds 200 litres of water. It leaks 8 litres an hour. After how many hours is "
        "the tank empty?"
    )
    assert moved_detail(tank, again) is None


def test_a_clause_below_the_floor_everywhere_in_the_rewrite_is_dropped():
    """Hand-set cosines: the wait matches nothing above 0.30, the rudeness matches 0.95."""
    rewrite = "The agent was rude to me."
    table = {
        ("I waited an hour on the phone", rewrite): 0.30,
        ("the agent was rude to me.", rewrite): 0.95,
    }

    def similarity(a: str, b: str) -> float:
        return table[(a, b)]

    dropped = dropped_clause(PHONE, rewrite, similarity)
    assert dropped is not None
    assert (dropped.clause, dropped.best) == ("I waited an hour on the phone", 0.30)
    table[("I waited an hour on the phone", rewrite)] = CLAUSE_FLOOR
    assert dropped_clause(PHONE, rewrite, similarity) is None  # at the floor: said again
    # A one-clause source is the whole-text floor's business.
    assert dropped_clause("The film was boring.", "Dull film.", lambda a, b: 0.0) is None


def test_a_clause_added_about_nothing_the_source_mentions_is_a_new_claim():
    softer = (
        "The laptop is fast. The screen is dull and the keyboard feels cheap, but it's still "
        "worth something for what it does."
    )
    assert new_claim(LAPTOP, softer) == "it's still worth something for what it does."
    # A clause reworded entirely is no addition (as many clauses as the source).
    assert new_claim("The film was boring.", "The movie was dull.") is None
    # An added clause that says again what the source says shares its words.
    disappointed = "My new headphones stopped working after two days, and I am really disappointed."
    source = "My new headphones broke after two days, which is really disappointing."
    assert new_claim(source, disappointed) is None


def test_an_expansion_may_add_sentences_about_its_source_only():
    """si.expand adds "clarifying, non-informative elaboration" (SPEC, after the SI paper §3):
    a sentence it adds must be about something the source mentions, and is checked as a whole
    sentence (its clauses may go on about why). si.paraphrase may add no clause at all."""
    expand, paraphrase = get_relation("si.expand"), get_relation("si.paraphrase")
    source = "The waiter was friendly and the soup was delicious."
    added = "The waiter was friendly and the soup was delicious, and we had a lovely evening."
    assert check_followup(expand, source, added) is None  # one sentence, as in the source
    assert check_followup(paraphrase, source, added) == (
        'invalid_followup: a claim added ("we had a lovely evening.")'
    )
    headphones = "My new headphones broke after two days, which is really disappointing."
    why = (
        "My new headphones, which I had only just bought, broke after two days. That is really "
        "disappointing, because I expected them to last."
    )
    assert check_followup(expand, headphones, why) is None
    comment = PHONE.replace("me.", "me. This is not a question I asked for.")
    assert check_followup(expand, PHONE, comment) == (
        'invalid_followup: a claim added ("This is not a question I asked for.")'
    )


def test_the_clause_check_asks_for_its_texts_in_one_batch():
    """A similarity with ``prefetch`` (the run's) gets every clause and target at once, before
    any pair is compared: one trip to the embedding process per candidate."""
    calls: list[tuple] = []

    class Similarity:
        def __call__(self, a: str, b: str) -> float:
            calls.append(("pair", a, b))
            return 0.9

        def prefetch(self, texts: list[str]) -> None:
            calls.append(("prefetch", tuple(texts)))

    rewrite = "I was on hold for an hour, and the agent was rude to me."
    assert dropped_clause(PHONE, rewrite, Similarity()) is None
    assert calls[0] == (
        "prefetch",
        (
            "I waited an hour on the phone",
            "the agent was rude to me.",
            rewrite,
            "I was on hold for an hour",
            "the agent was rude to me.",
        ),
    )
    assert all(kind == "pair" for kind, *_ in calls[1:]) and len(calls) == 1 + 2 * 3


def test_lines_added_to_a_one_line_source():
    verse = "A delightful bookstore, I will return.\nIn the realm of books, a tale is born."
    assert added_lines("What a lovely little bookshop, I will certainly come back.", verse) == 2
    assert added_lines("Line one.\nLine two.", "Line one.\nLine two.\nLine three.") is None
    assert added_lines("One line.", "One line, reworded.") is None


def test_sentiment_adverbs_count_as_their_adjectives():
    """'rudely' keeps the source's 'rude' (a faithful rewrite used to lose its polarity)."""
    assert polarity_counts("the agent treated me rudely")["negative"] == 1
    assert polarity_counts("happily, comfortably and perfectly")["positive"] == 3
    assert polarity_counts("terribly")["negative"] == 1
    assert polarity_counts("early family only")["positive"] == 0


# The invalid rewrites of the 20-text bench that the gate judged before these checks.
CAUGHT_NOW = {
    "The agent was rude to me.": 'a claim dropped ("I waited an hour on the phone"',
    "A customer waited and ordered a delicious meal from a friendly waiter.": (
        'a claim dropped ("the soup was delicious."'
    ),
    "The laptop is fast, but the screen feels cheap and the keyboard is dull.": ("a detail moved"),
    "The laptop is fast, but the screen feels cheap and the keyboard has a dull finish.": (
        "a detail moved"
    ),
    "The laptop is fast. The screen is dull and the keyboard feels cheap, but it's still worth "
    "something for what it does.": "a claim added (\"it's still worth something",
}


def test_the_read_rewrites_the_gate_used_to_judge_are_now_skipped(minilm_similarity):
    """With MiniLM's cosines: half the complaint dropped (0.27), the soup dropped (0.36), two
    swaps of the laptop's faults, a softer verdict added, and verse appended on new lines."""
    by_text = {r["followup"]: r for r in read_rewrites()}
    for text, reason in CAUGHT_NOW.items():
        row = by_text[text]
        assert not row["valid"]
        got = check_followup(get_relation(row["relation"]), row["source"], text, minilm_similarity)
        assert got is not None and got.startswith(f"invalid_followup: {reason}"), (text, got)
    verse = next(r for r in by_text.values() if "realm of books" in r["followup"])
    got = check_followup(
        get_relation(verse["relation"]), verse["source"], verse["followup"], minilm_similarity
    )
    expected = "lines added to a one-line source (4 lines: a second piece after the text)"
    assert got == f"invalid_followup: {expected}"
    # The yield table groups SKIPs by the words before the particulars.
    assert reason_kind(got) == "lines added to a one-line source"


def test_rewrites_read_as_valid_and_ours_still_pass(minilm_similarity):
    """The 125 bench rewrites we read as valid (9 on the tuning texts, 116 on the nine held-out
    sets) and 44 faithful rewrites of our own (merges, reordered clauses, synonyms, expansions)
    pass the whole gate; one of ours is rejected by design: 'not on time' → 'late' loses the
    negation word the gate protects."""
    read_valid = [r for r in read_rewrites() if r["valid"]]
    assert len(read_valid) == 125
    for row in read_valid:
        relation = get_relation(row["relation"])
        assert check_followup(relation, row["source"], row["followup"], minilm_similarity) is None
    ours = json.loads((Path(__file__).parent / "data/faithful_rewrites.json").read_text())
    assert len(ours) == 44
    for row in ours:
        relation = get_relation(row["relation"])
        got = check_followup(relation, row["source"], row["rewrite"], minilm_similarity)
        assert got == row["gate"], (row["rewrite"], got)


# Property tests: reviews built from random clauses ("the screen is dull"), checked against
# rewrites whose faithfulness is known by construction.
SUBJECTS = ("screen", "keyboard", "battery", "waiter", "soup", "garden", "museum", "driver")
ADJECTIVES = ("dull", "cheap", "quiet", "friendly", "delicious", "cold", "peaceful", "polite")
JOINS = (" and ", ", and ", ", but ", "; ")


@st.composite
def reviews(draw):
    count = draw(st.integers(min_value=2, max_value=4))
    subjects = draw(st.permutations(SUBJECTS))[:count]
    adjectives = draw(st.permutations(ADJECTIVES))[:count]
    verbs = [draw(st.sampled_from(("is", "was", "feels", "seemed"))) for _ in range(count)]
    clauses = [f"the {s} {v} {a}" for s, v, a in zip(subjects, verbs, adjectives, strict=True)]
    joins = [draw(st.sampled_from(JOINS)) for _ in range(count - 1)]
    return clauses, joins


def _text(clauses: list[str], joins: list[str]) -> str:
    body = clauses[0] + "".join(j + c for j, c in zip(joins, clauses[1:], strict=True))
    return body[0].upper() + body[1:] + "."


def _exact(a: str, b: str) -> float:
    """Cosine stand-in: 1 for the same words, 0 otherwise."""
    return 1.0 if a.strip(" .").lower() == b.strip(" .").lower() else 0.0


@settings(max_examples=200, deadline=None)
@given(reviews(), st.randoms(use_true_random=False))
def test_clause_checks_against_rewrites_built_to_be_faithful_or_not(review, rng):
    """The source itself and its clauses reordered are faithful: no check fires. Two clauses
    trading their adjectives have moved a detail; one clause left out is the clause dropped."""
    clauses, joins = review
    source = _text(clauses, joins)
    assert [c.strip(" .").lower() for c in split_clauses(source)] == clauses
    reordered = clauses[:]
    rng.shuffle(reordered)
    for faithful in (source, _text(reordered, joins)):
        assert moved_detail(source, faithful) is None
        assert new_claim(source, faithful) is None
        assert dropped_clause(source, faithful, _exact) is None
    i, j = rng.sample(range(len(clauses)), 2)
    traded = [c.split(" ") for c in clauses]
    traded[i][-1], traded[j][-1] = traded[j][-1], traded[i][-1]
    assert moved_detail(source, _text([" ".join(c) for c in traded], joins)) is not None
    kept = [c for k, c in enumerate(clauses) if k != i]
    dropped = dropped_clause(source, _text(kept, joins[: len(kept) - 1]), _exact)
    assert dropped is not None and dropped.clause.strip(" .").lower() == clauses[i]
