"""Overhead of socsim's LLM layer over raw llama.cpp, measured side by side in one run.

Prints the raw llama-cpp-python decoding rate (tokens/s), the rate through socsim's
LLMClient (cache lookup/store, seeds, validation, asyncio, accounting) on the same
requests and the same loaded model driven from the same thread, their ratio (target >= 0.95), and the model calls
a cached re-run makes (target 0). Rounds alternate raw/socsim to spread machine noise.

    python benchmarks/llm_overhead.py [--requests 8] [--max-tokens 64] [--rounds 3] [--threads N]
    python benchmarks/llm_overhead.py --requests 2 --max-tokens 8 --rounds 1 --threads 1   # a tiny run
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from socsim import config, models
from socsim.llm import LLMClient, Request, Sampling, derive_seed

PROMPTS = [
    "Write a short comment about public transport in big cities.",
    "Give your opinion on remote work in two sentences.",
    "Reply to someone who says social media is harmful.",
    "Describe your ideal weekend briefly.",
    "What do you think about electric cars?",
    "Respond politely to a rude forum post.",
    "Explain why voting matters, briefly.",
    "Share a thought about online privacy.",
]


def make_requests(n: int, max_tokens: int, round_no: int) -> list[Request]:
    return [
        Request.chat(
            [
                {"role": "system", "content": "You are a forum user. Be brief."},
                {"role": "user", "content": PROMPTS[i % len(PROMPTS)]},
            ],
            derive_seed(42, "bench", round_no, i),
            Sampling(0.7, 0.95, max_tokens),
        )
        for i in range(n)
    ]


def raw_rate(llm, requests: list[Request]) -> float:
    tokens, start = 0, time.perf_counter()
    for r in requests:
        out = llm.create_chat_completion(
            messages=r.message_dicts(),
            temperature=r.sampling.temperature,
            top_p=r.sampling.top_p,
            max_tokens=r.sampling.max_tokens,
            seed=r.seed,
        )
        tokens += out["usage"]["completion_tokens"]
    return tokens / (time.perf_counter() - start)


def socsim_rate(client: LLMClient, requests: list[Request]) -> tuple[float, int]:
    async def go():
        start = time.perf_counter()
        out = await client.generate_all(requests, desc="socsim")
        return sum(r.completion_tokens for r in out) / (time.perf_counter() - start)

    calls_before = client.accounting.calls
    rate = asyncio.run(go())
    return rate, client.accounting.calls - calls_before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (llm.n_threads; default: all cores)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        params = config.validate({"llm": {"cache_path": str(Path(tmp) / "cache.sqlite"), "n_threads": args.threads}})
        client = models.named_client(params)
        asyncio.run(client.probe())  # loads the model once; the raw loop uses the same instance
        llm = client.backend.llm
        raw, ours = [], []
        for rnd in range(args.rounds):
            requests = make_requests(args.requests, args.max_tokens, rnd)
            # Same model, same OS thread as socsim's calls (llama.cpp's OpenMP team is per thread).
            raw.append(client.backend.on_model_thread(raw_rate, llm, requests))
            rate, calls = socsim_rate(client, requests)  # fresh seeds per round: real model calls
            assert calls == len(requests)
            ours.append(rate)
            print(f"round {rnd + 1}: raw {raw[-1]:.1f} tok/s, socsim {ours[-1]:.1f} tok/s", flush=True)
        # Cached re-run of every round's requests: must make no model call.
        cached_calls = sum(
            socsim_rate(client, make_requests(args.requests, args.max_tokens, rnd))[1] for rnd in range(args.rounds)
        )

    raw_med, ours_med = statistics.median(raw), statistics.median(ours)
    print(f"raw llama.cpp decoding rate : {raw_med:.1f} tokens/s (median of {args.rounds} rounds)")
    print(f"through socsim's LLM layer  : {ours_med:.1f} tokens/s")
    print(f"ratio socsim / raw          : {ours_med / raw_med:.3f} (target >= 0.95)")
    print(f"model calls on cached re-run: {cached_calls} (target 0)")


if __name__ == "__main__":
    main()
