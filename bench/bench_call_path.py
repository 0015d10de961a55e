"""CPU per chat call of each way to send it, against one fake server in its own process.

The engine's throughput at concurrency 24 is bound by the CPU each call costs on the event loop
(request building, response parsing, the HTTP stack), not by the server. This bench sends the
same distinct calls through each call path, at the same concurrency, and prints the process CPU
time per call (µs) and calls/s, with the ratio to the ``openai`` SDK measured in the same run:

- ``openai_sdk``: a bare ``openai.AsyncOpenAI`` + semaphore loop (the yardstick);
- ``client``: Morphscope's client for endpoint kind ``openai`` (``make_client``), limiter,
  retries and all, as the runner uses it;
- ``httpx2``: ``httpx2.AsyncClient.post`` with a JSON body, ``json.loads`` of the answer;
- ``httpcore2``: the connection pool under httpx2, used directly;
- ``aiohttp``: ``aiohttp.ClientSession.post`` (only if aiohttp is installed);
- ``raw``: a minimal HTTP/1.1 client on asyncio streams (no pool, no TLS): the floor.

Each round runs every path once, interleaved, so a change in the machine's load hits all alike;
medians over rounds are printed. The fake server answers HTTP/1.0 (one connection per call), so
every path pays a connect per call alike.

    .venv/bin/python bench/bench_call_path.py [--calls N] [--repeat R] [--json] [--only a,b]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeServerProcess

CONCURRENCY = 24
LATENCY_S = 0.02
MODEL = "fake-model"

Send = Callable[[list[dict[str, str]]], Awaitable[str]]


def _prompts(n: int, salt: str) -> list[list[dict[str, str]]]:
    """Distinct chat calls shaped like a sentiment task's (a system and a user message)."""
    system = "Classify the sentiment of the review. Answer with one word: positive or negative."
    return [
        [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Review {salt}-{i}: the soup at table {i} was good."},
        ]
        for i in range(n)
    ]


def _params() -> dict:
    from core.types import Endpoint

    return Endpoint(name="b", base_url="http://x/v1", model=MODEL).sampling_params()


# ------------------------------------------------------------------ the call paths


async def openai_sdk(base_url: str, params: dict):
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=60)

    async def send(messages):
        response = await client.chat.completions.create(model=MODEL, messages=messages, **params)
        return response.choices[0].message.content

    return send, client.close


async def morphscope_client(base_url: str, params: dict):
    from app.clients import make_client
    from core.types import Endpoint

    endpoint = Endpoint(name="b", base_url=base_url, model=MODEL, concurrency=CONCURRENCY)
    client = make_client(endpoint)

    async def send(messages):
        completion = await client.complete(messages, params)
        assert completion.ok, completion.error
        return completion.text

    return send, client.close


async def httpx2_client(base_url: str, params: dict):
    import httpx2 as httpx

    limits = httpx.Limits(max_connections=CONCURRENCY * 2, max_keepalive_connections=CONCURRENCY)
    client = httpx.AsyncClient(timeout=60, limits=limits)
    url = f"{base_url}/chat/completions"
    headers = {"Authorization": "Bearer x"}

    async def send(messages):
        body = {"model": MODEL, "messages": messages, **params}
        response = await client.post(url, json=body, headers=headers)
        return json.loads(response.content)["choices"][0]["message"]["content"]

    return send, client.aclose


async def httpcore2_client(base_url: str, params: dict):
    import httpcore2

    pool = httpcore2.AsyncConnectionPool(max_connections=CONCURRENCY * 2)
    url = f"{base_url}/chat/completions"
    timeout = {"timeout": {"connect": 60, "read": 60, "write": 60, "pool": 60}}

    async def send(messages):
        content = json.dumps({"model": MODEL, "messages": messages, **params}).encode()
        headers = [
            (b"Authorization", b"Bearer x"),
            (b"Content-Type", b"application/json"),
        ]
        response = await pool.request(
            "POST", url, headers=headers, content=content, extensions=timeout
        )
        return json.loads(response.content)["choices"][0]["message"]["content"]

    return send, pool.aclose


async def aiohttp_client(base_url: str, params: dict):
    import aiohttp

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=CONCURRENCY * 2),
        timeout=aiohttp.ClientTimeout(total=60),
    )
    url = f"{base_url}/chat/completions"
    headers = {"Authorization": "Bearer x", "Content-Type": "application/json"}

    async def send(messages):
        content = json.dumps({"model": MODEL, "messages": messages, **params}).encode()
        async with session.post(url, data=content, headers=headers) as response:
            body = await response.read()
        return json.loads(body)["choices"][0]["message"]["content"]

    return send, session.close


async def raw_client(base_url: str, params: dict):
    """HTTP/1.1 on asyncio streams, one connection per call (the server closes it anyway)."""
    parts = urlsplit(base_url)
    host, port = parts.hostname, parts.port or 80
    path = f"{parts.path.rstrip('/')}/chat/completions"

    async def send(messages):
        content = json.dumps({"model": MODEL, "messages": messages, **params}).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer x\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(content)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(head + content)
        data = await reader.read()
        writer.close()
        body = data.split(b"\r\n\r\n", 1)[1]
        return json.loads(body)["choices"][0]["message"]["content"]

    async def close():
        pass

    return send, close


PATHS = {
    "openai_sdk": openai_sdk,
    "client": morphscope_client,
    "httpx2": httpx2_client,
    "httpcore2": httpcore2_client,
    "aiohttp": aiohttp_client,
    "raw": raw_client,
}


def _available(name: str) -> bool:
    if name != "aiohttp":
        return True
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def measure_path(name: str, base_url: str, prompts, params: dict) -> dict:
    """One path, one round: CPU µs per call and calls/s over ``prompts`` at CONCURRENCY."""

    async def main() -> dict:
        send, close = await PATHS[name](base_url, params)
        await send(prompts[0])  # warm up: imports, the first connection
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(messages):
            async with limit:
                assert await send(messages)

        cpu = time.process_time()
        wall = time.perf_counter()
        await asyncio.gather(*(one(m) for m in prompts[1:]))
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        await close()
        calls = len(prompts) - 1
        return {"cpu_us_per_call": cpu / calls * 1e6, "calls_per_s": calls / wall}

    return asyncio.run(main())


def measure(names: list[str], calls: int, repeat: int) -> dict:
    params = _params()
    figures: dict[str, list[dict]] = {name: [] for name in names}
    with FakeServerProcess("--latency", str(LATENCY_S)) as server:
        for round_ in range(repeat):
            for name in names:
                prompts = _prompts(calls + 1, f"{name}-{round_}")
                figures[name].append(measure_path(name, server.base_url, prompts, params))
    result: dict = {
        "calls": calls,
        "concurrency": CONCURRENCY,
        "latency_ms": LATENCY_S * 1000,
        "repeat": repeat,
        "paths": {},
        "load_avg": os.getloadavg(),
    }
    for name, rounds in figures.items():
        result["paths"][name] = {
            "cpu_us_per_call": round(statistics.median(r["cpu_us_per_call"] for r in rounds)),
            "calls_per_s": round(statistics.median(r["calls_per_s"] for r in rounds), 1),
            "cpu_us_each": [round(r["cpu_us_per_call"]) for r in rounds],
        }
    if "openai_sdk" in result["paths"]:
        sdk = result["paths"]["openai_sdk"]["cpu_us_per_call"]
        for figures_ in result["paths"].values():
            figures_["cpu_vs_openai_sdk"] = round(figures_["cpu_us_per_call"] / sdk, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=400, help="calls per path and round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    parser.add_argument("--only", help="comma-separated paths (default: all available)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else [n for n in PATHS if _available(n)]
    unknown = [n for n in names if n not in PATHS]
    if unknown:
        parser.error(f"unknown path(s): {', '.join(unknown)} (known: {', '.join(PATHS)})")
    result = measure(names, args.calls, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{args.calls} distinct calls per path, concurrency {CONCURRENCY}, server latency "
        f"{LATENCY_S * 1000:.0f} ms, {args.repeat} round(s), medians"
    )
    for name, figures in result["paths"].items():
        ratio = figures.get("cpu_vs_openai_sdk")
        ratio_text = f"{ratio:5.2f}× the SDK's CPU" if ratio is not None else ""
        print(
            f"{name:11s}: {figures['cpu_us_per_call']:6d} µs CPU/call  "
            f"{figures['calls_per_s']:6.1f} calls/s  {ratio_text}"
        )
    print(f"load average after the run: {result['load_avg']}")


if __name__ == "__main__":
    main()
