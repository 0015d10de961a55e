"""Runs judged by an engine with a known defect (``core.engine_version``): which, and why.

The dashboard and ``report`` flag them; rerunning such a run (the same command, or Resume on
Probe) judges every case again from the call cache and stamps the current engine version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.engine_version import REPAIR_HINT, UNSTAMPED_VERSION, KnownDefect, defects_touching
from core.records import Run
from core.types import content_hash
from storage import Store

if TYPE_CHECKING:
    from relations.base import Relation


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
    return {relation.kind.value for relation in known_relations(store, relation_ids).values()}


def known_relations(store: Store, relation_ids: Iterable[str]) -> dict[str, Relation]:
    """The relations named, built-in or the store's custom ones; unknown ids are left out."""
    from app.engine.workspace import custom_relations
    from relations.registry import get_relation

    custom = None
    found: dict[str, Relation] = {}
    for relation_id in relation_ids:
        try:
            found[relation_id] = get_relation(relation_id)
        except (KeyError, ValueError):
            if custom is None:
                custom = custom_relations(store)
            try:
                found[relation_id] = get_relation(relation_id, custom)
            except (KeyError, ValueError):
                continue
    return found


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
        kinds = relation_kinds(store, relation_ids)
        defects = [
            defect
            for defect in defects_touching(version, kinds, relation_ids)
            if confirmed(store, run, defect)
        ]
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


def confirmed(store: Store, run: Run, defect: KnownDefect) -> bool:
    """Whether ``defect`` really made some of the run's cases wrong.

    A defect of pairing kinds touches every run that mixed them. A defect of some relations'
    follow-ups touches a run only where today's relations make other follow-ups from its samples
    than it stored: the relations it names are rules (no model, deterministic under the run's
    seed), so they are replayed, and a run whose inputs were valid all along is not flagged. A
    defect read from cases touches a run whose cases show it."""
    if defect.read_from_cases:
        return edited_kept_claims(store, run)
    if not defect.relation_ids:
        return True
    used = defect.relation_ids.intersection(run.config.get("relation_ids") or ())
    stored: dict[tuple[str, str], set[str]] = {}
    for case in store.cases_for([run.id], relation_ids=used):
        if case.followup_input is not None:
            key = (case.sample_id, case.relation_id)
            stored.setdefault(key, set()).add(content_hash(case.followup_input))
    return any(
        not made <= today for (sample_id, relation_id), made, today in _replayed(store, run, stored)
    )


def edited_kept_claims(store: Store, run: Run) -> bool:
    """Whether a case of the run changed a field its NLI target keeps (``claim_edits``); False
    for a run whose task is gone (nothing to compare with)."""
    from app.engine.claim_edits import edits_kept_claims
    from app.engine.workspace import get_task

    try:
        task = get_task(store, run.task_id)
    except (KeyError, ValueError):
        return False
    relations = known_relations(store, run.config.get("relation_ids") or ())
    return edits_kept_claims(store, run, task.perturbable_fields, list(relations.values()))


def _replayed(store: Store, run: Run, stored: dict[tuple[str, str], set[str]]):
    """(key, the stored follow-ups, today's follow-ups) for each sample × relation of ``stored``;
    a sample the run no longer holds has no follow-ups today."""
    from app.engine.plan import Partners
    from app.engine.workspace import get_task
    from core.run_config import DEFAULT_NLI_TARGET
    from relations.apply import generate_followups
    from relations.base import FollowUp
    from relations.registry import get_relation

    samples = store.run_samples(run.id)
    position = {sample.id: index for index, sample in enumerate(samples)}
    task = get_task(store, run.task_id)
    seed = int(run.config.get("seed", 0))
    nli_target = run.config.get("nli_target", DEFAULT_NLI_TARGET)
    for (sample_id, relation_id), made in stored.items():
        today: set[str] = set()
        if sample_id in position:
            index = position[sample_id]
            followups = generate_followups(
                get_relation(relation_id), samples[index], task, list(task.perturbable_fields),
                run_seed=seed, partners=Partners(samples, index), nli_target=nli_target,
            )  # fmt: skip
            today = {content_hash(f.fields) for f in followups if isinstance(f, FollowUp)}
        yield (sample_id, relation_id), made, today
