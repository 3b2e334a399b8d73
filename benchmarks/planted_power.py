"""The planted model's power and the null twin's false-positive rate, over replicate runs (docs/scorecard.md).

Each replicate is the whole control run (`snakemake --configfile params.control.yaml seed.yaml`, `seed: <s>`, every
study on the planted model and its null twin, the scorecard at the end) in a scratch copy of the project, at
its own seed. It prints, per planted claim the design has power for (socsim.planted.answers.POWERED), how
often the planted model's finding holds (the target: >= 0.8), and over every finding of the null twin how often
one holds beside the nominal rate (a two-sided test read in its direction: alpha / 2) and its binomial bound.

    python benchmarks/planted_power.py --replicates 10
    python benchmarks/planted_power.py --replicates 1 --studies opinion_dynamics   # the tiny check
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]


def scratch_project(dest: Path) -> Path:
    """The repository's tracked files, copied (no results, no caches)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for f in (x.decode() for x in files if x):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


def replicate(project: Path, seed: int, params: str, studies: list[str], cores: int) -> pd.DataFrame:
    """One control run at `seed`: the scorecard's long table of its studies (every finding of every column)."""
    from socsim.scorecard import read_sources, scorecard

    for d in ("results", ".socsim-cache"):
        shutil.rmtree(project / d, ignore_errors=True)
    # The seed as a params file: socsim's commands read params files (Snakemake's --config reaches no command).
    (project / "seed.yaml").write_text(f"seed: {seed}\n")
    cmd = ["snakemake", "--cores", str(cores), "--configfile", params, "seed.yaml", "--", *studies]
    # The copy's own code (its src first): the repository's may change while the replicates run.
    env = {
        **os.environ,
        "PYTHONPATH": str(project / "src"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"replicate seed {seed} failed:\n{proc.stderr[-3000:]}")
    reports = [str(project / "results" / s / "analysis") for s in studies] or [str(project / "results")]
    return scorecard(read_sources(reports))[0].assign(seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--params", default="params.control.yaml")
    ap.add_argument("--studies", nargs="*", default=[], help="only these studies (default: all in the params)")
    ap.add_argument("--seed", type=int, default=1000, help="the first replicate's seed")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--scratch", default=None, help="scratch folder (default: a temporary one)")
    a = ap.parse_args()

    import tempfile

    from socsim.planted import MODEL_IDS
    from socsim.planted.answers import POWERED
    from socsim.scorecard import NULL_RATE, judged, null_allowance

    with tempfile.TemporaryDirectory(dir=a.scratch) as tmp:
        project = scratch_project(Path(tmp))
        t0, runs = time.monotonic(), []
        for r in range(a.replicates):
            runs.append(replicate(project, a.seed + r, a.params, a.studies, a.cores))
            print(f"replicate {r + 1}/{a.replicates} done ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    long = pd.concat(runs, ignore_index=True)
    long = long[judged(long)]
    planted = long[long["identity"].str.startswith(MODEL_IDS["planted"])]
    null = long[long["identity"].str.startswith(MODEL_IDS["null"])]
    print(f"{a.replicates} replicate(s) of {a.params} in {time.monotonic() - t0:.0f} s")
    print("planted model, claims its design has power for (target: holds in >= 0.8 of replicates):")
    for (study, fid), why in sorted(POWERED.items()):
        rows = planted[(planted["study"] == study) & (planted["finding_id"] == fid)]
        for claim, g in rows.groupby("claim"):
            rate = (g["verdict"] == "holds").mean()
            print(f"  {study}: {claim}: holds {int((g['verdict'] == 'holds').sum())}/{len(g)} = {rate:.2f} ({why})")
    for study, g in planted.groupby("study"):
        print(f"  {study}: every planted finding: holds {(g['verdict'] == 'holds').mean():.2f} of {len(g)}")
    k, n = int((null["verdict"] == "holds").sum()), len(null)
    p = stats.binomtest(k, n, NULL_RATE, alternative="greater").pvalue if n else float("nan")
    print(
        f"null twin: {k} of {n} findings hold (rate {k / max(n, 1):.3f}; nominal {NULL_RATE:g}; the 95 % allowance "
        f"{null_allowance(n)}; one-sided binomial p = {p:.3g} against the nominal rate)"
    )
    for study, g in null.groupby("study"):
        print(f"  {study}: {int((g['verdict'] == 'holds').sum())} of {len(g)} hold")


if __name__ == "__main__":
    main()
