"""The Relations page's Try it asks for rewrites as a run does: best of k, and says what it did."""

from __future__ import annotations

from app.ui.relations_view import candidate_summaries, try_relation
from relations.apply import Candidates
from relations.registry import get_relation

SOURCE = "Tom has 3 marbles and gives 2 to Ann. How many marbles does Tom have now?"
REPLIES = {
    0: "Tom has 1 marble left.",  # an answer: 3, 2 and Ann dropped
    1: "Tom owns 3 marbles and hands 2 to Ann. How many marbles does Tom have now?",
    2: "Tom has 3 marbles and gives Ann 2. How many marbles does Tom have now?",
}
SIMILARITY = {REPLIES[0]: 0.55, REPLIES[1]: 0.86, REPLIES[2]: 0.97}


def _try(replies: dict[int, str]):
    asked: list[int] = []

    def ask(prompt: str, candidate: int) -> str:
        asked.append(candidate)
        return replies[candidate]

    def similarity(a: str, b: str) -> float:
        # Source against a candidate; a source sentence against a candidate or its sentences
        # (the gate's dropped-claim check): every candidate says both sentences again.
        if a == b:
            return 1.0
        return SIMILARITY[b] if a == SOURCE else 0.9

    result = try_relation(
        get_relation("si.paraphrase"),
        SOURCE,
        rewrite=lambda prompt: ask(prompt, 0),
        candidates=Candidates(3, ask, similarity, few_shot=True),
    )
    return result, asked


def test_try_it_keeps_the_candidate_a_run_would_keep_and_says_so():
    """3 asked; #0 fails the gate, #1 (0.86) and #2 (0.97) pass: #2 is shown."""
    result, asked = _try(REPLIES)
    assert asked == [0, 1, 2]
    assert result.followup.fields == {"text": REPLIES[2]}
    assert candidate_summaries(result.followup) == [
        "text: 3 rewrite candidate(s) asked, 2 valid; candidate #2 kept (the closest to the "
        "source). Rejected: #0 dropped 3, 2, Ann."
    ]


def test_try_it_says_a_run_would_skip_when_no_candidate_passes():
    result, _ = _try({n: REPLIES[0] for n in range(3)})
    assert candidate_summaries(result.followup) == [
        "text: 3 rewrite candidate(s) asked, 0 valid; none passed the validity gate, so a run "
        "would SKIP this case. Rejected: #0 dropped 3, 2, Ann; #1 dropped 3, 2, Ann; #2 dropped "
        "3, 2, Ann."
    ]


def test_try_it_says_which_sentences_a_small_rewriter_reworded():
    """The embedded rewriter (a small one) is asked sentence by sentence: the summary says how
    many statements were reworded and that the question was kept as written."""
    from relations.english.close_rewrite import SmallRewriter

    problem = "Tom has 3 marbles. He gives 2 marbles to Ann. How many marbles does Tom have now?"
    close = {"Tom has 3 marbles.": "Tom owns 3 marbles."}

    def ask(prompt: str, candidate: int) -> str:
        text = prompt.split("<text>\n", 1)[1].split("\n</text>", 1)[0]
        return close.get(text, "Tom has 1 marble left.")

    result = try_relation(
        get_relation("si.paraphrase"),
        problem,
        rewrite=lambda prompt: ask(prompt, 0),
        candidates=Candidates(
            3, ask, lambda a, b: 1.0 if a == b else 0.9, small_rewriter=SmallRewriter()
        ),
    )
    assert result.followup.fields == {
        "text": "Tom owns 3 marbles. He gives 2 marbles to Ann. How many marbles does Tom have now?"
    }
    assert candidate_summaries(result.followup) == [
        "text: 6 rewrite candidate(s) asked, 3 valid, sentence by sentence: 1 of 2 sentence(s) "
        "reworded, 1 question(s) kept as written (each the closest valid candidate; the others "
        "as written)."
    ]
