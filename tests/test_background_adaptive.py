"""An adaptive run in the background (Probe's Precision): the job reports every cell's
confidence-sequence interval after each round, narrowing, and which cells stopped."""

from __future__ import annotations

import pytest

from app.engine import background
from app.engine.adaptive_run import AdaptiveSettings
from app.engine.embedder import EmbeddingCache
from app.engine.runner import Runner
from core.run_config import RunConfig
from core.tasks import BUILTIN_TASKS
from core.types import Endpoint, Sample
from storage import Store
from tests.conftest import BagOfWordsEmbedder

SAMPLES = [Sample({"text": f"Item {i} was good."}) for i in range(40)]


def _runner(store: Store) -> Runner:
    return Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))


def test_a_background_adaptive_run_reports_its_cells_round_by_round(
    tmp_path, fake_server, monkeypatch
):
    seen: list[tuple[int, ...]] = []
    original = background.replace

    def watching(snapshot, **changes):  # every round's cells, as the page would draw them
        if "cells" in changes:
            seen.append(tuple(cell.inputs for cell in changes["cells"]))
        return original(snapshot, **changes)

    monkeypatch.setattr(background, "replace", watching)
    endpoint = Endpoint(name="fake", base_url=fake_server.base_url, model="fake-model")
    config = RunConfig(endpoint, "sentiment", ("si.identity", "sentence.uppercase"))
    job = background.start_run(
        str(tmp_path / "bg.db"),
        config,
        BUILTIN_TASKS["sentiment"],
        SAMPLES,
        _runner,
        adaptive=AdaptiveSettings(precision=0.3, round_size=5),
    )
    assert job.wait(120)
    assert not job.error, job.error
    # Every answer passes: ±0.308 after 5 inputs, ±0.208 after 10 (tests/test_rounds.py).
    # Before the first round, then after rounds of 5: 0, 5, 10 inputs per cell.
    assert seen == [(0, 0), (5, 5), (10, 10)]
    cells = job.progress.cells
    assert [(c.relation, c.inputs, c.stopped) for c in cells] == [
        ("si.identity", 10, True),
        ("sentence.uppercase", 10, True),
    ]
    assert cells[0].half_width == pytest.approx(0.2084, abs=1e-3)
    assert job.summary.status == "done (precision reached)"
    assert job.sampling is not None and job.sampling.calls_sent == fake_server.stats.chat_calls
