"""MAD and stability exactly as the semantic-invariance paper defines them (§3.1).

Paper: "Semantic Invariance in Agentic AI" (seeds/semantic-invariance-agentic-ai.txt), §3.1:
MAD (eq. 6) = 1/(|T||P|) Σ_τ Σ_p |Δ_τ(p)| over the non-identity transformations T (the contrastive
control among them); stability rate = share of instances with |Δ_τ(p)| < 0.05. The paper's best
model, Qwen3-30B-A3B, has stability 79.6% = 121 of 19 problems × 8 transformations (identity
included). MAD and stability count the paper's 8 ``si.*`` transformations only (Table 3); relations
of other families enter neither, whatever their expectation.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.analysis import metrics
from app.analysis.aggregates import fetch_aggregates
from app.analysis.relation_roles import relation_roles
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
    assert row["n_stability_observations"] == 152  # the stability denominator: 19 × 8
    assert row["n_mad_observations"] == 133  # MAD's: 19 × 7
    assert row["n_observations"] == 152 + 19  # every observation, antonym included
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


def test_paper_relations_are_the_eight_si_transformations(store):
    """§3.1 / Table 3: MAD and stability are over the paper's 8 transformations, no other."""
    roles = relation_roles(store)
    assert roles.paper == frozenset(SI_RELATIONS)
    assert "si.contrastive" in roles.paper  # the paper's negative control stays in MAD
    assert "word.synonym" in roles.invariance and "word.synonym" not in roles.paper


def test_invariance_relations_of_other_families_leave_mad_and_stability_alone(store):
    """Issue 23 item 1 (SI §3.1 eq. 6 and the Stability Rate of Table 3): an invariance relation
    of another family (word.synonym, expectation "equivalent") with |Δ| = 0.3 on 4 problems
    changes neither MAD nor stability; only the wider ``invariance_stability`` counts it.

    si.paraphrase on problems 0–3: Δ = 0.1, 0.1, 0.02, 0.02 → MAD = 0.24 / 4 = 0.06; si.identity
    Δ = 0 on the same 4 → stability = (4 identity + 2 paraphrase) / 8 = 0.75 (the pooled figure
    would be MAD (0.24 + 1.2) / 8 = 0.18 and stability 6 / 12 = 0.5). Invariance stability =
    6 / 12 = 0.5 (identity, paraphrase and synonym are all "equivalent")."""
    four = SAMPLES[:4]
    cases = [_case("si.identity", sample, 0.0) for sample in four]
    cases += [
        _case("si.paraphrase", s, d) for s, d in zip(four, (0.1, 0.1, 0.02, 0.02), strict=True)
    ]
    cases += [_case("word.synonym", sample, -0.3) for sample in four]
    _store_with(store, cases)
    (row,) = metrics.model_rows(fetch_aggregates(store, CaseFilter()))
    assert row["mad"] == pytest.approx(0.06)
    assert row["stability"] == pytest.approx(0.75)
    assert row["stability_excl_identity"] == pytest.approx(0.5)  # 2 of 4 paraphrases
    assert row["invariance_stability"] == pytest.approx(0.5)
    rows = {
        r["relation_id"]: r
        for r in metrics.model_relation_rows(fetch_aggregates(store, CaseFilter()))
    }
    assert rows["word.synonym"]["mad"] is None and rows["word.synonym"]["stability"] is None
    assert rows["si.paraphrase"]["mad"] == pytest.approx(0.06)
    assert rows["si.paraphrase"]["stability"] == pytest.approx(0.5)
    assert rows["si.identity"]["mad"] is None  # eq. 6 leaves identity out
    assert rows["si.identity"]["stability"] == 1.0


def _field_case(relation_id: str, sample: Sample, delta: float, target: str, index: int) -> Case:
    case = _case(relation_id, sample, delta)
    return replace(case, id=f"{case.id}-{target}", target=target, followup_index=index)


def test_identity_counts_once_per_sample_and_repeat_on_two_field_tasks(store):
    """Issue 23 item 2 (SI §3.1, Stability Rate; the noise floor's rule): a two-field task sends
    the unchanged input once per field target, which is one re-sample. Identity on 3 problems ×
    2 targets, first follow-up Δ = 0 (stable), second Δ = 0.2 (it would be unstable): identity
    counts 3 observations, all stable. si.paraphrase on the same 3 problems × 2 targets, Δ = 0.1
    and 0.0, counts all 6 (3 stable). Stability = (3 + 3) / (3 + 6) = 6/9; counting identity per
    target would give (3 + 3) / 12 = 0.5."""
    three = SAMPLES[:3]
    cases = []
    for sample in three:
        cases.append(_field_case("si.identity", sample, 0.0, "premise", 0))
        cases.append(_field_case("si.identity", sample, 0.2, "hypothesis", 1))
        cases.append(_field_case("si.paraphrase", sample, 0.1, "premise", 0))
        cases.append(_field_case("si.paraphrase", sample, 0.0, "hypothesis", 1))
    _store_with(store, cases)
    (row,) = metrics.model_rows(fetch_aggregates(store, CaseFilter()))
    assert row["n_stability_observations"] == 9
    assert row["stability"] == pytest.approx(6 / 9)
    assert row["mad"] == pytest.approx(0.3 / 6)  # paraphrase only: 3 × 0.1 / 6
    floor = fetch_aggregates(store, CaseFilter()).floors["m"]["reasoning"]
    assert floor["n"] == 3 and floor["stability"] == 1.0  # the floor counted the same 3


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
