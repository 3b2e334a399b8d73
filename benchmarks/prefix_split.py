"""Does an embedded answer depend on how its prompt was split between the prefix cache and fresh
evaluation? The same requests, in the same order, answered with `llm.prefix_cache` on and off, with
flash attention on and off: how many answers differ, and how many prompt tokens the cache re-used.
(docs/reproducibility.md cites it.)

    python benchmarks/prefix_split.py [--requests 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import asyncio

from socsim.llm.constraints import Choice, IntRange
from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Completion, Request, Sampling
from socsim.seeds import derive_seed

ROLES = ("teacher", "farmer", "nurse", "student")


def workload(n: int) -> list[Request]:
    """Five personas, 0-3 earlier turns, greedy and sampled, free and constrained answers."""
    out = []
    for i in range(n):
        history = [("user", f"Topic {i % 3}: should cities ban cars downtown? Reply briefly.")]
        for t in range(i % 4):
            said = f"I think point {t} matters because of {i * t} reasons."
            history += [("assistant", said), ("user", f"Turn {t}: respond.")]
        constraint = Choice(("agree", "disagree", "neutral")) if i % 5 == 3 else IntRange(1, 7) if i % 7 == 4 else None
        persona = f"You are persona {i % 5}, a {ROLES[i % 4]} who thinks about politics and writes short posts."
        sampling = Sampling(temperature=(0.7, 0.0, 1.0)[i % 3], top_p=0.95, max_tokens=(48, 5, 90)[i % 3])
        out.append(Request.chat([("system", persona), *history], derive_seed(9, i), sampling, constraint))
    return out


async def answers(reqs: list[Request], prefix_cache: bool, flash_attn: bool, threads: int) -> list[Completion]:
    backend = EmbeddedBackend(n_threads=threads, prefix_cache=prefix_cache, flash_attn=flash_attn)
    try:
        return [await backend.complete(r) for r in reqs]
    finally:
        await backend.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    reqs = workload(a.requests)
    for fa in (True, False):
        on = asyncio.run(answers(reqs, True, fa, a.threads))
        off = asyncio.run(answers(reqs, False, fa, a.threads))
        differ = sum(x.text != y.text for x, y in zip(on, off, strict=True))
        reused = sum(c.prompt_tokens - c.prompt_tokens_evaluated for c in on) / sum(c.prompt_tokens for c in on)
        print(
            f"flash attention {'on ' if fa else 'off'}: {differ} of {len(reqs)} answers differ with the prefix cache "
            f"(it re-used {reused:.0%} of the prompt tokens)"
        )


if __name__ == "__main__":
    main()
