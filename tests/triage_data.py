"""Shared builders of stored runs and cases for the Triage tests (labels, engine, page)."""

from __future__ import annotations

from core.types import Case, Endpoint, Sample, Verdict
from storage import Store
from storage.run_verbs import RunDefinition


def make_case(
    case_id: str,
    *,
    run_id: str = "run-a",
    relation_id: str = "si.paraphrase",
    model: str = "model-a",
    task_id: str = "qa",
    verdict: str = "FAIL",
    oracle: str = "semantic_similar",
    value: float | None = 0.5,
    reason: str = "automatic",
    index: int = 0,
    source_text: str = "The cat sat on the mat.",
    followup_text: str = "The cat was sitting on the mat.",
    source_output: str = "A mat.",
    followup_output: str = "On the rug.",
) -> Case:
    """One case as the runner records it (only the columns Triage reads are meaningful)."""
    return Case(
        id=case_id,
        run_id=run_id,
        sample_id=f"sample-{index:03d}",
        relation_id=relation_id,
        family=relation_id.split(".")[0],
        side=None,
        target="question",
        followup_index=0,
        repeat_index=0,
        model=model,
        task_id=task_id,
        source_input={"question": source_text},
        followup_input={"question": followup_text},
        source_prompt=f"Answer: {source_text}",
        followup_prompt=f"Answer: {followup_text}",
        source_output=source_output,
        followup_output=followup_output,
        source_answer=source_output,
        followup_answer=followup_output,
        verdict=Verdict(verdict),
        oracle=oracle,
        value=value,
        reason=reason,
        details={},
    )


def save_runs(store: Store, cases: list[Case]) -> None:
    """Create every run the cases mention (model and task taken from its first case), then the
    cases themselves."""
    seen: dict[str, Case] = {}
    for case in cases:
        seen.setdefault(case.run_id, case)
    for run_id, case in seen.items():
        endpoint = Endpoint(name=f"ep-{case.model}", base_url="http://x/v1", model=case.model)
        store.save_run(
            RunDefinition(
                run_id,
                endpoint=endpoint,
                task_id=case.task_id,
                config={"run": run_id},
                samples=[Sample(fields={"question": "q"})],
            ),
        )
        store.finish_run(run_id, "done")
    store.record_cases(cases)
