"""Does an embedded answer depend on how its prompt was split between the prefix cache and fresh
evaluation? The same requests, in the same order, answered with `llm.prefix_cache` on and off, with
flash attention on and off: how many answers differ, and how many prompt tokens the cache re-used.
Then the mechanism: the largest difference in the last prompt token's logits when a 124-token prompt
is read whole or as a prefix and a last piece of k tokens. (docs/reproducibility.md and
socsim.llm.batched cite it.)

    python benchmarks/prefix_split.py [--requests 40] [--threads 2] [--gguf PATH] [--pieces 1 2 3 8 32 64]
    python benchmarks/prefix_split.py --requests 2 --max-tokens 8 --pieces 1 2 --threads 1   # a tiny run
"""

from __future__ import annotations

import argparse
import asyncio

from socsim.llm.constraints import Choice, IntRange
from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Completion, Request, Sampling
from socsim.seeds import derive_seed

ROLES = ("teacher", "farmer", "nurse", "student")


def workload(n: int, cap: int | None = None) -> list[Request]:
    """Five personas, 0-3 earlier turns, greedy and sampled, free and constrained answers (at most `cap`
    new tokens each where given)."""
    out = []
    for i in range(n):
        history = [("user", f"Topic {i % 3}: should cities ban cars downtown? Reply briefly.")]
        for t in range(i % 4):
            said = f"I think point {t} matters because of {i * t} reasons."
            history += [("assistant", said), ("user", f"Turn {t}: respond.")]
        constraint = Choice(("agree", "disagree", "neutral")) if i % 5 == 3 else IntRange(1, 7) if i % 7 == 4 else None
        persona = f"You are persona {i % 5}, a {ROLES[i % 4]} who thinks about politics and writes short posts."
        max_tokens = (48, 5, 90)[i % 3] if cap is None else min(cap, (48, 5, 90)[i % 3])
        sampling = Sampling(temperature=(0.7, 0.0, 1.0)[i % 3], top_p=0.95, max_tokens=max_tokens)
        out.append(Request.chat([("system", persona), *history], derive_seed(9, i), sampling, constraint))
    return out


async def answers(
    reqs: list[Request], prefix_cache: bool, flash_attn: bool, threads: int, gguf: str | None
) -> list[Completion]:
    backend = EmbeddedBackend(gguf, n_threads=threads, prefix_cache=prefix_cache, flash_attn=flash_attn)
    try:
        return [await backend.complete(r) for r in reqs]
    finally:
        await backend.aclose()


def piece_differences(
    gguf: str | None, flash_attn: bool, threads: int, pieces: tuple[int, ...] = (1, 2, 3, 8, 32, 64)
) -> dict[int, float]:
    """Max |logit difference| of the last prompt token, read whole against prefix + last k tokens."""
    import ctypes

    import llama_cpp as lc
    import numpy as np
    from llama_cpp import Llama

    from socsim.llm.embedded import default_model_path

    path = gguf or str(default_model_path())
    llm = Llama(
        model_path=path, n_ctx=1024, n_threads=threads, n_threads_batch=threads, verbose=False, flash_attn=flash_attn
    )
    text = (
        "<|im_start|>system\nYou are persona 3, a nurse who thinks about politics.<|im_end|>\n<|im_start|>user\n"
        + "Discussion: should cities ban cars downtown? " * 12
        + "<|im_end|>\n<|im_start|>assistant\n"
    )
    tokens = llm.tokenize(text.encode(), add_bos=False, special=True)

    def last_logits(k: int) -> np.ndarray:
        llm.reset()
        lc.llama_memory_clear(lc.llama_get_memory(llm.ctx), True)
        for piece in [tokens[:-k], tokens[-k:]] if k else [tokens]:
            llm.eval(piece)
        row = lc.llama_get_logits_ith(llm.ctx, -1)
        return np.ctypeslib.as_array(ctypes.cast(row, ctypes.POINTER(ctypes.c_float)), shape=(llm.n_vocab(),)).copy()

    whole = last_logits(0)
    out = {k: float(np.max(np.abs(last_logits(k) - whole))) for k in pieces}
    llm.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gguf", default=None, help="a GGUF file (default: the shipped SmolLM2-135M)")
    ap.add_argument("--max-tokens", type=int, default=None, help="cap every answer's new tokens (default: 48/5/90)")
    ap.add_argument(
        "--pieces", type=int, nargs="+", default=[1, 2, 3, 8, 32, 64], help="last-piece sizes k (below 124 tokens)"
    )
    a = ap.parse_args()
    reqs = workload(a.requests, a.max_tokens)
    for fa in (True, False):
        on = asyncio.run(answers(reqs, True, fa, a.threads, a.gguf))
        off = asyncio.run(answers(reqs, False, fa, a.threads, a.gguf))
        differ = sum(x.text != y.text for x, y in zip(on, off, strict=True))
        reused = sum(c.prompt_tokens - c.prompt_tokens_evaluated for c in on) / sum(c.prompt_tokens for c in on)
        print(
            f"flash attention {'on ' if fa else 'off'}: {differ} of {len(reqs)} answers differ with the prefix cache "
            f"(it re-used {reused:.0%} of the prompt tokens)"
        )
        diffs = piece_differences(a.gguf, fa, a.threads, tuple(a.pieces))
        print(
            "  max |logit diff|, last piece of k tokens against the whole prompt: "
            + ", ".join(f"k={k}: {d:.3g}" for k, d in diffs.items())
        )


if __name__ == "__main__":
    main()
