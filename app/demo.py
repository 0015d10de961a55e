"""The one-click demo: the embedded model over the built-in datasets with a sensible relation set.

Small on purpose (a few minutes on two CPU cores) so Analysis and Triage have real content fast.
Every piece is an ordinary run through the same runner, so it is cached and resumable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from app.datasets import load_dataset
from app.runner import Progress, RunConfig, RunSummary
from app.workspace import get_task, make_runner
from core.types import Endpoint
from storage import Store


@dataclass(frozen=True)
class DemoPart:
    title: str
    task_id: str
    dataset_id: str
    n_samples: int
    relation_ids: tuple[str, ...]
    repeats: int = 1
    max_tokens: int = 64


DEMO_PARTS = (
    DemoPart(
        "Sentiment labels",
        "sentiment",
        "sentiment",
        16,
        ("si.identity", "char.leet", "sentence.uppercase", "word.negation", "ad.distractor"),
        repeats=2,
        max_tokens=16,
    ),
    DemoPart(
        "Short-context QA",
        "qa",
        "qa",
        8,
        ("si.identity", "char.swap_neighbours", "ad.format", "si.business"),
        max_tokens=48,
    ),
    DemoPart(
        "Multi-step reasoning",
        "reasoning",
        "reasoning",
        4,
        ("si.identity", "si.academic", "rrb.word_reversal"),
        max_tokens=160,
    ),
)


def run_demo(
    store: Store,
    endpoint: Endpoint,
    progress: Callable[[str, Progress], None] | None = None,
    parts: tuple[DemoPart, ...] = DEMO_PARTS,
) -> list[RunSummary]:
    """Run every demo part against ``endpoint`` (normally the embedded model)."""
    runner = make_runner(store)
    summaries = []
    for part in parts:
        task = get_task(store, part.task_id)
        samples = load_dataset(part.dataset_id)[: part.n_samples]
        config = RunConfig(
            endpoint=replace(endpoint, max_tokens=part.max_tokens, temperature=0.7, seed=None),
            task_id=task.id,
            relation_ids=part.relation_ids,
            repeats=part.repeats,
            seed=0,
            dataset=part.dataset_id,
        )
        callback = (lambda p, title=part.title: progress(title, p)) if progress else None
        summaries.append(runner.run_sync(config, task, samples, progress=callback))
    return summaries
