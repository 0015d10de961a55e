"""A free-text run against the bare ``openai`` client: every answer distinct, so every answer is
embedded (issue 24's run).

1,000 reasoning problems (with reference solutions and steps, as in the SI paper's setting) ×
``char.delete``, against the fake server of ``bench_engine.py`` answering every prompt with a
distinct four-step text after 100 ms, at concurrency 24. One run measures:

- **bare client**: ``openai.AsyncOpenAI`` + a semaphore over the same 2,000 prompts;
- **engine**: ``Runner.run_sync`` in a fresh process with the real embedder, reporting the texts
  it embedded per case and the embedder's texts/s (the arithmetic of the bound), per second of
  waiting and per CPU-second of the embedding process (the machine may be shared);
- **whole command**: ``python -m app run … --task reasoning --relations char.delete`` from start
  to exit.

Texts embedded per case are counted by a run with a bag-of-words stand-in for MiniLM (the same
texts are asked for: this load's answers are numbers, decided without vectors), for this
checkout and for each ``--code DIR`` (e.g. ``git archive`` of an older commit); only this
checkout is timed. Figures are ratios to the bare client of this run.

    .venv/bin/python bench/bench_free_text.py [--json] [--problems N] [--code DIR ...]

Where the CPU goes (2026-11-27, load about 1.7, ``engine_process_cpu_s``, ``embedder_cpu_s``,
``server_cpu_s``): in a 102 s run the embedding process used 178 CPU-s (1.75 of the 2 cores) for
12,579 texts (70.6 texts per CPU-s, 12.58 per case: two answers and their four steps each, the
reference and its three steps); the engine's own process 11.3 CPU-s and the fake server 3.0.
The embedder is the whole bound: with both cores its own it would take 89 s, 0.19× the bare
client's 16.5 s, against the 0.55× target (which needs about 3× the texts per CPU-second).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import CONCURRENCY, LATENCY_S, bare_client, command

RELATION = "char.delete"
TASK = "reasoning"
TARGET = 0.55


def problems(n: int) -> list[dict]:
    """``n`` distinct word problems with a worked reference and its three steps."""
    rows = []
    for i in range(n):
        boxes, per_box, sold = 3 + i % 17, 4 + (i * 7) % 23, 1 + (i * 5) % 11
        total = boxes * per_box
        steps = [
            f"Count the apples: {boxes} boxes × {per_box} apples = {total} apples.",
            f"Subtract the {sold} apples sold: {total} − {sold} = {total - sold}.",
            f"So {total - sold} apples are left in shop number {i}.",
        ]
        rows.append(
            {
                "problem": (
                    f"Shop number {i} has {boxes} boxes of apples with {per_box} apples in each "
                    f"box. It sells {sold} apples. How many apples are left?"
                ),
                "reference": "\n".join(steps) + f"\nFinal answer: {total - sold}",
                "reference_steps": steps,
                "answer": str(total - sold),
            }
        )
    return rows


def _prompts(rows: list[dict]) -> list[list[dict[str, str]]]:
    from core.tasks import BUILTIN_TASKS
    from core.types import Sample
    from relations.apply import generate_followups
    from relations.registry import get_relation

    task, relation = BUILTIN_TASKS[TASK], get_relation(RELATION)
    messages = []
    for row in rows:
        sample = Sample({"problem": row["problem"]})
        messages.append(task.messages(sample.fields))
        for followup in generate_followups(relation, sample, task, list(task.perturbable_fields)):
            messages.append(task.messages(followup.fields))
    return messages


def engine_child(base_url: str, db: str, inputs: str, count_only: bool = False) -> None:
    """In a fresh process: one run with the real embedder; its calls, cases, time and texts.
    ``count_only``: a bag-of-words stand-in for MiniLM (the texts a run embeds do not depend on
    their vectors here: the answers are numbers), to count them in seconds."""
    from app.engine.run_setup import samples_from_file
    from app.engine.workspace import make_runner
    from core.run_config import RunConfig
    from core.tasks import BUILTIN_TASKS
    from core.types import Endpoint
    from storage import Store

    task = BUILTIN_TASKS[TASK]
    samples = samples_from_file(inputs, task)
    store = Store(db)
    if count_only:
        from app.engine.embedder import EmbeddingCache
        from app.engine.runner import Runner
        from tests.conftest import BagOfWordsEmbedder

        runner = Runner(store, EmbeddingCache(BagOfWordsEmbedder(), store))
    else:
        runner = make_runner(store)
    endpoint = Endpoint(
        name="bench", base_url=base_url, model="fake-model", concurrency=CONCURRENCY
    )
    config = RunConfig(endpoint=endpoint, task_id=task.id, relation_ids=(RELATION,))
    started = time.perf_counter()
    summary = runner.run_sync(config, task, samples)
    elapsed = time.perf_counter() - started
    stats = getattr(runner.embeddings, "stats", None)
    print(
        json.dumps(
            {
                "calls": summary.calls_made,
                "cases": summary.cases,
                "elapsed_s": elapsed,
                "texts_embedded": runner.embeddings.computed,
                "embedding_s": stats.seconds if stats is not None else None,
                "embedder_cpu_s": _embedder_cpu_s(runner.embeddings.embedder),
                # this process alone (the runner, the HTTP client, judging, storing)
                "engine_process_cpu_s": round(sum(os.times()[:2]), 2),
            }
        )
    )


def _embedder_cpu_s(embedder) -> float | None:
    """CPU-seconds the embedding process has used so far (all its threads), read from
    /proc while it still runs: on a shared machine, what the embedding cost whatever share of
    the cores it got. None where there is no such process or no /proc."""
    process = getattr(embedder, "_process", None)
    return None if process is None else _process_cpu_s(process.pid)


def _process_cpu_s(pid: int) -> float | None:
    """CPU-seconds process ``pid`` has used so far, from /proc (None without it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime and stime are the 14th and 15th fields of stat, the 12th and 13th after "(comm)".
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def engine(
    code: Path, base_url: str, tmp: Path, tag: str, inputs: Path, count_only: bool = False
) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    child = ["--engine-child", base_url, str(tmp / f"e-{tag}.db"), str(inputs)]
    out = subprocess.run(
        [sys.executable, __file__, *child, *(["--count-only"] if count_only else [])],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(n: int, codes: list[Path]) -> dict:
    sys.path.insert(0, str(ROOT))
    from core.types import Endpoint
    from tests.fake_openai import FakeServerProcess

    rows = problems(n)
    prompts = _prompts(rows)
    params = Endpoint(name="b", base_url="http://x/v1", model="m").sampling_params()
    load_before = os.getloadavg()
    result: dict = {"problems": n, "calls": len(prompts), "code": {}, "texts_per_case": {}}
    with (
        FakeServerProcess("--latency", str(LATENCY_S), "--responder", "reasoning") as server,
        tempfile.TemporaryDirectory() as tmp_name,
    ):
        tmp = Path(tmp_name)
        inputs = tmp / "problems.jsonl"
        inputs.write_text("".join(json.dumps(row) + "\n" for row in rows))
        bare = bare_client(server.base_url, prompts, params)
        for index, code in enumerate(codes):
            counted = engine(code, server.base_url, tmp, f"n{index}", inputs, count_only=True)
            result["texts_per_case"][str(code)] = round(
                counted["texts_embedded"] / counted["cases"], 2
            )
            if code != ROOT:
                continue
            server_before = _process_cpu_s(server.process.pid)
            figures = engine(code, server.base_url, tmp, str(index), inputs)
            if server_before is not None:
                figures["server_cpu_s"] = round(
                    _process_cpu_s(server.process.pid) - server_before, 2
                )
            figures["texts_per_case"] = round(figures["texts_embedded"] / figures["cases"], 2)
            if figures.get("embedding_s"):
                figures["embedder_texts_per_s"] = round(
                    figures["texts_embedded"] / figures["embedding_s"], 1
                )
            if figures.get("embedder_cpu_s"):
                figures["embedder_texts_per_cpu_s"] = round(
                    figures["texts_embedded"] / figures["embedder_cpu_s"], 1
                )
            figures["engine_calls_per_s"] = round(figures["calls"] / figures["elapsed_s"], 1)
            figures["engine_vs_bare"] = round(figures["engine_calls_per_s"] / bare, 3)
            timing = command(ROOT, server.base_url, tmp, f"c{index}", inputs, TASK, RELATION)
            figures["command_calls_per_s"] = round(timing["calls_per_s"], 1)
            figures["command_vs_bare"] = round(timing["calls_per_s"] / bare, 3)
            figures["command_timeline_s"] = {
                k: round(v, 2) for k, v in timing.items() if k != "calls_per_s"
            }
            result["code"][str(code)] = figures
    result |= {
        "bare_calls_per_s": round(bare, 1),
        "bare_s": round(len(prompts) / bare, 2),
        "target_command_vs_bare": TARGET,
        "load_avg_before": load_before,
        "load_avg_after": os.getloadavg(),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--code", type=Path, action="append", help="another checkout's engine")
    parser.add_argument("--engine-child", nargs=3, help="internal")
    parser.add_argument("--count-only", action="store_true", help="internal")
    args = parser.parse_args()
    if args.engine_child:
        sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)))
        engine_child(*args.engine_child, count_only=args.count_only)
        return
    codes = [ROOT, *(code.resolve() for code in args.code or [])]
    result = measure(args.problems, codes)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
