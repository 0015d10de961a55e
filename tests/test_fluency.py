"""How a text reads to the embedded model (``app.engine.fluency``), with the real SmolLM2.

The margin of the gate's reading check rests on these scores: SmolLM2's broken English reads
far worse to SmolLM2 than its source, its close rewrites about as well (the rewriter bench's
readings, ``bench/data/rewriter_review.jsonl``).
"""

from __future__ import annotations

import threading

import pytest

from app.engine.fluency import FluencyScorer
from relations.english.close_rewrite import FLUENCY_MARGIN

KETTLE = "I love how simple this kettle is to use."
TRAIL = "The hiking trail was steep, but the view from the top was amazing."


@pytest.fixture(scope="module")
def scorer() -> FluencyScorer:
    return FluencyScorer()


def test_broken_english_reads_worse_than_its_source_by_more_than_the_margin(scorer):
    def worse(source: str, rewrite: str) -> float:
        return scorer.mean_nll(rewrite) - scorer.mean_nll(source)

    assert worse(KETTLE, "I love simple this kettle to use.") > 2 * FLUENCY_MARGIN
    assert worse(TRAIL, "The hike trail was steep, but the view from top were amazing.") > (
        2 * FLUENCY_MARGIN
    )
    # Close rewrites SmolLM2 wrote and we read as valid.
    assert worse(TRAIL, "The hike was steep, but the view from the top was amazing.") < (
        FLUENCY_MARGIN
    )
    assert worse(KETTLE, "I love this kettle because it is simple and easy to use.") < 0


def test_scores_are_the_same_from_any_thread_and_memoised(scorer):
    texts = [KETTLE, TRAIL, "The blender is loud, and the lid leaks.", "a", ""]
    alone = {text: FluencyScorer().mean_nll(text) for text in texts}
    found: list[dict[str, float]] = []

    def score_all() -> None:
        found.append({text: scorer.mean_nll(text) for text in reversed(texts)})

    threads = [threading.Thread(target=score_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [alone] * 4
    assert alone[""] == 0.0 and alone["a"] == 0.0  # nothing after the first token to score
    assert scorer._scores.keys() >= set(texts)
