"""How many follow-ups of the rule-based invariance relations are invalid, on a corpus of our own.

Issue 9 item 8. LLMorph §3 (and AgentDiff §3.1 for ``ad.reorder``): an invariance relation's
follow-up must ask the same thing in other words. Each relation runs over the 25 texts of
``data/followup_corpus.json`` (our own writing: names, numbers, units, negations, math, several
sentences, questions, reviews), one seed per text, the way the runner does it: the transformation
(a SKIP when it finds nothing to change), then the validity gate (a SKIP when it sees breakage).
Every follow-up that would be *sent* is then checked by the mechanical definition below; the
target is at most 1 invalid follow-up in 20 texts per relation, and the data file records which
(relation, text) pairs are expected to be invalid, so a change in either direction is noticed.

A sent follow-up is **invalid** when any of these holds (each rule is mechanical):

1. ``numbers``: its number values (digits and number words) differ from the source's;
2. ``units``: its unit words ("km", "hours", "percent" …) differ from the source's (as a multiset);
3. ``negation``: its count of negation words ("not", "never", "n't" …) differs;
4. ``entity``: a named entity of the source (a capitalised word not opening a sentence, or a first
   name, city, country, weekday or month of our lists) is no longer written exactly as before;
5. grammar, checked on the words that changed and their neighbours:
   ``det+verb``: a word the relation put right after a determiner is a bare verb of our lexicon
   ("The develop leaves"); ``agreement``: "the/these/those + plural noun" directly followed by a
   singular verb ("the dogs guards"), or "a/an/this/that/each/every + singular noun" by "are",
   "were" or "have"; ``do+past``: do/does/did followed within three words by a past form that is
   not also a base form ("did they paid"); ``capital``: a capitalised "A", "An" or "The" inside a
   sentence ("Does A rectangle"); ``question``: a "?" followed by a lower-case word;
6. ``order`` (sentence-level relations): the follow-up's first sentence refers back (a pronoun
   or "Then …") when the source's did not, or the source's last-sentence question is not last.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from core.tasks import BUILTIN_TASKS
from relations.apply import SkippedFollowUp, transform_text
from relations.english.nouns import is_plural_noun
from relations.english.protect import UNIT_ABBREVIATIONS, UNIT_WORDS, negation_count
from relations.english.tokens import is_word, norm, tokenize
from relations.english.verbs import BASE_VERBS, has_kind
from relations.registry import get_relation
from relations.text_utils import is_question, leans_on_previous, split_sentences
from relations.validity import gate_followup, known_names, named_entities, number_values

CORPUS = json.loads((Path(__file__).parent / "data" / "followup_corpus.json").read_text())
TEXTS: list[str] = CORPUS["texts"]
EXPECTED_INVALID: dict[str, list[int]] = CORPUS["expected_invalid"]
MAX_INVALID_PER_20 = 1

FAST_RELATIONS = [
    "char.random_replace",
    "char.delete",
    "char.swap_neighbours",
    "char.leet",
    "char.insert",
    "char.add_spaces",
    "char.shuffle_inner",
    "char.keyboard_typos",
    "char.ocr_errors",
    "char.misspell",
    "word.number",
    "word.tense",
    "word.voice",
    "word.question_form",
    "sentence.shuffle",
    "ad.reorder",
]
WORDNET_RELATIONS = ["word.synonym"]

_DETERMINERS = frozenset({"a", "an", "the", "this", "that", "these", "those", "my", "its"})
_PLURAL_DETS = frozenset({"the", "these", "those"})
_SINGULAR_DETS = frozenset({"a", "an", "this", "that", "each", "every"})
_UNIT = re.compile(r"[A-Za-z]+")
_LETTER_AND_DIGIT = re.compile(r"[A-Za-z]\d|\d[A-Za-z]")


def _words(text: str) -> list[str]:
    return [t for t in tokenize(text) if is_word(t)]


def _units(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for match in _UNIT.finditer(text):
        word = match.group().lower()
        after_number = text[: match.start()].rstrip()[-1:].isdigit()
        if word in UNIT_WORDS or (after_number and word in UNIT_ABBREVIATIONS):
            found[word] += 1
    return found


def _entities(text: str) -> list[str]:
    return list(dict.fromkeys([*known_names(text), *named_entities(text)]))


def _grammar_breaks(source: str, followup: str) -> list[str]:
    breaks: list[str] = []
    before, after = _words(source), _words(followup)
    source_pairs = set(itertools.pairwise(before))
    for index, (left, word) in enumerate(itertools.pairwise(after)):
        if (left, word) in source_pairs:
            continue  # the source says the same here
        lowered, left_lower = norm(word), norm(left)
        bare_verb = lowered in BASE_VERBS and has_kind(lowered, "base") is not None
        new_word = not any(norm(w) == lowered for w in before)
        if left_lower in _DETERMINERS and bare_verb and new_word:
            breaks.append(f"det+verb: {left} {word}")
        nxt = norm(after[index + 2]) if index + 2 < len(after) else ""
        singular_verb = nxt in {"is", "was", "has", "does"} or (
            has_kind(nxt, "3sg") is not None and has_kind(nxt, "base") is None
        )
        if left_lower in _PLURAL_DETS and is_plural_noun(word) and singular_verb:
            breaks.append(f"agreement: {left} {word} {nxt}")
        if left_lower in _SINGULAR_DETS and not is_plural_noun(word) and nxt in {"are", "were"}:
            breaks.append(f"agreement: {left} {word} {nxt}")
    for index, word in enumerate(after):
        if norm(word) in {"do", "does", "did"}:
            for later in after[index + 1 : index + 4]:
                if has_kind(norm(later), "past") and not has_kind(norm(later), "base"):
                    breaks.append(f"do+past: {word} … {later}")
    for sentence in split_sentences(followup):
        for word in _words(sentence)[1:]:
            if word in {"A", "An", "The"}:
                breaks.append(f"capital: {word} inside a sentence")
    if re.search(r"\?\s+[a-z]", followup):
        breaks.append("question: '?' before a lower-case word")
    return breaks


def _order_breaks(source: str, followup: str) -> list[str]:
    before, after = split_sentences(source), split_sentences(followup)
    if not before or not after or sorted(before) != sorted(after):
        return []  # not a sentence-level rearrangement
    breaks = []
    if leans_on_previous(after[0]) and not leans_on_previous(before[0]):
        breaks.append(f"order: opens with {after[0]!r}")
    if is_question(before[-1]) and after[-1] != before[-1]:
        breaks.append("order: the question is no longer last")
    return breaks


def _without_leet(source: str, followup: str) -> str:
    # A digit the relation wrote inside a word ("7o", "0wns": leet, OCR) is a typo, not a number.
    # Such a word becomes a neutral placeholder; its punctuation stays, so sentences still split.
    kept = set(source.split())
    return " ".join(
        w if w in kept or not _LETTER_AND_DIGIT.search(w) else "typo" + re.sub(r"^[\w'’]+", "", w)
        for w in followup.split()
    )


def invalid_reasons(source: str, followup: str) -> list[str]:
    """Why a sent follow-up is invalid, by the mechanical rules of the module docstring."""
    reasons = []
    cleaned = _without_leet(source, followup)
    if number_values(source) != number_values(cleaned):
        reasons.append("numbers")
    if _units(source) != _units(cleaned):
        reasons.append("units")
    if negation_count(source) != negation_count(followup):
        reasons.append("negation")
    for entity in _entities(source):
        if not re.search(rf"(?<![\w]){re.escape(entity)}(?![\w])", followup):
            reasons.append(f"entity: {entity}")
    grammar = _grammar_breaks(source, cleaned)
    return reasons + grammar + _order_breaks(source, followup)


def sent_followups(relation_id: str) -> dict[int, str]:
    """Text index → the follow-up the runner would send (transformation and gate passed)."""
    relation = get_relation(relation_id)
    task_id = "relation_extraction" if relation_id == "word.question_form" else "sentiment"
    sent: dict[int, str] = {}
    for index, text in enumerate(TEXTS):
        followup = transform_text(relation, text, task=BUILTIN_TASKS[task_id], seed=index)
        if isinstance(followup, SkippedFollowUp):
            continue
        if gate_followup(relation, {"text": text}, followup) is None:
            sent[index] = followup.fields["text"]
    return sent


def _check(relation_id: str) -> None:
    sent = sent_followups(relation_id)
    invalid = {i: r for i, f in sent.items() if (r := invalid_reasons(TEXTS[i], f))}
    shown = {i: (sent[i], r) for i, r in invalid.items()}
    assert sorted(invalid) == EXPECTED_INVALID.get(relation_id, []), shown
    assert len(invalid) * 20 <= MAX_INVALID_PER_20 * len(TEXTS), shown


def test_the_corpus_is_varied_enough():
    assert len(TEXTS) >= 20
    assert sum(bool(number_values(t)) for t in TEXTS) >= 10
    assert sum(bool(negation_count(t)) for t in TEXTS) >= 5
    assert sum(bool(_entities(t)) for t in TEXTS) >= 8
    assert sum(len(split_sentences(t)) >= 3 for t in TEXTS) >= 8


@pytest.mark.parametrize(
    ("source", "followup", "reason"),
    [
        ("Maria walked 12 km.", "Maria walked 13 km.", "numbers"),
        ("It took two hours.", "It took two hurs.", "units"),
        ("She did not go.", "She did nt go.", "negation"),
        ("Paul met Bill Gates.", "Paul met Measure Gates.", "entity: Bill"),
        ("The plant grows leaves.", "The develop grows leaves.", "det+verb: The develop"),
        ("The cat sleeps here.", "The cats sleeps here.", "agreement: The cats sleeps"),
        ("How much do they pay?", "How much did they paid?", "do+past: did … paid"),
        ("Does a cat purr?", "Does A cat purr?", "capital: A inside a sentence"),
        (
            "Tom ran. He fell. Ann sat.",
            "He fell. Tom ran. Ann sat.",
            "order: opens with 'He fell.'",
        ),
    ],
)
def test_the_invalid_rules_catch_the_issues_examples(source, followup, reason):
    """The rules fire on the invalid follow-ups issue 9 reports (hand-made copies of them)."""
    assert reason in invalid_reasons(source, followup)


def test_the_invalid_rules_accept_a_valid_rewrite():
    source = "The cat sleeps on the sofa. Maria did not buy 3 apples."
    assert invalid_reasons(source, "The cats sleep on the sofa. Maria did not buy 3 apples.") == []


@pytest.mark.parametrize("relation_id", FAST_RELATIONS)
def test_at_most_one_invalid_followup_in_twenty(relation_id):
    """Issue 9 item 8: at most 1 invalid follow-up in 20 texts, and exactly the expected ones."""
    _check(relation_id)


@pytest.mark.slow  # loading WordNet into NLTK takes seconds, once per process
@pytest.mark.parametrize("relation_id", WORDNET_RELATIONS)
def test_at_most_one_invalid_wordnet_followup_in_twenty(relation_id):
    """Issue 9 item 8 for the WordNet relation: names and parts of speech were the failures."""
    _check(relation_id)
