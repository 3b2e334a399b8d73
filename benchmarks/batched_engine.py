"""The embedded backend with batched decoding (`llm.parallel`, socsim.llm.batched) beside one request
at a time, side by side in one run: wall time and how many answers are the text a request gets alone.

Two workloads: short prompts with long answers (decoding dominates) and long prompts sharing an
instruction with short answers (prompt evaluation dominates). The sides: one at a time with flash
attention (the default), one at a time without it, and batched (without it, as batching needs) at
each --parallel. "same" compares with each request answered on an empty KV cache without flash
attention: the text batching must reproduce.

    python benchmarks/batched_engine.py [--requests 16] [--parallel 4 8] [--threads 2] [--gguf PATH]
    python benchmarks/batched_engine.py --requests 2 --parallel 2 --kinds decode --max-tokens 8 --threads 1  # tiny
"""

from __future__ import annotations

import argparse
import asyncio
import time

from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Completion, Request, Sampling
from socsim.seeds import derive_seed

FILLER = "The council weighed buses, bicycle lanes, parking fees and the shops on the main street. "


def workload(kind: str, n: int, cap: int | None = None) -> list[Request]:
    if kind == "decode":  # ~40 prompt tokens, up to 160 answer tokens
        system, ask, max_tokens = "You are persona {i}, a thoughtful citizen.", "Write a long essay, number {i}.", 160
    else:  # ~700 prompt tokens (600 shared), up to 16 answer tokens
        system, ask, max_tokens = "You are a council clerk. " + FILLER * 40, "Comment {i}: what should we do?", 16
    return [
        Request.chat(
            [("system", system.format(i=i)), ("user", ask.format(i=i))],
            derive_seed(3, i),
            Sampling(temperature=0.7, max_tokens=max_tokens if cap is None else cap),
        )
        for i in range(n)
    ]


async def timed(reqs: list[Request], gguf: str | None, threads: int, **backend) -> tuple[float, list[Completion]]:
    b = EmbeddedBackend(gguf, n_threads=threads, **backend)
    await b.probe()  # the model loaded before the clock starts
    try:
        t0 = time.perf_counter()
        if backend.get("parallel", 1) == 1:
            out = [await b.complete(r) for r in reqs]
        else:
            out = list(await asyncio.gather(*(b.complete(r) for r in reqs)))
        return time.perf_counter() - t0, out
    finally:
        await b.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--parallel", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kinds", nargs="+", default=["decode", "prompt"], choices=["decode", "prompt"])
    ap.add_argument("--max-tokens", type=int, default=None, help="answer tokens (default: 160 decode, 16 prompt)")
    ap.add_argument("--gguf", default=None, help="a GGUF file (default: the shipped SmolLM2-135M)")
    a = ap.parse_args()
    for kind in a.kinds:
        reqs = workload(kind, a.requests, a.max_tokens)
        _, ref = asyncio.run(timed(reqs, a.gguf, a.threads, flash_attn=False, prefix_cache=False))
        sides = {"one at a time, flash attention (default)": {"flash_attn": True, "prefix_cache": True}}
        sides["one at a time, no flash attention"] = {"flash_attn": False, "prefix_cache": True}
        for p in a.parallel:
            sides[f"parallel {p}, no flash attention"] = {"flash_attn": False, "prefix_cache": True, "parallel": p}
        print(f"{kind}-heavy, {len(reqs)} requests:")
        base = None
        for name, opts in sides.items():
            s, out = asyncio.run(timed(reqs, a.gguf, a.threads, **opts))
            base = base or s
            same = sum(x.text == y.text for x, y in zip(ref, out, strict=True))
            tokens = sum(c.completion_tokens for c in out)
            rate = f"{tokens / s:.0f} completion tokens/s"
            print(f"  {name}: {s:.1f} s ({base / s:.2f}x the default, {rate}); same {same}/{len(reqs)}")


if __name__ == "__main__":
    main()
