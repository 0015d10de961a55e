"""Scale benchmark: every Analysis query under 1 s with 500,000 stored cases.

Builds a temporary database with 500k cases — 4 models × 40 relations (si.identity among them,
repeated 5 times per sample like every relation here) × 625 samples × 5 repeats, with ~5% SKIPs
(half of them invalid_followup), ~1% ERRORs, AgentDiff sides on the ad.* relations and category /
difficulty metadata — recorded through the ``Store`` verbs in batches of 50k (so the migrations'
indexes exist), then runs each query the Analysis page makes three times and prints the
first (colder) and the median time. Exit status 1 unless every page query's median is < 1 s.
The HTML report and ``report --json`` (several queries together, not page queries) are shown for
reference, with the peak memory of the querying process. The database is built in a child
process, so that peak is the app's (queries on the stored cases), not the builder's.

Run: ``.venv/bin/python bench/bench_analysis_scale.py [--cases N] [--keep PATH] [--json]``
(``--cases 5000`` is a quick mode; ``--json`` prints one JSON object of the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.analysis import aggregates, metrics, severity, stats
from app.analysis.consistency import answer_types, same_answers
from app.analysis.relation_roles import relation_roles
from app.reports.html_report import render_html_report
from app.reports.summary import report
from core.case_filter import CaseFilter
from core.types import Case, Endpoint, Sample, Verdict
from storage import Store
from storage.run_verbs import RunDefinition

MODELS = ["model-alpha-7b", "model-beta-70b", "model-gamma-mini", "model-delta-405b"]
CATEGORIES = ["physics", "math", "chemistry", "economics", "statistics", "biology"]
DIFFICULTIES = ["easy", "medium", "hard"]
LIMIT_S = 1.0
BATCH = 50_000  # cases recorded per transaction while building


def relation_ids() -> list[tuple[str, str, str | None]]:
    """40 (relation_id, family, side) triples resembling the catalogue."""
    out: list[tuple[str, str, str | None]] = [
        (f"si.{n}", "si", None)
        for n in ("identity", "paraphrase", "reorder_facts", "expand", "contract", "academic")
    ]
    out += [("ad.paraphrase", "ad", "meaning"), ("ad.synonym", "ad", "meaning")]
    out += [(f"ad.{n}", "ad", "presentation") for n in ("reorder", "format", "distractor")]
    out += [(f"rrb.op{i:02d}", "rrb", None) for i in range(14)]
    out += [(f"char.op{i:02d}", "char", None) for i in range(15)]
    return out[:40]


def build(path: Path, n_cases: int) -> Store:
    store = Store(path)
    rng = random.Random(1234)
    relations = relation_ids()
    repeats = 5
    n_samples = max(1, n_cases // (len(MODELS) * len(relations) * repeats))
    samples = []
    for s in range(n_samples):
        meta = {"category": CATEGORIES[s % len(CATEGORIES)], "difficulty": DIFFICULTIES[s % 3]}
        fields = {"problem": f"Problem {s}: a train leaves at {s % 12} and travels {s * 7} km."}
        samples.append(Sample(fields=fields, reference=f"answer {s}", meta=meta))
    for m, model in enumerate(MODELS):
        store.save_run(
            RunDefinition(
                f"run-{m}",
                endpoint=Endpoint(name="bench", base_url="http://127.0.0.1:9/v1", model=model),
                task_id="reasoning",
                config={},
                samples=samples,
            ),
            created_at=f"2026-11-0{m + 1}T10:00:00+00:00",
        )
        store.finish_run(f"run-{m}", "done")
    sample_ids = [sample.id for sample in samples]  # a content hash: computed once each
    batch: list[Case] = []
    case_no = 0
    for m, model in enumerate(MODELS):
        weakness = 0.05 + 0.04 * m
        for relation_id, family, side in relations:
            rel_noise = 0.01 if relation_id == "si.identity" else rng.uniform(0.02, 0.15)
            for s, (sample, sample_id) in enumerate(zip(samples, sample_ids, strict=True)):
                for r in range(repeats):
                    if case_no >= n_cases:
                        break
                    case_no += 1
                    roll = rng.random()
                    if roll < 0.025:
                        verdict, reason = Verdict.SKIP, "invalid_followup: dropped the number 7"
                    elif roll < 0.05:
                        verdict, reason = Verdict.SKIP, "precondition: needs two sentences"
                    elif roll < 0.06:
                        verdict, reason = Verdict.ERROR, "call failed after 3 retries"
                    elif rng.random() < weakness + rel_noise:
                        verdict, reason = Verdict.FAIL, "answers differ"
                    else:
                        verdict, reason = Verdict.PASS, "answers agree"
                    scored = verdict in (Verdict.PASS, Verdict.FAIL)
                    delta = rng.gauss(-rel_noise, rel_noise + 0.02) if scored else None
                    similarity = min(1.0, max(0.0, rng.gauss(0.9 - rel_noise, 0.05)))
                    answer = str(s % 17)
                    followup_answer = answer if verdict == Verdict.PASS else str((s + 1) % 17)
                    problem = sample.fields["problem"]
                    batch.append(
                        Case(
                            id=f"c{case_no:08d}",
                            run_id=f"run-{m}",
                            sample_id=sample_id,
                            relation_id=relation_id,
                            family=family,
                            side=side,
                            target="problem",
                            followup_index=0,
                            repeat_index=r,
                            model=model,
                            task_id="reasoning",
                            source_input=sample.fields,
                            followup_input=sample.fields if scored else None,
                            source_prompt="Solve step by step. " + problem,
                            followup_prompt="Solve step by step. " + problem,
                            source_output=f"Step 1: think. Step 2: compute. Final answer: {answer}",
                            followup_output="Step 1: think. Step 2: compute. "
                            f"Final answer: {followup_answer}"
                            if scored
                            else None,
                            source_answer=answer,
                            followup_answer=followup_answer if scored else None,
                            verdict=verdict,
                            oracle="semantic_similar",
                            value=similarity if scored else None,
                            reason=reason,
                            score_source=0.6 if scored else None,
                            score_followup=0.6 + delta if scored else None,
                            delta=delta,
                            output_similarity=similarity if scored else None,
                            created_at=f"2026-11-0{m + 1}T10:{(case_no // 60000) % 60:02d}:00+00:00",
                        )
                    )
                    if len(batch) >= BATCH:
                        store.record_cases(batch)
                        batch = []
    store.record_cases(batch)
    store.refresh_statistics()
    return store


REPEATS = 3


def timed(label: str, fn, results: list[tuple[str, float, float]]):
    """Run ``fn`` REPEATS times; record (label, first run, median run) in seconds."""
    times = []
    value = None
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    results.append((label, times[0], statistics.median(times)))
    return value


def build_in_child(path: Path, n_cases: int) -> tuple[float, float]:
    """Build the database in a child process; (seconds, the child's peak memory in MB)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, __file__, "--build-only", str(path), "--cases", str(n_cases)], check=True
    )
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return time.perf_counter() - start, peak_mb


def run_queries(store: Store) -> list[tuple[str, float, float]]:
    """Every query the Analysis page makes (and two reports), timed: (label, first, median)."""
    everything = CaseFilter()
    one_run = CaseFilter.make(run_ids=["run-1"])
    two_models = CaseFilter.make(models=MODELS[:2], date_from="2026-11-01", date_to="2026-11-03")
    some_relations = CaseFilter.make(relations=["si.paraphrase", "ad.reorder", "rrb.op03"])
    results: list[tuple[str, float, float]] = []
    timed("filter options", store.filter_options, results)
    timed("count (all)", lambda: store.count_cases(everything), results)
    for name, flt in (
        ("all", everything),
        ("one run", one_run),
        ("2 models + dates", two_models),
        ("3 relations", some_relations),
    ):
        timed(
            f"summary: heatmaps/MAD/floor/gap ({name})",
            lambda f=flt: metrics.summarize(store, f),
            results,
        )
    timed("verdict counts model×relation", lambda: store.verdict_counts(everything), results)
    timed("cell stats model×relation", lambda: store.cell_stats(everything), results)
    roles = relation_roles(store)
    same = same_answers(store, answer_types(store))
    timed("noise floor", lambda: aggregates.fetch_floors(store, everything, roles, same), results)
    timed("AgentDiff gap", lambda: aggregates.agentdiff_gap(store, everything), results)
    timed("box stats Δ", lambda: metrics.box_stats(store, everything, "delta"), results)
    timed(
        "box stats similarity",
        lambda: metrics.box_stats(store, everything, "output_similarity"),
        results,
    )
    timed(
        "breakdown by category", lambda: metrics.breakdown(store, "category", CaseFilter()), results
    )
    timed(
        "breakdown by difficulty",
        lambda: metrics.breakdown(store, "difficulty", CaseFilter()),
        results,
    )
    timed("meta keys", store.meta_keys, results)
    counts = store.verdict_counts(everything)  # the page reuses the summary's counts
    timed(
        "statistics (MWU + KW + BH)",
        lambda: stats.run_tests(store, everything, counts=counts, roles=roles),
        results,
    )
    timed(
        "drill-down cell (+severity)",
        lambda: severity.drilldown(store, everything, model=MODELS[2], relation_id="ad.format"),
        results,
    )
    timed("severity sample (2000)", lambda: severity.severity_table(store, everything), results)
    timed("compare two runs", lambda: metrics.compare_runs(store, "run-0", "run-3"), results)
    timed("HTML report (all; not a page query)", lambda: render_html_report(store), results)
    timed("report --json (all; not a page query)", lambda: report(store), results)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500_000)
    parser.add_argument("--keep", type=Path, help="build the DB here and keep it")
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    parser.add_argument("--build-only", type=Path, help=argparse.SUPPRESS)  # the child's job
    args = parser.parse_args()
    if args.build_only:
        build(args.build_only, args.cases).close()
        return 0
    tmp = tempfile.TemporaryDirectory()
    path = args.keep or Path(tmp.name) / "bench.db"
    if path.exists():
        path.unlink()
    build_s, build_peak_mb = build_in_child(path, args.cases)
    store = Store(path)
    total = store.count_cases(CaseFilter())
    size_mb = path.stat().st_size / 1e6
    results = run_queries(store)
    page = [(label, median) for label, _, median in results if "not a page query" not in label]
    slowest_label, slowest = max(page, key=lambda item: item[1])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    store.close()
    tmp.cleanup()
    if args.json:
        figures = {
            "cases": total,
            "db_mb": round(size_mb, 1),
            "build_s": round(build_s, 1),
            "build_peak_memory_mb": round(build_peak_mb),
            "limit_s": LIMIT_S,
            "repeats": REPEATS,
            "queries": {
                label: {"first_s": round(first, 4), "median_s": round(median, 4)}
                for label, first, median in results
            },
            "slowest_page_query": slowest_label,
            "slowest_page_query_s": round(slowest, 4),
            "slowest_vs_limit": round(slowest / LIMIT_S, 3),
            "all_page_queries_under_limit": slowest < LIMIT_S,
            "peak_memory_mb": round(peak_mb),
            "load_avg": [round(x, 2) for x in os.getloadavg()],  # times are wall-clock
        }
        print(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0 if slowest < LIMIT_S else 1
    print(f"built {total:,} cases in {build_s:.1f} s ({size_mb:.0f} MB) at {path}")
    width = max(len(label) for label, _, _ in results)
    print(f"\n{'query':<{width}}  {'first s':>8}  {'median s':>8}  < 1 s")
    print("-" * (width + 30))
    for label, first, median in results:
        ok = "yes" if median < LIMIT_S else "NO"
        print(f"{label:<{width}}  {first:8.3f}  {median:8.3f}  {ok}")
    verdict = "yes" if slowest < LIMIT_S else "NO"
    print(f"\nslowest page query (median of {REPEATS}): {slowest_label} {slowest:.3f} s")
    print(f"every Analysis page query < 1 s: {verdict}")
    print(
        f"peak memory of the querying process: {peak_mb:.0f} MB (builder: {build_peak_mb:.0f} MB)"
    )
    return 0 if slowest < LIMIT_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
