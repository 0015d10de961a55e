"""Which stored cases changed a field their run's NLI target keeps: the mark of the known defect
``core.engine_version.NLI_CLAIM_EDITS`` (same-label relations that edited the hypothesis), read by
the dashboard's flags (``repairs``) and by the runner deciding to repair a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.records import Run
from core.run_config import DEFAULT_NLI_TARGET

if TYPE_CHECKING:
    from relations.base import Relation
    from storage import Store


def edits_kept_claims(
    store: Store, run: Run, task_fields: Sequence[str], relations: Sequence[Relation]
) -> bool:
    """Whether a case of ``run`` changed a field that the run's NLI target keeps (today's rule,
    ``relations.apply.kept_fields_of``): a hypothesis edited under a relation that expects the
    same label, when the run did not ask for hypothesis edits."""
    from relations.apply import kept_fields_of

    nli_target = run.config.get("nli_target", DEFAULT_NLI_TARGET)
    kept_by_relation: dict[str, frozenset[str]] = {}
    for relation in relations:
        # Only what the NLI target keeps: a relation's own kept fields were always kept.
        kept = kept_fields_of(relation, list(task_fields), nli_target) - relation.kept_fields
        if kept:
            kept_by_relation[relation.id] = kept
    if not kept_by_relation:
        return False
    return any(
        kept_by_relation[case.relation_id].intersection(case.target.split("+"))
        for case in store.cases_for([run.id], relation_ids=kept_by_relation)
    )
