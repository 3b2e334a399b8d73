"""Batched decoding on this machine: tokens/s decoding 1, 2, 4 and 8 sequences in one batch, side by
side in one run, and whether a sequence decodes to the same greedy tokens and logits as alone
(socsim.limits.batched_decode; the embedded model unless --gguf).

    python benchmarks/batched_decode.py [--gguf PATH] [--steps 48] [--threads 2] [--sequences 2 4 8]
    python benchmarks/batched_decode.py --steps 4 --sequences 2 --threads 1   # a tiny run (a smoke test)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from socsim.limits import batched_decode
from socsim.llm.embedded import default_model_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, default=None)
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sequences", type=int, nargs="+", default=[2, 4, 8], help="batch sizes beside one sequence")
    a = ap.parse_args()
    rows = batched_decode(
        a.gguf or default_model_path(), sequences=tuple(a.sequences), steps=a.steps, threads=a.threads
    )
    print(f"1 sequence: {rows[0].rate_alone:.0f} tokens/s")
    for r in rows:
        print(
            f"{r.sequences} sequences: {r.rate:.0f} tokens/s ({r.rate / r.rate_alone:.2f}x); the first sequence's "
            f"tokens {'identical' if r.same_tokens else 'DIFFERENT'} to alone, max |logit diff| {r.max_logit_diff:.3g}"
        )


if __name__ == "__main__":
    main()
