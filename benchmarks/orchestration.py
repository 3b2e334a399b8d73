"""socsim's client against a bare async HTTP client, on a server that answers at once (docs/benchmarks.md).

Starts a zero-latency OpenAI-compatible stand-in in a process of its own (no model behind it: each answer is
computed once per constraint and then served from memory), and drives it, in one run and alternating round by
round, with
- a bare aiohttp client (one session, a connection per request in flight, the same request bodies socsim sends),
- a bare httpx2 client (huggingface-hub's HTTP client, which socsim used before: the choice by measurement),
- socsim's own client (`models.client` on an `openai` registry entry: call cache on, half the requests constrained
  (a Choice and an IntRange, as the judges and surveys ask), half free text, its progress bar and accounting),
each driver a fresh process of its own (its CPU time and peak RSS are its own), at each level of requests in
flight. Then one real stage shard end to end on the stand-in (coherence `elicit`: every agent's survey answers,
`socsim coherence elicit` as the workflow runs it), beside the bare client on the same number of calls. Then the
planted control's server (socsim.planted.server) under the bare client, free text and constrained.

It prints calls/s, the ratio to the bare aiohttp client, the driver's CPU ms per call and its peak RSS.

    python benchmarks/orchestration.py                                   # 20,000 calls at 1, 64, 256 in flight
    python benchmarks/orchestration.py --calls 300 --in-flight 1,8 --rounds 1 --agents 2   # a tiny run
    python benchmarks/orchestration.py --profile socsim --in-flight 64   # cProfile of socsim's driver (stderr)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL_ID = "bench/instant"
FREE_TEXT = "I see both sides of this, and I would rather listen first."


# -- the stand-in ------------------------------------------------------------------------------------------------
def _fill(schema: dict[str, Any]) -> Any:
    """A value of a (strict) JSON schema: its first enum value, the minimum of an integer, a short string."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        return {k: _fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "array":
        return [_fill(schema.get("items") or {"type": "string"}) for _ in range(int(schema.get("minItems", 1)))]
    return "x" * int(schema.get("minLength", 1))


def serve(port: int) -> None:
    """The zero-latency stand-in: GET /v1/models, /health; POST /v1/chat/completions answered from memory."""
    from aiohttp import web

    answers: dict[str, bytes] = {}

    def answer(fmt: dict[str, Any] | None) -> bytes:
        key = json.dumps(fmt, sort_keys=True) if fmt else ""
        if key not in answers:
            schema = ((fmt or {}).get("json_schema") or {}).get("schema")
            text = FREE_TEXT if schema is None else json.dumps(_fill(schema), separators=(",", ":"))
            answers[key] = json.dumps(
                {
                    "id": "instant",
                    "object": "chat.completion",
                    "model": MODEL_ID,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
                }
            ).encode()
        return answers[key]

    async def chat(request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        return web.Response(body=answer(body.get("response_format")), content_type="application/json")

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "bench"}]})

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/v1/models", models), web.get("/health", health)])
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(argv: list[str], url: str) -> subprocess.Popen[bytes]:
    """A server process, returned once it answers /health."""
    import urllib.request

    proc = subprocess.Popen(argv, cwd=ROOT)
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return proc
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"the server exited ({proc.returncode}): {' '.join(argv)}")
            time.sleep(0.1)
    proc.kill()
    sys.exit(f"the server did not answer in 30 s: {' '.join(argv)}")


# -- the requests ------------------------------------------------------------------------------------------------
def requests(n: int, mix: str) -> list[Any]:
    """n requests as a stage makes them: distinct seeds and prompts; `mix` "mixed" (half constrained: a Choice and an
    IntRange in turn, half free text), "free" or "constrained"."""
    from socsim.llm import Choice, IntRange, Request, Sampling, derive_seed

    constraints = [Choice(("Yes", "No")), IntRange(1, 5)]
    out = []
    for i in range(n):
        constrained = mix == "constrained" or (mix == "mixed" and i % 2 == 0)
        out.append(
            Request.chat(
                [
                    {"role": "system", "content": f"You are agent {i % 97}, a forum user. Answer briefly."},
                    {"role": "user", "content": f"Question {i}: do you agree that public transport should be free?"},
                ],
                derive_seed(42, "orchestration", i),
                Sampling(0.7, 0.95, 8 if constrained else 64),
                constraints[(i // 2) % 2] if constrained else None,
            )
        )
    return out


def bodies(reqs: list[Any]) -> list[dict[str, Any]]:
    """The request bodies socsim sends for them (socsim.llm.server.request_body), for the bare clients."""
    from socsim.llm.server import request_body

    return [request_body(r, "openai", MODEL_ID) for r in reqs]


# -- the drivers (each in a process of its own) -------------------------------------------------------------------
async def drive_aiohttp(url: str, payloads: list[dict[str, Any]], in_flight: int) -> int:
    import aiohttp

    done = 0
    connector = aiohttp.TCPConnector(limit=in_flight)
    async with aiohttp.ClientSession(connector=connector, headers={"Authorization": "Bearer EMPTY"}) as session:
        it = iter(payloads)

        async def worker() -> None:
            nonlocal done
            for body in it:
                async with session.post(url + "/v1/chat/completions", json=body) as resp:
                    out = await resp.json()
                done += bool(out["choices"][0]["message"]["content"])

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return done


async def drive_httpx2(url: str, payloads: list[dict[str, Any]], in_flight: int) -> int:
    import httpx2

    done = 0
    limits = httpx2.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    async with httpx2.AsyncClient(limits=limits, headers={"Authorization": "Bearer EMPTY"}) as client:
        it = iter(payloads)

        async def worker() -> None:
            nonlocal done
            for body in it:
                resp = await client.post(url + "/v1/chat/completions", json=body)
                done += bool(resp.json()["choices"][0]["message"]["content"])

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return done


def socsim_params(url: str, in_flight: int, cache: str) -> dict[str, Any]:
    from socsim import config

    return config.validate(
        {
            "models": {
                "instant": {"backend": "openai", "model_id": MODEL_ID, "endpoints": [url], "concurrency": in_flight}
            },
            "llm": {"cache_path": cache},
        }
    )


async def drive_socsim(params: dict[str, Any], reqs: list[Any], cache: str) -> int:
    from socsim import models

    client = models.client(params, models.resolve(params, "instant"), cache)
    try:
        async with client:
            out = await client.generate_all(reqs, desc="socsim")
    finally:
        client.close()
    return sum(bool(r.text) and r.parse_ok for r in out)


def drive(a: argparse.Namespace) -> None:
    """One driver's run, in this process: prints a JSON line (calls, wall s, CPU s, peak RSS MiB)."""
    reqs, in_flight = requests(a.calls, a.mix), int(a.in_flight)
    payloads = bodies(reqs) if a.drive != "socsim" else []
    import aiohttp  # noqa: E401, F401 - imports are not what is timed

    from socsim import config, models  # noqa: F401

    cache = str(Path(a.scratch) / f"cache-{os.getpid()}.sqlite")
    params = socsim_params(a.url, in_flight, cache)  # (its schema is read once per run, not per call)
    profiler = None
    if a.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu0, t0 = time.process_time(), time.perf_counter()
    if a.drive == "aiohttp":
        ok = asyncio.run(drive_aiohttp(a.url, payloads, in_flight))
    elif a.drive == "httpx2":
        ok = asyncio.run(drive_httpx2(a.url, payloads, in_flight))
    else:
        ok = asyncio.run(drive_socsim(params, reqs, cache))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if profiler is not None:
        import pstats

        profiler.disable()
        if os.environ.get("SOCSIM_PROFILE_OUT"):  # the raw profile, for pstats or snakeviz
            profiler.dump_stats(os.environ["SOCSIM_PROFILE_OUT"])
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"calls": a.calls, "answered": ok, "wall": wall, "cpu": cpu, "rss": rss}))


def run_driver(
    kind: str, url: str, calls: int, in_flight: int, mix: str, scratch: str, profile: bool
) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--drive", kind, "--url", url, "--calls", str(calls)]
    argv += ["--in-flight", str(in_flight), "--mix", mix, "--scratch", scratch] + (
        ["--profile", kind] if profile else []
    )
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        sys.exit(f"driver {kind} failed:\n{proc.stderr[-3000:]}")
    if profile:
        print(proc.stderr, file=sys.stderr)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["answered"] != calls:
        sys.exit(f"driver {kind}: {result['answered']} of {calls} calls answered")
    return result


# -- the stage shard ---------------------------------------------------------------------------------------------
def stage_shard(url: str, agents: int, scratch: Path) -> dict[str, Any]:
    """coherence `agents` then `elicit` (timed: its process's wall, CPU and peak RSS) on the stand-in, in a scratch
    project; returns its calls from the stage's metrics."""
    from socsim.config import read_yaml

    project = scratch / "stage"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    for d in ("data", "workflow"):
        shutil.copytree(ROOT / d, project / d)
    base = read_yaml(ROOT / "params.yaml")
    params = {
        "seed": base.get("seed", 42),
        "models": {"instant": {"backend": "openai", "model_id": MODEL_ID, "endpoints": [url], "concurrency": 256}},
        "llm": {"cache_path": ".socsim-cache/{study}/{stage}/{shard}.sqlite"},
        "coherence": {
            "agent_models": ["instant"],
            "judge_model": "instant",
            "topics": ["taxes", "remote_work", "favorite_beverage"],
            "bias_levels": [0, 1, 2],
            "agents_per_cell": agents,
        },
    }
    import yaml

    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    socsim = shutil.which("socsim") or sys.exit("socsim is not on PATH (make setup)")
    subprocess.run(
        [socsim, "coherence", "agents", "--params", "params.yaml"], cwd=project, check=True, capture_output=True
    )
    wrapped = [sys.executable, "-c", TIMED, socsim, "coherence", "elicit", "--params", "params.yaml"]
    proc = subprocess.run(wrapped, cwd=project, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"socsim coherence elicit failed:\n{proc.stderr[-3000:]}")
    timing = json.loads(proc.stdout.strip().splitlines()[-1])
    metrics = json.loads((project / "results" / "coherence" / "metrics" / "elicit.json").read_text())
    calls = sum(m["calls"] for m in (metrics.get("models") or {}).values()) if "models" in metrics else metrics["calls"]
    return {**timing, "calls": calls}


# A command's wall, CPU (its children's: the command runs as one) and peak RSS, as a JSON line on stdout.
TIMED = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t0
if p.returncode:
    sys.stderr.write(p.stderr); sys.exit(p.returncode)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": r.ru_utime + r.ru_stime, "rss": r.ru_maxrss / 1024}))
"""


# -- the report --------------------------------------------------------------------------------------------------
def row(label: str, rs: list[dict[str, Any]], bare: float | None) -> str:
    rate = statistics.median(r["calls"] / r["wall"] for r in rs)
    cpu = statistics.median(1000 * r["cpu"] / r["calls"] for r in rs)
    rss = max(r["rss"] for r in rs)
    ratio = f"{rate / bare:6.2f}" if bare else "      "
    return f"  {label:<34} {rate:9,.0f} calls/s  ratio {ratio}  CPU {cpu:6.3f} ms/call  peak RSS {rss:6.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000, help="calls per driver run (at 1 in flight: a tenth)")
    ap.add_argument("--in-flight", default="1,64,256", help="levels of requests in flight, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per level (drivers alternate within each)")
    ap.add_argument("--agents", type=int, default=160, help="coherence agents per cell of the stage shard (0: none)")
    ap.add_argument("--profile", choices=("aiohttp", "httpx2", "socsim"), default=None, help="profile one driver")
    ap.add_argument("--no-planted", action="store_true", help="skip the planted server's rate")
    ap.add_argument("--drive", choices=("aiohttp", "httpx2", "socsim"), help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--mix", default="mixed", help=argparse.SUPPRESS)
    ap.add_argument("--scratch", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve is not None:
        return serve(a.serve)
    if a.drive:
        return drive(a)

    levels = [int(x) for x in a.in_flight.split(",")]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server([sys.executable, __file__, "--serve", str(port)], url)
    kinds = [a.profile] if a.profile else ["aiohttp", "httpx2", "socsim"]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            print(f"stand-in at {url} (a process of its own); {a.calls:,} calls per run, {a.rounds} rounds", flush=True)
            for level in levels:
                calls = max(a.calls // 10, 50) if level == 1 else a.calls
                results: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
                for _ in range(a.rounds):
                    for k in kinds:
                        results[k].append(run_driver(k, url, calls, level, "mixed", scratch, bool(a.profile)))
                bare = (
                    statistics.median(r["calls"] / r["wall"] for r in results["aiohttp"])
                    if results.get("aiohttp")
                    else None  # (one driver profiled)
                )
                print(f"{level} in flight ({calls:,} calls, half constrained):")
                for k in kinds:
                    label = {"aiohttp": "bare aiohttp", "httpx2": "bare httpx2", "socsim": "socsim client"}[k]
                    print(row(label, results[k], bare if results.get("aiohttp") else None), flush=True)
                if bare and results.get("socsim"):
                    mine = statistics.median(r["calls"] / r["wall"] for r in results["socsim"])
                    cpu = statistics.median(1000 * r["cpu"] / r["calls"] for r in results["socsim"])
                    print(
                        f"socsim / bare at {level} in flight: {mine / bare:.2f} (target >= 0.8); socsim's CPU "
                        f"{cpu:.3f} ms/call (target <= 0.5)",
                        flush=True,
                    )
            if a.agents and not a.profile:
                shard = stage_shard(url, a.agents, Path(scratch))
                base = [
                    run_driver("aiohttp", url, shard["calls"], 256, "constrained", scratch, False) for _ in range(2)
                ]
                bare = statistics.median(r["calls"] / r["wall"] for r in base)
                print(
                    f"one stage shard: coherence elicit, {shard['calls']:,} calls (256 in flight), process end to end"
                )
                print(row("bare aiohttp, same calls", base, bare))
                print(row("socsim coherence elicit", [shard], bare), flush=True)
                rate = shard["calls"] / shard["wall"]
                print(f"stage shard / bare: {rate / bare:.2f} (target >= 0.6)", flush=True)
    finally:
        server.terminate()
        server.wait()
    if not a.no_planted and not a.profile:
        planted(a, levels)


def planted(a: argparse.Namespace, levels: list[int]) -> None:
    """The planted control's server under the bare client (free text, constrained) beside the stand-in."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "socsim.planted.server", "--effects", "planted", "--port", str(port)]
    argv += ["--served-model-name", MODEL_ID]
    server = start_server(argv, url)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            print("the planted control's server (socsim.planted.server), bare aiohttp client:")
            for level in [x for x in levels if x > 1] or levels:
                for mix in ("free", "constrained"):
                    rs = [run_driver("aiohttp", url, a.calls // 4, level, mix, scratch, False) for _ in range(a.rounds)]
                    print(row(f"{level} in flight, {mix}", rs, None), flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
