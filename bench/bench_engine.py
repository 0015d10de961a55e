"""Engine throughput against the bare ``openai`` client, on the same 1,000 distinct calls.

One run measures, against one fake OpenAI-compatible server (its own process, 100 ms latency per
call), at the same concurrency (24):

- **bare client**: ``openai.AsyncOpenAI`` + a semaphore, sending the 1,000 prompts — the yardstick;
- **engine**: ``Runner.run_sync`` as ``python -m app run`` builds it (real MiniLM embedder loaded
  in that process, real evaluation, a fresh database), timed from the run's start to its summary;
- **whole command**: ``python -m app run … --relations char.leet`` as a user types it, timed
  from process start to exit (imports, model load, report included), with its timeline: the
  seconds before the engine starts, in the engine (the summary's ``elapsed_s``) and in exiting;
- **sequential**: one blocking call after another (a sample of the prompts; calls/s scale).

The 1,000 calls are 500 inputs × (source + its ``char.leet`` follow-up), all distinct. Figures
are calls/s and ratios to the bare client measured in the same run, so a loaded machine moves
them together. ``--code DIR`` runs the engine and the command from another checkout of the code
(e.g. ``git archive`` of an older commit); given twice, both are measured in the same run,
interleaved, against the same bare-client figures.

    .venv/bin/python bench/bench_engine.py [--json] [--code DIR [--code DIR2]] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LATENCY_S = 0.1
N_INPUTS = 500
CONCURRENCY = 24
RELATION = "char.leet"
SEQUENTIAL_SAMPLE = 60
TARGETS = {"engine": 0.95, "command": 0.85, "vs_sequential": 20.0}


def _inputs() -> list[str]:
    return [f"Review {i}: the soup at table {i} was good and warm." for i in range(N_INPUTS)]


def _prompts() -> list[list[dict[str, str]]]:
    """The messages the engine sends: each input's source prompt and its follow-up's."""
    from core.tasks import BUILTIN_TASKS
    from core.types import Sample
    from relations.apply import generate_followups
    from relations.registry import get_relation

    task = BUILTIN_TASKS["sentiment"]
    relation = get_relation(RELATION)
    messages = []
    for text in _inputs():
        sample = Sample({"text": text})
        (followup,) = generate_followups(relation, sample, task, list(task.perturbable_fields))
        messages += [task.messages(sample.fields), task.messages(followup.fields)]
    assert len({json.dumps(m) for m in messages}) == len(messages), "calls must be distinct"
    return messages


def bare_client(base_url: str, prompts, params: dict) -> float:
    """calls/s of a bare ``AsyncOpenAI`` + semaphore loop."""
    from openai import AsyncOpenAI

    async def main() -> float:
        client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=60)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(messages):
            async with limit:
                response = await client.chat.completions.create(
                    model="fake-model", messages=messages, **params
                )
                assert response.choices[0].message.content

        started = time.perf_counter()
        await asyncio.gather(*(one(m) for m in prompts))
        elapsed = time.perf_counter() - started
        await client.close()
        return len(prompts) / elapsed

    return asyncio.run(main())


def sequential(base_url: str, prompts, params: dict) -> float:
    """calls/s of one blocking call after another (on a sample of the prompts)."""
    import httpx2 as httpx

    sample = prompts[:SEQUENTIAL_SAMPLE]
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for messages in sample:
            body = {"model": "fake-model", "messages": messages, **params}
            client.post(f"{base_url}/chat/completions", json=body).raise_for_status()
    return len(sample) / (time.perf_counter() - started)


def engine_child(base_url: str, db: str) -> None:
    """In a fresh process (so the model loads as in a real run): time one run, print JSON."""
    from app.engine.workspace import make_runner
    from core.run_config import RunConfig
    from core.tasks import BUILTIN_TASKS
    from core.types import Endpoint, Sample
    from storage import Store

    task = BUILTIN_TASKS["sentiment"]
    samples = [Sample({"text": text}) for text in _inputs()]
    store = Store(db)
    runner = make_runner(store)
    endpoint = Endpoint(
        name="bench", base_url=base_url, model="fake-model", concurrency=CONCURRENCY
    )
    config = RunConfig(endpoint=endpoint, task_id=task.id, relation_ids=(RELATION,))
    started = time.perf_counter()
    summary = runner.run_sync(config, task, samples)
    elapsed = time.perf_counter() - started
    print(json.dumps({"calls": summary.calls_made, "elapsed_s": elapsed, "cases": summary.cases}))


def engine(code: Path, base_url: str, tmp: Path, tag: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, __file__, "--engine-child", base_url, str(tmp / f"engine-{tag}.db")],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["calls"] == N_INPUTS * 2, result
    return result["calls"] / result["elapsed_s"]


def command(
    code: Path,
    base_url: str,
    tmp: Path,
    tag: str,
    inputs: Path | None = None,
    task: str = "sentiment",
    relation: str = RELATION,
) -> dict[str, float]:
    """One ``python -m app run`` as a user types it: calls/s over its whole wall time, and where
    that time went — the engine (``elapsed_s`` of its summary: planning, calls, evaluation),
    before the engine (interpreter start, imports, inputs, store, pre-flight) and after the
    summary is printed (process exit). By default this bench's run; ``inputs``, ``task`` and
    ``relation`` make it another (``bench_free_text.py``)."""
    if inputs is None:
        inputs = tmp / "inputs.txt"
        inputs.write_text("\n".join(_inputs()) + "\n")
    argv = [sys.executable, "-m", "app", "run", "--endpoint", base_url, "--model", "fake-model"]
    argv += ["--task", task, "--relations", relation, "--inputs", str(inputs)]
    argv += ["--db", str(tmp / f"command-{tag}.db"), "--concurrency", str(CONCURRENCY), "--json"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=code, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # stderr (progress) is drained on a thread so the child never blocks on a full pipe.
    errors: list[str] = []
    drain = threading.Thread(target=lambda: errors.append(process.stderr.read()), daemon=True)
    drain.start()
    # The summary is the only output; it reaches the pipe when the command's stdout is flushed,
    # as the process begins to exit.
    output = process.stdout.readline()
    printed = time.perf_counter()
    output += process.stdout.read()
    process.wait()
    elapsed = time.perf_counter() - started
    drain.join()
    if process.returncode != 0:
        raise RuntimeError(f"run exited {process.returncode}: {''.join(errors)[-2000:]}")
    summary = json.loads(output[output.index("{") :])
    calls = summary["calls_made"]
    if task == "sentiment" and relation == RELATION:
        assert calls == N_INPUTS * 2, summary
    engine_s = summary["elapsed_s"]
    return {
        "calls_per_s": calls / elapsed,
        "command_s": elapsed,
        "engine_s": engine_s,
        "before_engine_s": printed - started - engine_s,
        "exit_s": elapsed - (printed - started),
    }


def measure(codes: list[Path], repeat: int) -> dict:
    """Rounds of: the bare client, then the engine and the command of each checkout in turn
    (interleaved, so a change in the machine's load hits all of them alike); medians."""
    sys.path.insert(0, str(ROOT))
    from core.types import Endpoint
    from tests.fake_openai import FakeServerProcess

    prompts = _prompts()
    params = Endpoint(name="b", base_url="http://x/v1", model="m").sampling_params()
    load_before = os.getloadavg()
    bare: list[float] = []
    runs = {str(code): {"engine": [], "command": []} for code in codes}
    with (
        FakeServerProcess("--latency", str(LATENCY_S)) as server,
        tempfile.TemporaryDirectory() as tmp_name,
    ):
        tmp = Path(tmp_name)
        for round_ in range(repeat):
            bare.append(bare_client(server.base_url, prompts, params))
            for index, code in enumerate(codes):
                tag = f"{round_}-{index}"
                runs[str(code)]["engine"].append(engine(code, server.base_url, tmp, tag))
                timing = command(code, server.base_url, tmp, tag)
                runs[str(code)]["command"].append(timing.pop("calls_per_s"))
                for key, seconds in timing.items():
                    runs[str(code)].setdefault(key, []).append(seconds)
        sequential_calls_s = sequential(server.base_url, prompts, params)
    bare_calls_s = statistics.median(bare)
    result = {
        "calls": N_INPUTS * 2,
        "concurrency": CONCURRENCY,
        "latency_ms": LATENCY_S * 1000,
        "repeat": repeat,
        "bare_calls_per_s": round(bare_calls_s, 1),
        "bare_calls_per_s_each": [round(x, 1) for x in bare],
        "sequential_calls_per_s": round(sequential_calls_s, 1),
        "code": {},
        "targets": TARGETS,
        "load_avg_before": load_before,
        "load_avg": os.getloadavg(),
    }
    for code, figures in runs.items():
        engine_calls_s = statistics.median(figures["engine"])
        command_calls_s = statistics.median(figures["command"])
        result["code"][code] = {
            "engine_calls_per_s": round(engine_calls_s, 1),
            "command_calls_per_s": round(command_calls_s, 1),
            "engine_calls_per_s_each": [round(x, 1) for x in figures["engine"]],
            "command_calls_per_s_each": [round(x, 1) for x in figures["command"]],
            "engine_vs_bare": round(engine_calls_s / bare_calls_s, 3),
            "command_vs_bare": round(command_calls_s / bare_calls_s, 3),
            "engine_vs_sequential": round(engine_calls_s / sequential_calls_s, 1),
            # Where the command's wall time went (medians, seconds): the engine (planning, the
            # calls, evaluation) and the command's own overhead around it.
            "command_timeline_s": {
                key: round(statistics.median(figures[key]), 3)
                for key in ("command_s", "before_engine_s", "engine_s", "exit_s")
            },
            "command_overhead_s": round(
                statistics.median(
                    total - engine
                    for total, engine in zip(figures["command_s"], figures["engine_s"], strict=True)
                ),
                3,
            ),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        help="a checkout to run the engine and the command from (repeat to compare; default: this one)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds; medians are reported")
    parser.add_argument("--engine-child", nargs=2, metavar=("BASE_URL", "DB"), help="internal")
    args = parser.parse_args()
    if args.engine_child:
        sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)))
        engine_child(*args.engine_child)
        return
    codes = [code.resolve() for code in args.code or [ROOT]]
    result = measure(codes, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{result['calls']} distinct calls, concurrency {CONCURRENCY}, "
        f"server latency {LATENCY_S * 1000:.0f} ms, {args.repeat} round(s), medians"
    )
    print(f"bare AsyncOpenAI + semaphore : {result['bare_calls_per_s']:6.1f} calls/s   1.00×")
    print(f"sequential loop              : {result['sequential_calls_per_s']:6.1f} calls/s")
    for code, figures in result["code"].items():
        print(f"code {code}")
        print(
            f"  engine (Runner, MiniLM)    : {figures['engine_calls_per_s']:6.1f} calls/s   "
            f"{figures['engine_vs_bare']:.2f}×  (target ≥ {TARGETS['engine']}×); "
            f"{figures['engine_vs_sequential']:.1f}× the sequential loop "
            f"(target ≥ {TARGETS['vs_sequential']:g}×)"
        )
        print(
            f"  whole `python -m app run`  : {figures['command_calls_per_s']:6.1f} calls/s   "
            f"{figures['command_vs_bare']:.2f}×  (target ≥ {TARGETS['command']}×)"
        )
        timeline = figures["command_timeline_s"]
        print(
            f"    its {timeline['command_s']:.2f} s: {timeline['before_engine_s']:.2f} s before "
            f"the engine (start, imports, inputs, pre-flight), {timeline['engine_s']:.2f} s "
            f"engine, {timeline['exit_s']:.2f} s exit"
        )
    print(f"load average before / after  : {result['load_avg_before']} / {result['load_avg']}")


if __name__ == "__main__":
    main()
