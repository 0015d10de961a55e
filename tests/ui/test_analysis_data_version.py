"""``Store.data_version``: the Analysis page's cache key, read from the database itself.

Pins that every write which can change a number on the page moves it (whoever makes the write:
another connection stands for the CLI or another browser session), and that writes which change
no number (the call and embedding caches) and plain reads leave it alone, so a rerun keeps its
cached aggregates.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from core.case_filter import CaseFilter
from core.types import Endpoint
from storage import Store
from storage.run_verbs import RunDefinition
from tests.test_analysis_queries import SAMPLES, seed_cases, seed_dataset


def _seeded(tmp_path) -> tuple[Store, Store]:
    """The database twice: the page's connection and a writer's (the CLI, another session)."""
    path = tmp_path / "version.db"
    writer = Store(path)
    seed_dataset(writer)
    return Store(path), writer


def test_every_write_that_changes_the_numbers_moves_the_version(tmp_path) -> None:
    page, writer = _seeded(tmp_path)
    seen = [page.data_version()]

    def moved() -> bool:
        seen.append(page.data_version())
        return seen[-1] != seen[-2]

    assert page.data_version() == seen[0]  # stable while nothing is written
    # a new run with its cases (the CLI's `run`)
    writer.save_run(
        RunDefinition(
            "run-c",
            endpoint=Endpoint(name="ep-C", base_url="http://127.0.0.1:9/v1", model="C"),
            task_id="reasoning",
            config={},
            samples=list(SAMPLES.values()),
        ),
    )
    assert moved()
    case = seed_cases()[0]
    writer.record_cases([replace(case, id="case-new", run_id="run-c", model="C")])
    assert moved()
    writer.finish_run("run-c", "done")
    assert moved()
    # a Triage label, and its undo
    writer.add_label("case-005", "fp_oracle", labeler="ann")
    assert moved()
    writer.undo_label("case-005", labeler="ann")
    assert moved()
    # a threshold override that flips a verdict
    writer.record_verdict_changes(
        "si.paraphrase",
        0.5,
        [
            {
                "id": "case-005",
                "old_verdict": "FAIL",
                "new_verdict": "PASS",
                "old_reason": "",
                "new_reason": "within the new threshold",
            }
        ],
    )
    assert moved()
    writer.save_custom_relation("custom.upper", {"kind": "template", "template": "{text}"})
    assert moved()
    writer.delete_run("run-c")
    assert moved()
    assert len(set(seen)) == len(seen)  # never back to an earlier version


def test_reads_and_cache_writes_keep_the_version(tmp_path) -> None:
    page, writer = _seeded(tmp_path)
    before = page.data_version()
    page.filter_options()
    page.verdict_counts(CaseFilter())
    writer.cache_embeddings({"abc": np.ones(3, dtype=np.float32)}, "minilm")
    assert page.data_version() == before
    assert writer.data_version() == before  # the same key from every connection
