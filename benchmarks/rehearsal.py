"""The rehearsal: the papers' designs on the planted control, end to end, and what each part of it cost
(docs/rehearsal.md).

`run` makes a clone of the repository at --project (its own src: the code under test does not change while it
runs), merges params.rehearsal.yaml and any --also files into its params.yaml (`socsim params apply`, as DVC needs),
then runs and times, niced: `socsim plan`, `snakemake --cores N --keep-going`, `socsim dvc commit`, `socsim rocrate`.
The console shows Snakemake's progress. `report` reads a finished project: per stage, calls, wall time, calls/s,
socsim's CPU per call and peak RSS (from each LLM stage shard's metrics), every job's wall time (Snakemake's log),
artifact sizes per study, the timed steps, and the scorecard's counts for the planted model and its null twin; as
Markdown on stdout and as JSON (--json). `growth` draws time and peak memory against calls from several reports
(coherence at several fractions).

    python benchmarks/rehearsal.py run --project ../rehearsal                          # 1/20 of coherence's grid
    python benchmarks/rehearsal.py run --project ../r200 --also r200.yaml --targets coherence_figures  # 1/200
    python benchmarks/rehearsal.py run --project ../s200 --also r200.yaml --targets coherence_figures --slurm
    python benchmarks/rehearsal.py report --project ../rehearsal --json rehearsal.json
    python benchmarks/rehearsal.py growth r200.json r50.json r20.json --out docs/figures/rehearsal_growth.png
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("plan", "snakemake", "dvc-commit", "rocrate")


def tools_env(project: Path) -> dict[str, str]:
    """The project's own code first (a clone's src), the venv's tools on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(project / "src")
    env.setdefault("DVC_NO_ANALYTICS", "1")
    return env


def timed(name: str, cmd: list[str], project: Path, log: str) -> int:
    """Run a command niced in the project, its output to `log`; its wall, CPU and peak RSS to timings.json."""
    import resource
    import time

    t0 = time.perf_counter()
    with open(project / log, "w") as out:
        proc = subprocess.run(["nice", *cmd], cwd=project, env=tools_env(project), stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # (cumulative over children: differences are taken)
    path = project / "timings.json"
    timings = json.loads(path.read_text()) if path.exists() else {}
    before = timings.get("_children_cpu", 0.0)
    cpu = usage.ru_utime + usage.ru_stime
    timings[name] = {"wall_s": round(wall, 1), "cpu_s": round(cpu - before, 1), "exit": proc.returncode}
    timings["_children_cpu"] = cpu
    path.write_text(json.dumps(timings, indent=1))
    print(f"{name}: exit {proc.returncode}, {wall:.0f} s", flush=True)
    if proc.returncode:
        sys.exit(f"{name} failed: {project / log} says why")
    return proc.returncode


def run(a: argparse.Namespace) -> None:
    project = Path(a.project).resolve()
    if project.exists():
        sys.exit(f"{project} exists: give a new folder (a rehearsal starts from a clean clone)")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(project)], check=True)
    for f in ["params.rehearsal.yaml", *a.also]:  # (uncommitted changes of these files come along)
        shutil.copy2(ROOT / f if not Path(f).is_absolute() else f, project / Path(f).name)
    env = tools_env(project)
    for f in ["params.rehearsal.yaml", *a.also]:
        subprocess.run(["socsim", "params", "apply", Path(f).name], cwd=project, env=env, check=True)
    subprocess.run(["socsim", "dvc", "export"], cwd=project, env=env, check=True)
    (project / "results").mkdir(exist_ok=True)
    if not a.targets:  # (targets: a part of the run, e.g. one study at another fraction; no whole-run steps)
        timed("plan", ["socsim", "plan", "--json", "results/plan.json"], project, "plan.log")
    # Snakemake's console (its progress, the jobs' progress lines) goes to snakemake.log: `tail -f` it.
    snakemake = ["snakemake", "--cores", str(a.cores), "--keep-going", *a.targets]
    if a.slurm:  # each job (a shard, a planted server) a SLURM job of its own, through profiles/slurm
        snakemake = ["snakemake", "--workflow-profile", "profiles/slurm", "--", *a.targets]
    timed("snakemake", snakemake, project, "snakemake.log")
    if not a.targets:
        timed("dvc-commit", ["socsim", "dvc", "commit"], project, "dvc.log")
        timed("rocrate", ["socsim", "rocrate", "--out", "results/rocrate", "--link"], project, "rocrate.log")
    print(f"done: python benchmarks/rehearsal.py report --project {project}")


# -- the report --------------------------------------------------------------------------------------------------
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
JOB = re.compile(r"^Job (\d+): (\w+) (\w+)")
SHARD = re.compile(r"\[shard ([^\]]+)\]")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")


def job_times(log: Path) -> list[dict[str, Any]]:
    """Every job's rule, shard and wall time from Snakemake's log (its timestamps, to the second)."""
    lines = log.read_text(errors="replace").replace("\r", "\n").splitlines()
    stamp: datetime | None = None
    started: dict[str, tuple[str, str, datetime]] = {}
    out = []
    for line in lines:
        if m := STAMP.match(line.strip()):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif (m := JOB.match(line)) and stamp is not None:
            shard = SHARD.search(line)
            started[m.group(1)] = (f"{m.group(2)} {m.group(3)}", shard.group(1) if shard else "", stamp)
        elif (m := FINISHED.match(line)) and stamp is not None and m.group(1) in started:
            name, shard, t0 = started.pop(m.group(1))
            out.append({"job": name, "shard": shard, "wall_s": (stamp - t0).total_seconds()})
    return out


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def llm_stages(results: Path) -> dict[str, dict[str, Any]]:
    """Per LLM stage (study stage): its shards' calls, cache hits, wall (per shard: the models' longest), CPU and
    peak RSS, summed over shards (peak: the largest)."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"shards": 0, "calls": 0, "cache_hits": 0, "wall_s": 0.0})
    for study in sorted(p.name for p in results.iterdir() if (p / "metrics").is_dir()):
        for path in sorted((results / study / "metrics").rglob("*.json")):
            m = json.loads(path.read_text())
            if "models" not in m or "process" not in m:
                continue
            stage = path.parent.name if path.parent.name != "metrics" else path.stem
            row = out[f"{study} {stage}"]
            row["shards"] += 1
            row["calls"] += m["calls"]
            row["cache_hits"] += m["cache_hits"]
            row["wall_s"] += max((v.get("wall_s") or 0.0) for v in m["models"].values()) if m["models"] else 0.0
            row["cpu_s"] = row.get("cpu_s", 0.0) + m["process"]["cpu_s"]
            row["peak_rss_mib"] = max(row.get("peak_rss_mib", 0.0), m["process"]["peak_rss_mib"])
    return dict(out)


def scorecard_counts(results: Path) -> dict[str, Any]:
    """The scorecard's verdicts for the planted model and its null twin, and the null twin's allowance."""
    import pandas as pd

    from socsim.planted import MODEL_IDS
    from socsim.planted.answers import POWERED
    from socsim.scorecard import judged, null_allowance

    path = results / "scorecard" / "scorecard.parquet"
    if not path.exists():
        return {}
    long = pd.read_parquet(path)
    planted = long[long["identity"].str.startswith(MODEL_IDS["planted"])]
    powered = [  # each powered finding's verdicts (one per part: a memory and topology, ...)
        planted[(planted["study"] == s) & (planted["finding_id"] == fid)]["verdict"].tolist() for s, fid in POWERED
    ]
    null = long[long["identity"].str.startswith(MODEL_IDS["null"]) & judged(long)]
    return {
        "planted_powered": len(POWERED),
        "planted_powered_hold": sum(bool(v) and all(x == "holds" for x in v) for v in powered),
        "planted_verdicts": planted["verdict"].value_counts().to_dict(),
        "null_findings": len(null),
        "null_hold": int((null["verdict"] == "holds").sum()),
        "null_allowance": null_allowance(len(null)),
    }


TIME_LINE = re.compile(r"^(\S+) wall=([\d.]+) s cpu=([\d.]+)\+([\d.]+) s maxrss=(\d+) KB$")


def steps(project: Path) -> dict[str, dict[str, Any]]:
    """The timed steps: timings.json (`run`), or timings.txt as /usr/bin/time -f wrote it (a run by hand)."""
    if (project / "timings.json").exists():
        return {k: v for k, v in json.loads((project / "timings.json").read_text()).items() if k in STEPS}
    out: dict[str, dict[str, Any]] = {}
    if (project / "timings.txt").exists():
        for line in (project / "timings.txt").read_text().splitlines():
            if m := TIME_LINE.match(line):
                out[m.group(1)] = {
                    "wall_s": float(m.group(2)),
                    "cpu_s": float(m.group(3)) + float(m.group(4)),
                    "peak_rss_mib": round(int(m.group(5)) / 1024, 1),
                    "exit": 0,
                }
            elif (m := re.match(r"^(\S+) exit (\d+)$", line)) and m.group(1) in out:
                out[m.group(1)]["exit"] = int(m.group(2))
    return out


def report(a: argparse.Namespace) -> None:
    project = Path(a.project).resolve()
    results, caches = project / "results", project / ".socsim-cache"
    data = {
        "project": str(project),
        "steps": steps(project),
        "llm_stages": llm_stages(results),
        "jobs": job_times(project / "snakemake.log") if (project / "snakemake.log").exists() else [],
        "sizes_mib": {
            p.name: round(size(p) / 1024**2, 1) for p in sorted(results.iterdir()) if p.is_dir() and p.name != "rocrate"
        },
        "caches_mib": round(size(caches) / 1024**2, 1) if caches.exists() else 0,
        "scorecard": scorecard_counts(results),
    }
    if a.json:
        Path(a.json).write_text(json.dumps(data, indent=1, default=str))
    print("| stage | shards | calls | wall (s, shards summed) | calls/s | socsim CPU ms/call | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    for name, r in data["llm_stages"].items():
        asked = r["calls"] + r["cache_hits"]
        if not asked:  # a stage that asked no model this run (validation with nothing to validate): no per-call row
            continue
        rate = r["calls"] / r["wall_s"] if r["wall_s"] else 0.0
        cpu = 1000 * r["cpu_s"] / asked
        print(
            f"| {name} | {r['shards']} | {r['calls']:,} | {r['wall_s']:,.0f} | {rate:,.0f} | {cpu:.2f} | "
            f"{r['peak_rss_mib']:,.0f} |"
        )
    per_rule: dict[str, list[float]] = defaultdict(list)
    for j in data["jobs"]:
        per_rule[j["job"]].append(j["wall_s"])
    print("\n| job | jobs | wall (s, summed) | longest job (s) |\n|---|---|---|---|")
    for name, walls in per_rule.items():
        print(f"| {name} | {len(walls)} | {sum(walls):,.0f} | {max(walls):,.0f} |")
    print("\n| step | wall (s) | CPU (s) | exit |\n|---|---|---|---|")
    for name, t in data["steps"].items():
        print(f"| {name} | {t['wall_s']:,.0f} | {t['cpu_s']:,.0f} | {t['exit']} |")
    print("\nartifact sizes (MiB): " + ", ".join(f"{k} {v:,}" for k, v in data["sizes_mib"].items()))
    print(f"call caches (MiB): {data['caches_mib']:,}")
    s = data["scorecard"]
    if s:
        print(
            f"planted: {s['planted_powered_hold']} of {s['planted_powered']} powered planted findings hold; "
            f"null twin: {s['null_hold']} of {s['null_findings']} findings hold, allowance {s['null_allowance']}"
        )


def growth(a: argparse.Namespace) -> None:
    """Time and peak memory of coherence's stages against its calls, one point per report (fraction)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = []
    for path in a.reports:
        d = json.loads(Path(path).read_text())
        shards = [v for k, v in d["llm_stages"].items() if k in ("coherence converse", "coherence judge")]
        wall: dict[str, float] = defaultdict(float)
        for j in d["jobs"]:
            if j["job"].startswith("coherence "):
                wall[j["job"].split()[1]] += j["wall_s"]
        calls = sum(v["calls"] for v in shards)
        llm = sum(wall[k] for k in ("elicit", "converse", "judge", "calibrate"))
        other = sum(wall[k] for k in ("agents", "pair", "analyse", "figures"))
        peak = max((v["peak_rss_mib"] for v in shards), default=0.0)
        points.append((calls, llm, other, peak, Path(path).stem))
    points.sort()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    xs = [p[0] for p in points]
    ax1.plot(xs, [p[1] for p in points], "o-", label="LLM jobs (elicit, converse, judge, calibrate), summed")
    ax1.plot(xs, [p[2] for p in points], "s-", label="agents, pair, analyse, figures")
    ax1.set_xlabel("coherence calls (converse and judge)")
    ax1.set_ylabel("wall time (s, jobs summed)")
    ax1.legend(fontsize=8)
    ax2.plot(xs, [p[3] for p in points], "o-")
    ax2.set_xlabel("coherence calls (converse and judge)")
    ax2.set_ylabel("largest converse/judge shard's peak RSS (MiB)")
    for p in points:
        ax1.annotate(p[4], (p[0], p[1]), fontsize=8)
        print(
            f"{p[4]}: {p[0]:,} calls; LLM jobs {p[1]:,.0f} s; agents/pair/analyse/figures {p[2]:,.0f} s; "
            f"peak {p[3]:,.0f} MiB"
        )
    fig.suptitle("The rehearsal's coherence at several fractions of the paper's grid")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="clone, apply params.rehearsal.yaml, run and time every step")
    r.add_argument("--project", required=True)
    r.add_argument("--also", nargs="*", default=[], help="params files merged after params.rehearsal.yaml")
    r.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    r.add_argument("--slurm", action="store_true", help="through profiles/slurm (a SLURM cluster at hand)")
    r.add_argument("--targets", nargs="*", default=[], help="Snakemake targets (coherence_figures): that part only")
    p = sub.add_parser("report", help="what a finished rehearsal cost")
    p.add_argument("--project", required=True)
    p.add_argument("--json", default=None)
    g = sub.add_parser("growth", help="coherence's time and memory against calls, from several reports")
    g.add_argument("reports", nargs="+")
    g.add_argument("--out", required=True)
    a = ap.parse_args()
    {"run": run, "report": report, "growth": growth}[a.cmd](a)


if __name__ == "__main__":
    main()
