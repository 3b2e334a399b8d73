"""The embedded backend with batched decoding (llm.parallel) against one request at a time, side by
side in one run: wall time, completion tokens/s and how many answers are the same text. Two
workloads: short prompts with long answers (decoding dominates) and long prompts with short answers
(prompt evaluation dominates). Both sides run without the prefix cache, as `parallel` > 1 must.

    python benchmarks/batched_engine.py [--requests 16] [--parallel 2 4 8] [--threads 2]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Request, Sampling
from socsim.seeds import derive_seed

FILLER = "The council weighed buses, bicycle lanes, parking fees and the shops on the main street. "


def workload(kind: str, n: int) -> list[Request]:
    if kind == "decode":  # ~40 prompt tokens, up to 160 answer tokens
        ask, max_tokens = "Write a long essay, number {i}, about public transport in cities.", 160
    else:  # ~700 prompt tokens, up to 16 answer tokens
        ask, max_tokens = FILLER * 40 + "In one sentence, comment number {i}: what should the council do?", 16
    return [
        Request.chat(
            [("system", f"You are persona {i}, a thoughtful citizen."), ("user", ask.format(i=i))],
            derive_seed(3, i),
            Sampling(temperature=0.7, max_tokens=max_tokens),
        )
        for i in range(n)
    ]


async def timed(parallel: int, reqs: list[Request], threads: int) -> tuple[float, list]:
    backend = EmbeddedBackend(n_threads=threads, prefix_cache=False, parallel=parallel)
    await backend.probe()  # the model loaded before the clock starts
    try:
        t0 = time.perf_counter()
        if parallel == 1:
            out = [await backend.complete(r) for r in reqs]
        else:
            out = list(await asyncio.gather(*(backend.complete(r) for r in reqs)))
        return time.perf_counter() - t0, out
    finally:
        await backend.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--parallel", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    for kind in ("decode", "prompt"):
        reqs = workload(kind, a.requests)
        base_s, base = asyncio.run(timed(1, reqs, a.threads))
        tokens = sum(c.completion_tokens for c in base)
        print(f"{kind}-heavy, {a.requests} requests, one at a time: {base_s:.1f} s ({tokens / base_s:.0f} completion tokens/s)")
        for p in a.parallel:
            s, out = asyncio.run(timed(p, reqs, a.threads))
            same = sum(x.text == y.text for x, y in zip(base, out, strict=True))
            print(f"  parallel {p}: {s:.1f} s, {base_s / s:.2f}x; same text {same}/{len(reqs)}")


if __name__ == "__main__":
    main()
