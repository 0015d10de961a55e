"""MAD and stability exactly as the semantic-invariance paper defines them (§3.1).

Paper: "Semantic Invariance in Agentic AI" (seeds/semantic-invariance-agentic-ai.txt), §3.1:
MAD (eq. 6) = 1/(|T||P|) Σ_τ Σ_p |Δ_τ(p)| over the non-identity transformations T (the contrastive
control among them); stability rate = share of instances with |Δ_τ(p)| < 0.05. The paper's best
model, Qwen3-30B-A3B, has stability 79.6% = 121 of 19 problems × 8 transformations (identity
included). Relations of other families whose expectation is "should change" never enter either.
"""

from __future__ import annotations

import pytest

from app.analysis import metrics
from app.analysis.aggregates import fetch_aggregates
from app.analysis.relation_roles import outside_mad_relations
from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Sample, Verdict
from storage.run_verbs import RunDefinition

SI_RELATIONS = (
    "si.identity",
    "si.paraphrase",
    "si.reorder_facts",
    "si.expand",
    "si.contract",
    "si.academic",
    "si.business",
    "si.contrastive",
)
SAMPLES = [Sample(fields={"problem": f"Problem {i}: add {i} and {i + 1}."}) for i in range(19)]


def _case(relation_id: str, sample: Sample, delta: float, repeat: int = 0) -> Case:
    return Case(
        id=f"{relation_id}-{sample.id}-{repeat}",
        run_id="run",
        sample_id=sample.id,
        relation_id=relation_id,
        family=relation_id.split(".")[0],
        target="problem",
        followup_index=0,
        repeat_index=repeat,
        model="m",
        task_id="reasoning",
        source_input=dict(sample.fields),
        verdict=Verdict.PASS,
        score_source=0.5,
        score_followup=0.5 + delta,
        delta=delta,
    )


def _store_with(store, cases: list[Case]):
    store.save_run(
        RunDefinition(
            "run",
            endpoint=Endpoint(name="ep", base_url="http://127.0.0.1:9/v1", model="m"),
            task_id="reasoning",
            config={},
            samples=SAMPLES,
        ),
    )
    store.record_cases(cases)
    return store


def test_paper_stability_121_of_152_and_mad_over_non_identity(store):
    """§3.1 with the paper's counts: 19 problems × 8 SI transformations = 152 observations.

    Identity: 19 with Δ = 0 (stable). The 7 × 19 = 133 others: 102 with Δ = 0.01 (stable) and 31
    with Δ = −0.2. Stability = (19 + 102) / 152 = 121/152 = 79.6%; MAD (identity left out, the
    contrastive control in) = (102 × 0.01 + 31 × 0.2) / 133 = 7.22 / 133 = 0.05429. Antonym
    cases ("should change", another family) with Δ = −0.9 change neither number.
    """
    cases = [_case("si.identity", sample, 0.0) for sample in SAMPLES]
    others = [(rid, sample) for rid in SI_RELATIONS[1:] for sample in SAMPLES]
    for k, (relation_id, sample) in enumerate(others):
        cases.append(_case(relation_id, sample, -0.2 if k < 31 else 0.01))
    cases += [_case("word.antonym", sample, -0.9) for sample in SAMPLES]
    _store_with(store, cases)

    (row,) = metrics.model_rows(fetch_aggregates(store, CaseFilter()))
    assert row["n_observations"] == 152
    assert row["stability"] == pytest.approx(121 / 152)
    assert round(100 * row["stability"], 1) == 79.6
    assert row["mad"] == pytest.approx(7.22 / 133)
    assert row["stability_excl_identity"] == pytest.approx(102 / 133)

    rows = {
        r["relation_id"]: r
        for r in metrics.model_relation_rows(fetch_aggregates(store, CaseFilter()))
    }
    antonym = rows["word.antonym"]
    assert antonym["mean_delta"] == pytest.approx(-0.9)  # its Δ is still reported …
    assert antonym["mad"] is None and antonym["stability"] is None  # … but never as MAD


def test_repeats_count_as_observations_not_averaged_first(store):
    """Eq. 6 sums |Δ| per inference: repeats Δ = +0.1 and −0.1 on one problem give MAD 0.1 and
    stability 0 (averaging repeats first would give Δ = 0: MAD 0 and stability 1)."""
    sample = SAMPLES[0]
    cases = [
        _case("si.paraphrase", sample, 0.1, repeat=0),
        _case("si.paraphrase", sample, -0.1, repeat=1),
    ]
    _store_with(store, cases)
    (row,) = metrics.model_rows(fetch_aggregates(store, CaseFilter()))
    assert row["mean_delta"] == pytest.approx(0.0)  # the mean cell Δ still averages repeats
    assert row["mad"] == pytest.approx(0.1)
    assert row["stability"] == 0.0
    assert row["n_observations"] == 2


def test_outside_mad_relations_are_other_families_that_should_change(store):
    outside = set(outside_mad_relations(store))
    assert "word.antonym" in outside  # expects a different answer
    assert "si.contrastive" not in outside  # the paper's negative control stays in MAD
    assert not outside & set(SI_RELATIONS)
    assert "word.synonym" not in outside  # invariance relations of other families stay in


# ------------------------------------------------------------------ sampling (§4)


def _cli_endpoint(store, tmp_path, task_id: str, *options: str) -> Endpoint:
    from app.cli.main import build_parser
    from app.cli.plan import run_config_from_args

    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text('{"problem": "Add 2 and 3.", "text": "Fine."}\n')
    args = build_parser().parse_args(
        ["run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", task_id,
         "--relations", "si.identity", "--inputs", str(inputs), *options]
    )  # fmt: skip
    config, _task, _samples = run_config_from_args(args, store)
    return config.endpoint


def test_reasoning_runs_sample_as_the_paper_unless_told(store, tmp_path):
    """§4: "temperature 0.7, top-p 0.95, maximum tokens 1,024" for the reasoning task by default
    (the endpoint's own defaults are temperature 0, top-p 1, 256 tokens)."""
    endpoint = _cli_endpoint(store, tmp_path, "reasoning")
    assert (endpoint.temperature, endpoint.top_p, endpoint.max_tokens) == (0.7, 0.95, 1024)
    chosen = _cli_endpoint(store, tmp_path, "reasoning", "--temperature", "0", "--top-p", "1")
    assert (chosen.temperature, chosen.top_p, chosen.max_tokens) == (0.0, 1.0, 1024)
    other = _cli_endpoint(store, tmp_path, "sentiment")
    assert (other.temperature, other.top_p, other.max_tokens) == (0.0, 1.0, 256)


def test_probe_sampling_keeps_the_papers_top_p():
    from app.engine.run_setup import with_sampling
    from core.tasks import BUILTIN_TASKS

    endpoint = Endpoint(name="e", base_url="http://127.0.0.1:9/v1", model="m")
    # The Probe form passes the temperature and max tokens it shows; top-p comes from the task.
    chosen = with_sampling(
        endpoint, task=BUILTIN_TASKS["reasoning"], temperature=0.2, max_tokens=512
    )
    assert (chosen.temperature, chosen.top_p, chosen.max_tokens) == (0.2, 0.95, 512)
