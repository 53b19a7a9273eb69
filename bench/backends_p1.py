"""P1: judge calls/s through `OpenAIHTTPBackend.complete` against the loopback stand-in.

The stand-in runs in a child process and answers every request after 100 ms. In the same run,
2,000 chat calls at concurrency 256 go through (a) the simplest aiohttp client loop, (b)
``OpenAIHTTPBackend.complete`` and, with ``--httpx``, (c) the simplest httpx client loop; each
figure is reported as a fraction of the ceiling 256 / 0.1 s and as a fraction of (a). The client's CPU time per
call and the stand-in's CPU use are shown too. Timings vary from run to run: read them as ratios.

Usage: python bench/backends_p1.py [--calls 2000] [--concurrency 256] [--latency 0.1] [--rounds 3]
       [--httpx]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import urllib.request

from nepotism.backends.base import Request
from nepotism.backends.openai_http import OpenAIHTTPBackend
from nepotism.records import Message
from nepotism.testing.standin import StandinConfig, standin_process


def _bodies(n: int) -> list[dict]:
    return [
        {
            "model": "judge",
            "messages": [{"role": "user", "content": f"Compare answers for item {i}."}],
            "max_tokens": 64,
            "temperature": 0.0,
        }
        for i in range(n)
    ]


async def _drive(concurrency: int, n: int, call) -> tuple[float, int, float]:
    """Run ``call(i)`` for i < n with ``concurrency`` workers; returns (seconds, ok, cpu_s)."""
    counter = iter(range(n))
    ok = 0

    async def worker() -> None:
        nonlocal ok
        for i in counter:
            if await call(i):
                ok += 1

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0, ok, time.process_time() - cpu0


async def _bare_aiohttp(url: str, concurrency: int, n: int) -> tuple[float, int, float]:
    import aiohttp

    bodies = [json.dumps(b).encode() for b in _bodies(n)]
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def call(i: int) -> bool:
            async with session.post(
                f"{url}/chat/completions", data=bodies[i], headers={"Content-Type": "application/json"}
            ) as resp:
                data = await resp.json()
                return resp.status == 200 and bool(data["choices"][0]["message"]["content"])

        return await _drive(concurrency, n, call)


async def _bare_httpx(url: str, concurrency: int, n: int) -> tuple[float, int, float]:
    import httpx

    bodies = _bodies(n)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(30, pool=None), trust_env=False) as client:

        async def call(i: int) -> bool:
            resp = await client.post(f"{url}/chat/completions", json=bodies[i])
            return resp.status_code == 200 and bool(resp.json()["choices"][0]["message"]["content"])

        return await _drive(concurrency, n, call)


async def _backend(url: str, concurrency: int, n: int) -> tuple[float, int, float]:
    backend = OpenAIHTTPBackend(url, max_connections=concurrency, timeout=30)
    requests = [Request("judge", messages=(Message("user", f"Compare answers for item {i}."),), max_tokens=64) for i in range(n)]
    try:

        async def call(i: int) -> bool:
            completion = await backend.complete(requests[i])
            return completion.ok and bool(completion.text)

        return await _drive(concurrency, n, call)
    finally:
        await backend.aclose()


def _server_cpu(url: str) -> float:
    with urllib.request.urlopen(url.replace("/v1", "/standin/stats"), timeout=5) as resp:
        return float(json.loads(resp.read())["cpu_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--httpx", action="store_true", help="also time a bare httpx.AsyncClient loop (slow: ~1-2 minutes)")
    args = parser.parse_args()
    ceiling = args.concurrency / args.latency
    clients = {"bare aiohttp": _bare_aiohttp, "OpenAIHTTPBackend": _backend}
    if args.httpx:
        clients["bare httpx"] = _bare_httpx
    results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in clients}
    with standin_process(StandinConfig(latency_s=args.latency)) as url:
        for _ in range(args.rounds):
            for label, run in clients.items():
                cpu_before = _server_cpu(url)
                secs, ok, cpu = asyncio.run(run(url, args.concurrency, args.calls))
                server_cpu = _server_cpu(url) - cpu_before
                if ok != args.calls:
                    raise SystemExit(f"{label}: only {ok}/{args.calls} calls succeeded")
                results[label].append((args.calls / secs, cpu / args.calls * 1e3, server_cpu / secs))
    print(
        f"N={args.calls} calls, concurrency {args.concurrency}, stand-in latency "
        f"{args.latency * 1e3:.0f} ms, ceiling {ceiling:.0f}/s, rounds={args.rounds} (medians)"
    )
    print(f"{'client':<20}{'calls/s':>9}{'of ceiling':>12}{'of aiohttp':>12}{'client ms CPU/call':>20}{'stand-in cores':>16}")
    med = {k: sorted(v)[len(v) // 2] for k, v in results.items()}
    base = med["bare aiohttp"][0]
    for label, (rate, cpu_ms, server_cores) in med.items():
        print(f"{label:<20}{rate:>9.0f}{rate / ceiling:>12.2f}{rate / base:>12.2f}{cpu_ms:>20.3f}{server_cores:>16.2f}")


if __name__ == "__main__":
    main()
