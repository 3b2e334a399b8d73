"""Throughput of a server the run starts (socsim.serving) under a facilitation-shaped load.

Starts one served registry model the way a run does (a lease on its server: started, checked to serve
its model id, stopped after the last lease), then runs the same facilitation discussions (7 users and a
facilitator by default, personas and topics from data/facilitation, no call cache) twice through
socsim's own client: one request at a time, and all discussions in flight at once (each discussion's
turns stay in order, as in the study). Prints, side by side from one run: generated and prompt tokens/s
of each, the server's prefix-cache hit rate where its engine reports one (vLLM, SGLang: /metrics), and
the speed-up of the concurrent load over one request at a time.

    python benchmarks/serving_throughput.py                       # llama-cpp-python's server, shipped GGUF
    python benchmarks/serving_throughput.py --engine vllm --model Qwen/Qwen2.5-7B-Instruct --gpus 1 \\
        --discussions 64 --users 7 --turns 14 --max-tokens 256    # a GPU node, paper-shaped

llama-cpp-python's server answers one request at a time (no continuous batching), so on this machine
the speed-up stays near 1x by construction; a batching engine (vLLM, SGLang, TGI) is what turns
discussions in flight into throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from socsim import config, models, serving
from socsim.config import read_yaml
from socsim.facilitation import materials, setups, simulate

DATA = Path(__file__).resolve().parents[1] / "data" / "facilitation"
PREFIX_METRICS = {  # engine -> (hits counter, queries counter) in its Prometheus /metrics
    "vllm": ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries"),
    "sglang": ("sglang:cached_tokens", "sglang:prompt_tokens"),
}


def discussion_setups(n: int, users: int, turns: int, seed: int = 7) -> list[dict[str, Any]]:
    fp = config.validate(
        {
            "facilitation": {
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


def prefix_counters(url: str, engine: str) -> tuple[float, float] | None:
    """(hit tokens, queried tokens) so far, from the engine's /metrics; None where it reports none."""
    if engine not in PREFIX_METRICS:
        return None
    key = os.environ.get(serving.KEY_ENV)
    req = urllib.request.Request(url + "/metrics", headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    sums = []
    for name in PREFIX_METRICS[engine]:
        pattern = re.compile(rf"^{re.escape(name)}(?:_total)?(?:{{[^}}]*}})? ([0-9.eE+-]+)$", re.M)
        values = [float(v) for v in pattern.findall(text)]
        if not values:
            return None
        sums.append(sum(values))
    return sums[0], sums[1]


def run(params: dict, spec: models.ModelSpec, rows: list[dict], concurrency: int, max_tokens: int) -> dict:
    """The discussions through socsim's client: `concurrency` requests in flight (1: one at a time)."""
    p = {**params, "llm": {**params["llm"], "concurrency": concurrency}}
    client = models.client(p, spec, cache_path="")
    engine = (spec.serve or {}).get("engine", "")
    before = prefix_counters(spec.urls()[0], engine)

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
    after = prefix_counters(spec.urls()[0], engine)
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
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--discussions", type=int, default=4)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--n-ctx", type=int, default=4096, help="the context it is served with (vLLM --max-model-len)")
    args = ap.parse_args()
    os.environ.setdefault("SOCSIM_SERVE_LAUNCHER", "local")
    serve = {"engine": args.engine, "model": args.model, "gpus": args.gpus, "linger": 0}
    entry = {"backend": "openai", "model_id": args.model_id, "n_ctx": args.n_ctx, "serve": serve}
    if args.engine == "llama_cpp":
        entry["dialect"] = "llama_cpp"
    rows = discussion_setups(args.discussions, args.users, args.turns)
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # the server's state folder (.socsim/serve) lives here, not in the project
        params = config.validate({"models": {"bench": entry}})
        spec = models.resolve(params, "bench")
        t0 = time.perf_counter()
        lease = serving.acquire(spec)
        ready = time.perf_counter() - t0
        try:
            from dataclasses import replace

            spec = replace(spec, endpoints=(lease.url,), api_key_env=lease.api_key_env)
            print(
                f"{args.engine} {lease.record.get('version')} serving {args.model_id} at {lease.url} "
                f"(ready in {ready:.1f} s); {len(rows)} discussions x {args.users} users x {args.turns} turns, "
                f"max_tokens {args.max_tokens}"
            )
            one = run(params, spec, rows, 1, args.max_tokens)
            many = run(params, spec, rows, max(len(rows), 2), args.max_tokens)
        finally:
            lease.release()
            state = Path(tmp) / serving.STATE / "bench" / "server.json"
            deadline = time.monotonic() + 60  # it stops (linger 0) before its folder goes
            while time.monotonic() < deadline and '"stopped"' not in state.read_text():
                time.sleep(0.2)
    for label, r in (("one request at a time", one), (f"{len(rows)} discussions in flight", many)):
        hit = f"{r['hit']:.1%}" if r["hit"] is not None else f"not reported by {args.engine}"
        print(
            f"{label:>28}: {r['gen']:8.1f} generated tokens/s, {r['prompt']:9.1f} prompt tokens/s, "
            f"{r['calls']} calls in {r['wall']:.1f} s; prefix-cache hit rate {hit}"
        )
    print(
        f"speed-up of the concurrent load: {many['gen'] / one['gen']:.2f}x generated tokens/s (same server, same run)"
    )


if __name__ == "__main__":
    main()
