"""app/analysis/metrics.py and the modules it builds on (rates, noise_floor, relation_roles,
severity): paper metrics against hand-computed values and an independent computation."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from statistics import mean

import pytest

from app.analysis import metrics, severity, stats
from app.analysis.aggregates import agentdiff_gap, fetch_aggregates
from app.analysis.consistency import answer_types
from app.analysis.proportions import wilson_interval
from app.analysis.rates import net_of_floor, violation_rate
from app.analysis.relation_roles import relation_roles
from app.engine.embedder import EmbeddingCache
from app.reports.summary import report
from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Sample, Verdict
from storage.run_verbs import RunDefinition
from tests.conftest import BagOfWordsEmbedder
from tests.test_analysis_queries import ROWS, seed_dataset


@pytest.fixture
def seeded(store):
    seed_dataset(store)
    return store


# ------------------------------------------------------------------ Wilson


def test_wilson_interval_hand_values():
    # 2 of 10: z² = 3.841459, centre = 0.392073 / 1.384146 = 0.283261,
    # half = 1.959964 · √(0.016 + 0.009604) / 1.384146 = 0.226576 → (0.0567, 0.5098)
    low, high = wilson_interval(2, 10)
    assert low == pytest.approx(0.056685, abs=1e-5)
    assert high == pytest.approx(0.509838, abs=1e-5)
    # 2 of 4: symmetric around 0.5 → (0.15004, 0.84996)
    low, high = wilson_interval(2, 4)
    assert low == pytest.approx(0.150039, abs=1e-5)
    assert high == pytest.approx(0.849961, abs=1e-5)
    # 0 of 5 stays at 0 on the left; 5 of 5 at 1 on the right
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (None, None)


def test_rates_and_net_of_floor():
    assert violation_rate(3, 1) == 0.25
    assert violation_rate(0, 0) is None
    assert net_of_floor(0.5, 0.25) == 0.25
    assert net_of_floor(0.1, 0.25) == 0.0
    assert net_of_floor(0.5, None) is None


# ------------------------------------------------------------------ summaries on the dataset


def test_model_relation_rows_hand_values(seeded):
    rows = {
        (r["model"], r["relation_id"]): r
        for r in metrics.model_relation_rows(fetch_aggregates(seeded, CaseFilter()))
    }
    para = rows[("A", "si.paraphrase")]
    assert (para["n"], para["pass"], para["fail"], para["skip"], para["error"]) == (7, 2, 2, 2, 1)
    assert para["invalid_followup"] == 1
    assert para["violation_rate"] == 0.5
    assert para["ci_low"] == pytest.approx(0.150039, abs=1e-5)
    assert para["ci_high"] == pytest.approx(0.849961, abs=1e-5)
    assert para["noise_floor"] == 0.25  # si.identity of model A: 1 FAIL in 4
    assert para["net_violation_rate"] == 0.25
    assert para["mean_delta"] == pytest.approx(-0.09)
    assert para["mad"] == pytest.approx(0.63 / 4)  # per observation: 0.1, 0.3, 0.2, 0.03
    assert para["stability"] == pytest.approx(1 / 4)
    assert para["mean_similarity"] == pytest.approx(0.7625)
    assert para["inconsistency_rate"] == pytest.approx(1 / 3)
    b_para = rows[("B", "si.paraphrase")]
    assert b_para["noise_floor"] is None and b_para["net_violation_rate"] is None
    assert b_para["mean_delta"] == pytest.approx(-0.5 / 3)
    assert b_para["stability"] == pytest.approx(2 / 3)
    assert rows[("A", "ad.format")]["mean_delta"] is None  # no reference → no Δ


def test_noise_floor_ignores_the_relation_filter(seeded):
    floors = fetch_aggregates(seeded, CaseFilter.make(relations=["si.paraphrase"])).floors
    assert set(floors) == {"A"} and set(floors["A"]) == {"reasoning"}
    floor = floors["A"]["reasoning"]
    assert (floor["n"], floor["pass"], floor["fail"]) == (4, 3, 1)
    assert floor["noise_floor"] == 0.25
    low, high = wilson_interval(1, 4)
    assert (floor["ci_low"], floor["ci_high"]) == (low, high)
    assert floor["inconsistency_rate"] == 0.25


def test_model_rows(seeded):
    models = {r["model"]: r for r in metrics.model_rows(fetch_aggregates(seeded, CaseFilter()))}
    a = models["A"]
    # non-identity cases of A: paraphrase 2P/2F, ad.paraphrase 2P/2F, ad.format 1P/2F
    assert (a["pass"], a["fail"]) == (5, 6)
    assert a["violation_rate"] == pytest.approx(6 / 11)
    assert a["net_violation_rate"] == pytest.approx(6 / 11 - 0.25)
    assert a["mad"] == pytest.approx(0.63 / 4)
    # 4 identity observations + s3's 0.03, of 8 observations
    assert a["stability"] == pytest.approx(5 / 8)
    assert a["stability_excl_identity"] == pytest.approx(1 / 4)
    assert a["mean_delta"] == pytest.approx((0.01 - 0.1 - 0.2 + 0.03) / 4)
    assert a["agentdiff_gap"] == pytest.approx(0.0)  # IR 0.5 on both sides (see test_reports)
    assert a["n_all"] == 18
    assert models["B"]["agentdiff_gap"] is None


def _independent(rows):
    """Recompute the per model × relation numbers in plain Python from ROWS."""
    out = {}
    groups = defaultdict(list)
    for row in rows:
        groups[(row[0], row[1])].append(row)
    for key, group in groups.items():
        verdicts = [r[6] for r in group]
        n_pass, n_fail = verdicts.count("PASS"), verdicts.count("FAIL")
        cells = defaultdict(list)
        for r in group:
            if r[8] is not None:
                cells[r[3]].append(r[8])
        cell_deltas = [mean(v) for v in cells.values()]
        observations = [d for v in cells.values() for d in v]
        sims = [r[9] for r in group if r[9] is not None]
        answered = [r for r in group if r[10] is not None and r[11] is not None]
        changed = [r for r in answered if r[10].lower() != r[11].lower()]
        # MAD and stability: the SI paper's transformations only, MAD without identity (§3.1).
        paper = key[1].startswith("si.") and bool(observations)
        out[key] = {
            "n": len(group),
            "violation_rate": n_fail / (n_pass + n_fail) if n_pass + n_fail else None,
            "mean_delta": mean(cell_deltas) if cell_deltas else None,
            "mad": (
                mean(abs(d) for d in observations) if paper and key[1] != "si.identity" else None
            ),
            "stability": (
                sum(abs(d) < 0.05 for d in observations) / len(observations) if paper else None
            ),
            "mean_similarity": mean(sims) if sims else None,
            "inconsistency_rate": len(changed) / len(answered) if answered else None,
        }
    return out


def test_every_row_matches_an_independent_computation(seeded):
    expected = _independent(ROWS)
    rows = metrics.model_relation_rows(fetch_aggregates(seeded, CaseFilter()))
    assert len(rows) == len(expected)
    for row in rows:
        want = expected[(row["model"], row["relation_id"])]
        for key, value in want.items():
            if value is None:
                assert row[key] is None, (row["relation_id"], key)
            else:
                assert row[key] == pytest.approx(value), (row["relation_id"], key)


def test_summarize_and_gap(seeded):
    summary = metrics.summarize(seeded, CaseFilter())
    assert {r["model"] for r in summary["models"]} == {"A", "B"}
    (gap,) = summary["gap"]
    assert gap["model"] == "A"
    assert gap["gap"] == pytest.approx(0.0)
    assert gap["n_originals"] == 3


def test_breakdown_by_difficulty(seeded):
    rows = {
        (r["model"], r["difficulty"]): r
        for r in metrics.breakdown(seeded, "difficulty", CaseFilter())
    }
    hard = rows[("A", "hard")]  # s3: paraphrase PASS (Δ 0.03), ad.paraphrase PASS
    assert (hard["n"], hard["pass"], hard["fail"]) == (2, 2, 0)
    assert hard["mean_delta"] == pytest.approx(0.03)
    assert hard["violation_rate"] == 0.0
    assert rows[("A", "(none)")]["samples"] == 4  # s1 (level only), s4, s5, s6


def test_box_stats_quartiles(seeded):
    rows, stride = metrics.box_stats(seeded, CaseFilter(), column="delta")
    assert stride == 1
    box = {(r["model"], r["relation_id"]): r for r in rows}[("A", "si.paraphrase")]
    # case-level Δ: −0.3, −0.2, 0.03, 0.1 → quartiles by linear interpolation
    assert box["n"] == 4
    assert box["median"] == pytest.approx((-0.2 + 0.03) / 2)
    assert box["q1"] == pytest.approx(-0.225)
    assert box["q3"] == pytest.approx(0.0475)
    assert (box["lowerfence"], box["upperfence"]) == (pytest.approx(-0.3), pytest.approx(0.1))


def test_compare_runs(seeded):
    rows = {r["relation_id"]: r for r in metrics.compare_runs(seeded, "run-a", "run-b")}
    para = rows["si.paraphrase"]
    assert para["a_violation_rate"] == 0.5
    assert para["b_violation_rate"] == pytest.approx(1 / 3)
    assert para["violation_rate_change"] == pytest.approx(1 / 3 - 0.5)
    assert para["b_mean_delta"] == pytest.approx(-0.5 / 3)
    assert rows["ad.format"]["b_n"] == 0 and rows["ad.format"]["b_violation_rate"] is None
    with pytest.raises(ValueError):
        metrics.compare_runs(seeded, "run-a", "run-a")


# ------------------------------------------------------------------ severity proxies


def test_severity_proxy_hand_values():
    assert severity.normalized_levenshtein("kitten", "sitting") == pytest.approx(3 / 7)
    assert severity.normalized_levenshtein("", "") == 0.0
    assert severity.token_jaccard_distance("The cat sat", "the dog sat") == pytest.approx(0.5)
    assert severity.token_jaccard_distance("", "") == 0.0
    assert severity.length_change_ratio("abcd", "abcdef") == 0.5
    assert severity.length_change_ratio("", "ab") == 2.0


def _input_case(source_input, followup_input, **columns) -> Case:
    """A stored case reduced to what the severity proxies and the answer change read."""
    return Case(
        id="c", run_id="r", sample_id="s", relation_id="si.paraphrase", family="si",
        target="question", followup_index=0, repeat_index=0, model="M",
        verdict=Verdict.PASS, source_input=source_input, followup_input=followup_input,
        **{"task_id": "qa", **columns},
    )  # fmt: skip


def test_severity_compares_only_changed_fields():
    case = _input_case(
        {"context": "A long shared context.", "question": "How many apples?"},
        {"context": "A long shared context.", "question": "How many pears?"},
        details={"input_similarity": 0.8},
        output_similarity=0.3,
    )
    proxies = severity.severity_proxies(case)
    assert proxies.levenshtein == pytest.approx(
        severity.normalized_levenshtein("How many apples?", "How many pears?")
    )
    assert proxies.jaccard == pytest.approx(1 - 2 / 4)  # {how, many} of {how, many, apples, pears}
    assert proxies.length_change == pytest.approx(1 / 16)
    assert proxies.cosine_distance == pytest.approx(0.2)
    no_input_similarity = replace(case, details={})
    # Never a proxy on the outputs: without an input similarity or an embedder, no cosine.
    assert severity.severity_proxies(no_input_similarity).cosine_distance is None


def test_answer_changed_is_answer_equivalence_under_the_task_type():
    types = answer_types()

    def changed(task_id, source, followup):
        return severity.answer_changed(
            _input_case(
                {"q": "x"}, None, task_id=task_id, source_answer=source, followup_answer=followup
            ),
            types,
        )

    assert changed("qa", "Paris", "paris") is False  # normalised text
    assert changed("reasoning", "4", "5") is True
    assert changed("reasoning", "5.4 km", "5.4") is False  # math-verify
    assert changed("reasoning", "4", None) is None


def test_drilldown_attaches_severity(seeded):
    rows = severity.drilldown(
        seeded, CaseFilter(), model="A", relation_id="si.paraphrase", verdicts=["FAIL"]
    )
    assert {r.case.id for r in rows} == {"case-005", "case-006"}
    added = " Please answer."  # the follow-up appends 15 characters and two words
    for row in rows:
        text = row.case.source_input["problem"]
        assert row.proxies.levenshtein == pytest.approx(len(added) / (len(text) + len(added)))
        assert row.proxies.length_change == pytest.approx(len(added) / len(text))
        words = len(set(re.findall(r"\w+", text.lower())))
        assert row.proxies.jaccard == pytest.approx(1 - words / (words + 2))
        # case-005: "4" → "5"; case-006 has no follow-up answer
        assert row.answer_changed is {"case-005": True, "case-006": None}[row.case.id]
        # the drill-down table's row: the case's columns and its proxies, flat
        assert row.table_row()["levenshtein"] == row.proxies.levenshtein
        assert row.table_row()["verdict"] == "FAIL"
    table = severity.severity_table(seeded, CaseFilter(), limit=5)
    assert len(table) == 5
    assert all(r.levenshtein > 0 for r in table)


# ------------------------------------------------------------------ issue 9: paper definitions


def _record(store, rows: list[dict]) -> None:
    """Record hand-made cases; each row names model, task_id, relation_id, sample, verdict and
    may set side, repeat, followup, target, delta, similarity, answers, inputs and reason."""
    samples: dict[tuple[str, str], dict[str, Sample]] = {}
    for row in rows:
        key = (row["model"], row["task_id"])
        fields = row.get("fields", {"text": f"Question {row['sample']}?"})
        samples.setdefault(key, {})[row["sample"]] = Sample(fields=fields, reference="ref")
    for (model, task_id), by_name in samples.items():
        store.save_run(
            RunDefinition(
                f"run-{model}-{task_id}",
                endpoint=Endpoint(name=model, base_url="http://127.0.0.1:9/v1", model=model),
                task_id=task_id,
                config={},
                samples=list(by_name.values()),
            ),
            created_at="2026-11-02T09:00:00+00:00",
        )
    cases = []
    for i, row in enumerate(rows):
        sample = samples[(row["model"], row["task_id"])][row["sample"]]
        delta = row.get("delta")
        cases.append(
            Case.from_row(
                {
                    "id": f"c{i:03d}",
                    "run_id": f"run-{row['model']}-{row['task_id']}",
                    "sample_id": sample.id,
                    "relation_id": row["relation_id"],
                    "family": row["relation_id"].split(".")[0],
                    "side": row.get("side"),
                    "target": row.get("target", "text"),
                    "followup_index": row.get("followup", 0),
                    "repeat_index": row.get("repeat", 0),
                    "model": row["model"],
                    "task_id": row["task_id"],
                    "source_input": row.get("source_input", sample.fields),
                    "followup_input": row.get("followup_input", sample.fields),
                    "source_answer": row.get("answers", (None, None))[0],
                    "followup_answer": row.get("answers", (None, None))[1],
                    "verdict": row["verdict"],
                    "reason": row.get("reason", ""),
                    "details": {},
                    "score_source": 0.5 if delta is not None else None,
                    "score_followup": 0.5 + delta if delta is not None else None,
                    "delta": delta,
                    "output_similarity": row.get("similarity"),
                    "created_at": "2026-11-02T10:00:00+00:00",
                }
            )
        )
    store.record_cases(cases)


def test_precondition_skips_feed_no_metric(store):
    """Issue 9 item 3. The SI paper's metrics (§3.1: Δ, MAD eq. 6, stability, similarity) are
    over observations of a transformation *applied*; a case SKIPped by an oracle precondition
    (``precondition: …``) is not one, even though both outputs, a Δ and a similarity exist.

    Judged cases on M × si.paraphrase: s1 PASS (Δ +0.1, sim 0.9, 4 → 4), s2 FAIL (Δ −0.3,
    sim 0.5, 4 → 5). By hand: MAD = (0.1 + 0.3) / 2 = 0.2, mean similarity 0.7, inconsistency
    1/2, stability 0/2. The precondition SKIPs (Δ 0.9, sim 0.1, 4 → 9) on s1 and s3 change none
    of these (before the fix: MAD (0.5 + 0.3 + 0.9) / 3, similarity 0.5, inconsistency 3/4).
    """
    judged = [
        {"sample": "s1", "verdict": "PASS", "delta": 0.1, "similarity": 0.9, "answers": ("4", "4")},
        {
            "sample": "s2",
            "verdict": "FAIL",
            "delta": -0.3,
            "similarity": 0.5,
            "answers": ("4", "5"),
        },
    ]
    skipped = [
        {"sample": name, "verdict": "SKIP", "reason": "precondition: source is neutral",
         "delta": 0.9, "similarity": 0.1, "answers": ("4", "9"), "followup": 1}
        for name in ("s1", "s3")
    ]  # fmt: skip
    ad_skip = {"relation_id": "ad.paraphrase", "side": "meaning", **skipped[0]}
    ad_cases = [
        {"relation_id": "ad.paraphrase", "side": "meaning", **judged[0]},
        {"relation_id": "ad.format", "side": "presentation", **judged[1]},
    ]
    base = {"model": "M", "task_id": "reasoning", "relation_id": "si.paraphrase"}
    _record(store, [{**base, **row} for row in [*judged, *skipped, ad_skip, *ad_cases]])
    only = CaseFilter.make(relations=["si.paraphrase"])
    (row,) = metrics.model_relation_rows(fetch_aggregates(store, only))
    assert (row["pass"], row["fail"], row["skip"]) == (1, 1, 2)
    assert row["mad"] == pytest.approx(0.2)
    assert row["stability"] == 0.0
    assert row["mean_similarity"] == pytest.approx(0.7)
    assert row["inconsistency_rate"] == pytest.approx(0.5)
    observed = store.observation_deltas(only, ["si.paraphrase", "ad.paraphrase"])
    assert sorted(d for _, _, d in observed) == pytest.approx([0.1, 0.3])
    values, _ = store.value_sample(only, column="output_similarity")
    assert sorted(v for _, _, v in values) == pytest.approx([0.5, 0.9])
    summary = metrics.summarize(store, only)
    tests = stats.run_tests(store, only, counts=summary["counts"], roles=summary["roles"])
    assert all(sum(t["sizes"]) <= 2 for t in tests["kruskal_wallis"])
    (gap,) = store.side_gap(
        CaseFilter()
    )  # the SKIPped meaning case (answer 4 → 9) is not inconsistent
    assert (gap["meaning_rate"], gap["presentation_rate"], gap["gap"]) == (0.0, 1.0, -1.0)
    assert gap["n_meaning"] == 1


def _identity(sample: str, repeat: int, verdicts: list[str], task_id: str) -> list[dict]:
    return [
        {"model": "M", "task_id": task_id, "relation_id": "si.identity", "sample": sample,
         "repeat": repeat, "followup": index, "verdict": verdict, "answers": ("a", "a")}
        for index, verdict in enumerate(verdicts)
    ]  # fmt: skip


def test_noise_floor_is_per_task_and_counts_each_sample_repeat_once(store):
    """Issue 9 item 4. SI paper §3.1: τ_id "returns the original problem unchanged, serving as
    baseline for quantifying intrinsic variance due to sampling stochasticity" — one re-sample
    per (sample, repeat). A two-field task sends it once per field and once for both (three
    cases, the same prompt): still one observation, the first follow-up's.

    qa (two fields): s1 r0 [PASS PASS PASS], s1 r1 [FAIL PASS PASS], s2 r0 [PASS FAIL FAIL]
    → 3 observations, 1 FAIL → floor 1/3 (before: 9 cases, 3 FAIL). sentiment: s1 r0 FAIL,
    s2 r0 FAIL → floor 2/2. Never pooled (pooled: 3/5).
    Net (invariance only): si.paraphrase on qa 2 FAIL of 3 → max(0, 2/3 − 1/3) = 1/3;
    word.antonym ("should change") gets no floor and no net. Model level, over invariance
    relations: qa si.paraphrase 3 cases (2 FAIL) + sentiment si.paraphrase 1 PASS → rate 2/4,
    floor (3·1/3 + 1·1) / 4 = 1/2, net 0.
    """
    rows = [
        *_identity("s1", 0, ["PASS", "PASS", "PASS"], "qa"),
        *_identity("s1", 1, ["FAIL", "PASS", "PASS"], "qa"),
        *_identity("s2", 0, ["PASS", "FAIL", "FAIL"], "qa"),
        *_identity("s1", 0, ["FAIL"], "sentiment"),
        *_identity("s2", 0, ["FAIL"], "sentiment"),
    ]
    para = {"model": "M", "relation_id": "si.paraphrase"}
    antonym = {"model": "M", "task_id": "qa", "relation_id": "word.antonym"}
    rows += [
        {**para, "task_id": "qa", "sample": "s1", "verdict": "FAIL"},
        {**para, "task_id": "qa", "sample": "s2", "verdict": "FAIL"},
        {**para, "task_id": "qa", "sample": "s3", "verdict": "PASS"},
        {**para, "task_id": "sentiment", "sample": "s1", "verdict": "PASS"},
        {**antonym, "sample": "s1", "verdict": "FAIL"},
        {**antonym, "sample": "s2", "verdict": "FAIL"},
    ]
    _record(store, rows)
    found = fetch_aggregates(store, CaseFilter(), by_task=True)
    floors = found.floors
    qa, sentiment = floors["M"]["qa"], floors["M"]["sentiment"]
    assert (qa["n"], qa["pass"], qa["fail"]) == (3, 2, 1)
    assert qa["noise_floor"] == pytest.approx(1 / 3)
    assert (qa["ci_low"], qa["ci_high"]) == wilson_interval(1, 3)
    assert (sentiment["n"], sentiment["noise_floor"]) == (2, 1.0)
    rows = {(r["relation_id"], r["task_id"]): r for r in metrics.model_relation_rows(found)}
    assert rows[("si.paraphrase", "qa")]["noise_floor"] == pytest.approx(1 / 3)
    assert rows[("si.paraphrase", "qa")]["net_violation_rate"] == pytest.approx(1 / 3)
    assert rows[("word.antonym", "qa")]["violation_rate"] == 1.0
    assert rows[("word.antonym", "qa")]["noise_floor"] is None
    assert rows[("word.antonym", "qa")]["net_violation_rate"] is None
    (model,) = metrics.model_rows(fetch_aggregates(store, CaseFilter()))
    assert model["noise_floor"] == pytest.approx(0.5)
    assert model["net_violation_rate"] == pytest.approx(0.0)
    document = report(store)
    assert document["noise_floor"]["M"]["qa"]["n"] == 3
    assert set(document["noise_floor"]["M"]) == {"qa", "sentiment"}


def test_relation_roles_come_from_attributes():
    """The floor is the relation flagged ``noise_floor``; invariance = expectation EQUIVALENT."""
    roles = relation_roles()
    assert roles.noise_floor == frozenset({"si.identity"})
    assert "si.paraphrase" in roles.invariance and "ad.format" in roles.invariance
    assert "word.antonym" not in roles.invariance and "si.identity" not in roles.invariance


def test_agentdiff_gap_per_operator_over_its_originals(store):
    """Issue 9 item 6. AgentDiff §3.2: eq. 1 IR_op = share of originals whose final answer
    changed under operator op; eq. 2 gap = mean IR over meaning operators (paraphrase,
    synonym) − mean IR over presentation operators (reorder, format, distractor); the headline
    averages cells. "Changed" is the oracle's answer equivalence: "5.4 km" vs "5.4" (a numeric
    answer, PASS) is the same answer.

    Cell (M, reasoning): ad.paraphrase q1 FAIL, q2 PASS ("5.4 km" → "5.4"), q3 PASS → IR 1/3;
    ad.synonym q1 FAIL, q2 PASS → 1/2; meaning = 5/12. ad.reorder q1 PASS, q2 PASS → 0;
    ad.format q1 FAIL, q3 PASS → 1/2; presentation = 1/4. Gap = 5/12 − 3/12 = 1/6 (q3 has no
    synonym or reorder case and still counts for the others). Cell (M, qa): ad.paraphrase q1
    FAIL → 1; ad.format q1 PASS → 0; gap 1. Model gap = (1/6 + 1) / 2 = 7/12, sd over the two
    cells = (5/6) / √2.
    """
    meaning, presentation = "meaning", "presentation"
    spec = [
        ("reasoning", "ad.paraphrase", meaning, "q1", "FAIL", ("5", "6")),
        ("reasoning", "ad.paraphrase", meaning, "q2", "PASS", ("5.4 km", "5.4")),
        ("reasoning", "ad.paraphrase", meaning, "q3", "PASS", ("1", "1")),
        ("reasoning", "ad.synonym", meaning, "q1", "FAIL", ("5", "7")),
        ("reasoning", "ad.synonym", meaning, "q2", "PASS", ("5.4", "5.4")),
        ("reasoning", "ad.reorder", presentation, "q1", "PASS", ("5", "5")),
        ("reasoning", "ad.reorder", presentation, "q2", "PASS", ("5.4", "5.4")),
        ("reasoning", "ad.format", presentation, "q1", "FAIL", ("5", "8")),
        ("reasoning", "ad.format", presentation, "q3", "PASS", ("1", "1")),
        ("qa", "ad.paraphrase", meaning, "q1", "FAIL", ("Paris", "Lyon")),
        ("qa", "ad.format", presentation, "q1", "PASS", ("Paris", "Paris")),
    ]
    _record(
        store,
        [
            {"model": "M", "task_id": task, "relation_id": relation, "side": side,
             "sample": sample, "verdict": verdict, "answers": answers}
            for task, relation, side, sample, verdict, answers in spec
        ],
    )  # fmt: skip
    per_task = {r["task_id"]: r for r in store.side_gap(CaseFilter(), by=("task_id",))}
    assert per_task["reasoning"]["gap"] == pytest.approx(1 / 6)
    assert per_task["reasoning"]["meaning_rate"] == pytest.approx(5 / 12)
    assert per_task["reasoning"]["presentation_rate"] == pytest.approx(1 / 4)
    assert per_task["reasoning"]["n_originals"] == 3
    (gap,) = agentdiff_gap(store, CaseFilter())
    assert gap["gap"] == pytest.approx(7 / 12)
    assert gap["n_cells"] == 2
    assert gap["sd_gap"] == pytest.approx((5 / 6) / 2**0.5)


def test_severity_cosine_is_computed_on_the_inputs(store):
    """Issue 9 item 10. AgentDiff §4.1 severity proxy (iii): the cosine distance of the
    embedded (original, variant) *question* pair — never of the outputs.

    Inputs "A ripe red apple" → "A ripe red pear" (bag-of-words stand-in: 3 of 4 words shared,
    cosine 3/4 → distance 1/4); the outputs are identical (output similarity 1.0), which the old
    fallback reported as distance 0. Inputs are embedded in one batch.
    """
    _record(
        store,
        [
            {"model": "M", "task_id": "sentiment", "relation_id": "word.synonym",
             "sample": "s1", "verdict": "PASS", "similarity": 1.0,
             "source_input": {"text": "A ripe red apple"},
             "followup_input": {"text": "A ripe red pear"}},
        ],
    )  # fmt: skip
    embedder = BagOfWordsEmbedder()
    cache = EmbeddingCache(embedder, store)
    (row,) = severity.severity_table(store, CaseFilter(), embeddings=cache)
    assert row.cosine_distance == pytest.approx(0.25)
    assert embedder.calls == [2]  # both inputs in one batch
    (case,) = severity.drilldown(store, CaseFilter(), embeddings=cache)
    assert case.proxies.cosine_distance == pytest.approx(0.25)
    assert embedder.calls == [2]  # cached: nothing embedded twice
    (row,) = severity.severity_table(store, CaseFilter())
    assert row.cosine_distance is None  # no embedder: no proxy, not the outputs' cosine
