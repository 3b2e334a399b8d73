"""Throughput of socsim's endpoint pool: the same requests through one server and through two.

Starts two loopback llama-cpp-python servers on the embedded model, each pinned to its own core
(taskset) with one thread, and sends the same requests (no call cache) through a pool of one
(the first server) and a pool of two, in alternating rounds so that machine noise spreads over both.
Prints the completion-token throughput of each, their ratio (target >= 1.6x on two cores) and how the
pool spread the calls.

    python benchmarks/endpoint_pool.py [--requests 24] [--max-tokens 48] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from socsim.llm import LLMClient, Request, Sampling, derive_seed
from socsim.llm.local import SERVED_MODEL_ID, LlamaServer
from socsim.llm.server import ServerBackend

TOPICS = [
    "public transport",
    "remote work",
    "social media",
    "electric cars",
    "online privacy",
    "voting",
    "city parks",
    "school uniforms",
]


def make_requests(n: int, max_tokens: int, round_no: int) -> list[Request]:
    # Fixed length answers (ignore_eos is not in the OpenAI API; a long max_tokens with a chatty prompt
    # keeps most answers at the cap), distinct seeds per round so no server-side cache can help.
    return [
        Request.chat(
            [{"role": "user", "content": f"Write a long, detailed essay about {TOPICS[i % len(TOPICS)]}."}],
            derive_seed(7, "pool-bench", round_no, i),
            Sampling(0.8, 0.95, max_tokens),
        )
        for i in range(n)
    ]


def throughput(urls: list[str], requests: list[Request], concurrency: int) -> tuple[float, dict]:
    backend = ServerBackend(
        "openai", urls, dialect="llama_cpp", model=SERVED_MODEL_ID, concurrency=concurrency, timeout=600
    )
    client = LLMClient(backend, cache=None)

    async def go():
        async with client:
            start = time.perf_counter()
            out = await client.generate_all(requests, desc=f"{len(urls)} server(s)")
            return sum(r.completion_tokens for r in out) / (time.perf_counter() - start)

    rate = asyncio.run(go())
    return rate, {u: s["calls"] for u, s in backend.endpoint_stats().items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2, help="requests in flight per endpoint")
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("endpoint_pool: needs two cores (one per server)")
    servers = [LlamaServer(n_threads=1, cpu=cores[0]), LlamaServer(n_threads=1, cpu=cores[1])]
    try:
        for s in servers:
            s.start()
        one, two, spread = [], [], {}
        for rnd in range(args.rounds):
            reqs = make_requests(args.requests, args.max_tokens, rnd)
            order = [(one, [servers[0].url]), (two, [s.url for s in servers])]
            for results, urls in order if rnd % 2 == 0 else order[::-1]:
                rate, calls = throughput(urls, reqs, args.concurrency)
                results.append(rate)
                if len(urls) == 2:
                    spread = calls
                print(f"round {rnd + 1}: {len(urls)} server(s): {rate:7.1f} completion tokens/s  calls {calls}")
    finally:
        for s in servers:
            s.stop()
    r1, r2 = statistics.median(one), statistics.median(two)
    print(f"\none server (1 core):   {r1:7.1f} tokens/s (median of {len(one)})")
    print(f"two servers (1 core each): {r2:7.1f} tokens/s (median of {len(two)}); calls per endpoint {spread}")
    print(f"pool throughput ratio: {r2 / r1:.2f}x (target >= 1.6x)")


if __name__ == "__main__":
    main()
