"""Hand-made runs for the release gate's tests: each run's verdict counts per relation, stored
with the Store's own verbs (no runner, no model), so every rate the tests expect is the counts'
arithmetic."""

from __future__ import annotations

from core.types import Case, Endpoint, Sample, Verdict
from storage import Store
from storage.run_verbs import RunDefinition

TASK = "sentiment"
# (PASS, FAIL, SKIP, ERROR) per relation.
Counts = dict[str, tuple[int, int, int, int]]


def add_run(
    store: Store,
    run_id: str,
    counts: Counts,
    *,
    model: str = "model-a",
    task: str = TASK,
    created_at: str = "2026-11-20T09:00:00+00:00",
) -> None:
    """Store a finished run whose cases have exactly ``counts`` verdicts per relation."""
    n_samples = max(sum(c) for c in counts.values())
    samples = [Sample(fields={"text": f"review number {i}"}) for i in range(n_samples)]
    store.save_run(
        RunDefinition(
            run_id,
            endpoint=Endpoint(name="fake", base_url="http://127.0.0.1:9/v1", model=model),
            task_id=task,
            config={"relations": sorted(counts)},
            samples=samples,
        ),
        created_at=created_at,
    )
    cases = []
    for relation_id, (n_pass, n_fail, n_skip, n_error) in counts.items():
        verdicts = (
            [Verdict.PASS] * n_pass
            + [Verdict.FAIL] * n_fail
            + [Verdict.SKIP] * n_skip
            + [Verdict.ERROR] * n_error
        )
        for i, verdict in enumerate(verdicts):
            cases.append(_case(run_id, relation_id, samples[i], verdict, model, task))
    store.record_cases(cases)
    store.finish_run(run_id, "done")


def _case(run_id, relation_id, sample, verdict, model, task) -> Case:
    text = sample.fields["text"]
    source_out = "positive"
    followup_out = {Verdict.FAIL: "negative", Verdict.PASS: "positive"}.get(verdict)
    return Case(
        id=f"{run_id}-{relation_id}-{sample.fields['text'].rsplit(' ', 1)[1]}",
        run_id=run_id,
        sample_id=sample.id,
        relation_id=relation_id,
        family=relation_id.split(".", 1)[0],
        target="text",
        followup_index=0,
        repeat_index=0,
        model=model,
        task_id=task,
        source_input={"text": text},
        followup_input={"text": text.upper()},
        source_prompt=f"Sentiment of: {text}",
        followup_prompt=f"Sentiment of: {text.upper()}",
        source_output=source_out if verdict is not Verdict.ERROR else None,
        followup_output=followup_out,
        source_answer=source_out,
        followup_answer=followup_out,
        verdict=verdict,
        oracle="equal_label",
        reason={
            Verdict.PASS: "labels agree",
            Verdict.FAIL: "labels differ: positive vs negative",
            Verdict.SKIP: "invalid_followup: no letters to change",
            Verdict.ERROR: "call failed: HTTP 500",
        }[verdict],
        created_at="2026-11-20T10:00:00+00:00",
    )
