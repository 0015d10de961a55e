"""Runs judged by an engine with a known defect (``core.engine_version``): which, and why.

The dashboard and ``report`` flag them; rerunning such a run (the same command, or Resume on
Probe) judges every case again from the call cache and stamps the current engine version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.engine_version import REPAIR_HINT, UNSTAMPED_VERSION, defects_touching
from storage import Store


@dataclass(frozen=True)
class FlaggedRun:
    """A stored run whose cases a known defect of its engine made wrong."""

    run_id: str
    model: str
    task_id: str
    engine_version: int
    defects: tuple[str, ...]

    def line(self) -> str:
        return (
            f"run {self.run_id} ({self.model}, {self.task_id}): {REPAIR_HINT} "
            f"(engine {self.engine_version}: {'; '.join(self.defects)})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "model": self.model,
            "task_id": self.task_id,
            "engine_version": self.engine_version,
            "defects": list(self.defects),
            "hint": REPAIR_HINT,
        }


def relation_kinds(store: Store, relation_ids: Iterable[str]) -> set[str]:
    """The kinds (``RelationKind`` values) of the relations named; unknown ids are left out."""
    from app.engine.workspace import custom_relations
    from relations.registry import get_relation

    custom = None
    kinds: set[str] = set()
    for relation_id in relation_ids:
        try:
            relation = get_relation(relation_id)
        except (KeyError, ValueError):
            if custom is None:
                custom = custom_relations(store)
            try:
                relation = get_relation(relation_id, custom)
            except (KeyError, ValueError):
                continue
        kinds.add(relation.kind.value)
    return kinds


def flagged_runs(store: Store, run_ids: Iterable[str] | None = None) -> list[FlaggedRun]:
    """The stored runs (or those of ``run_ids``) that a known defect of their engine touched."""
    wanted = set(run_ids) if run_ids is not None else None
    flagged: list[FlaggedRun] = []
    for run in store.runs():
        if wanted is not None and run.id not in wanted:
            continue
        relation_ids = run.config.get("relation_ids")
        if not relation_ids:
            continue
        version = run.engine_version or UNSTAMPED_VERSION
        defects = defects_touching(version, relation_kinds(store, relation_ids))
        if defects:
            flagged.append(
                FlaggedRun(
                    run.id,
                    run.model or "",
                    run.task_id or "",
                    version,
                    tuple(defect.summary for defect in defects),
                )
            )
    return flagged
