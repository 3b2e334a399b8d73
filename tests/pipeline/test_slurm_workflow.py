"""The workflow on a real single-node SLURM cluster, through profiles/slurm and Snakemake's SLURM executor: one
study (opinion dynamics, tiny config) for real, its model answers replayed from the session's recorded tiny run
(support.recorded: SOCSIM_REPLAY, each answer paced so that a job can be caught mid-shard): one SLURM job per
LLM shard, a job cancelled mid-shard resumes from its own cache, and the artifacts equal the recorded local
`snakemake` run's byte for byte; every study as a dry run through the same profile (what the executor would
submit). The model is tested by the recorded run itself, servers by the served and vLLM runs: here the executor
is under test."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml
from slurm_cluster import job_ids_in_logs

from socsim import config, studies
from support.metrics import cache_rows
from support.project import copy_project, sh
from support.recorded import TINY, artifacts, differing

pytestmark = pytest.mark.slow

# The command of the README's cluster section (plus the test's params file), for the study run for real.
STUDY = "opinion_dynamics"
PROFILE = ["snakemake", "--workflow-profile", "profiles/slurm", "--configfile", TINY]
CLUSTER = [*PROFILE, "--", STUDY]
PACE = 0.3  # seconds per replayed answer: a shard of the study takes some seconds, as on a model
# The shard cancelled mid-run, and its call cache (llm.cache_path's default layout).
VICTIM_RULE, VICTIM_SHARD = "opinion_dynamics_simulate", "smollm2-135m.fire"
VICTIM_CACHE = f".socsim-cache/opinion_dynamics/simulate/{VICTIM_SHARD}.sqlite"
VICTIM_METRICS = f"results/opinion_dynamics/metrics/simulate/{VICTIM_SHARD}.json"


def llm_shards(project: Path, study: str | None = None) -> dict[str, list[str]]:
    """Each sharded LLM rule's shard ids on the test's params (of one study, or all)."""
    params = config.load([project / "params.yaml", project / TINY])
    return {
        st.rule_name: st.shard_ids(params)
        for s, st in studies.all_stages()
        if st.uses_llm and st.shards and (study is None or s.name == study)
    }


def squeue_job(comment_has: list[str]) -> str | None:
    """The id of the running job whose comment (the plugin writes rule and wildcards) has every word."""
    out = subprocess.run(["squeue", "-h", "-o", "%i|%k|%T"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        job_id, comment, state = line.split("|", 2)
        if state == "RUNNING" and all(w in comment for w in comment_has):
            return job_id
    return None


def test_every_study_dry_runs_through_the_slurm_profile(slurm_cluster, tmp_path):
    """`snakemake --workflow-profile profiles/slurm -n` on every study: every rule of the tiny run, each LLM
    shard a job of its own, is what the executor would submit (no job runs, no server needed)."""
    project = copy_project(tmp_path / "dry")
    out = sh([*PROFILE, "--dry-run", "--quiet", "rules"], project, timeout=600).stdout
    params = config.load([project / "params.yaml", project / TINY])
    for study in studies.all_studies():
        for st in study.active(params):
            row = next((line.split() for line in out.splitlines() if line.split()[:1] == [st.rule_name]), None)
            assert row is not None, f"{st.rule_name} not in the dry run:\n{out}"
            assert int(row[1]) == len(st.shard_ids(params)), (st.rule_name, row)


def test_one_study_through_slurm(slurm_cluster, tiny_run, tmp_path):
    project = copy_project(tmp_path / "cluster")
    env = tiny_run.replay_env(delay=PACE)
    t0 = time.monotonic()

    # 1. Run on the cluster; cancel one LLM shard's job once some of its calls are in its cache.
    with open(tmp_path / "run1.log", "w+") as log:  # a file, not a pipe: a full pipe would stall Snakemake
        proc = subprocess.Popen(
            CLUSTER,
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            victim, deadline = None, time.monotonic() + 900
            while time.monotonic() < deadline and proc.poll() is None:
                if cache_rows(project / VICTIM_CACHE) >= 3 and (victim := squeue_job([VICTIM_RULE, VICTIM_SHARD])):
                    break
                time.sleep(0.2)
            assert victim, "the shard's job was not caught running"
            subprocess.run(["scancel", victim], check=True)
            proc.wait(timeout=1800)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        log.seek(0)
        out1 = log.read()
    first_run = time.monotonic() - t0
    assert proc.returncode != 0, "the cancelled job should fail the first run"
    cached = cache_rows(project / VICTIM_CACHE)
    assert cached >= 3
    assert not (project / f"results/opinion_dynamics/events/{VICTIM_SHARD}.parquet").exists()
    before = {p: p.stat().st_mtime_ns for p in (project / "results").rglob("*.parquet")}
    other_shard = VICTIM_SHARD.replace("fire", "sky_color")  # the study's other topic
    assert project / f"results/opinion_dynamics/events/{other_shard}.parquet" in before, out1[-3000:]

    # 2. Run again: only the cancelled shard and what depends on it; the shard resumes from its cache.
    t1 = time.monotonic()
    sh(CLUSTER, project, timeout=1800, env=env)
    second_run = time.monotonic() - t1
    m = yaml.safe_load((project / VICTIM_METRICS).read_text())
    assert m["cache_hits"] >= cached and m["calls"] < m["requests"], m  # finished calls not paid again
    assert m["models"]["smollm2-135m"]["replayed_from"] == str(tiny_run.caches)  # and the others replayed
    rerun = sorted(str(p.relative_to(project)) for p, t in before.items() if p.stat().st_mtime_ns != t)
    assert not any(other_shard in r or not r.startswith("results/opinion_dynamics/") for r in rerun), (
        f"files of other shards or studies were written again: {rerun}"
    )

    # 3. Every LLM shard ran as its own SLURM job: one job log per shard, named by its job id.
    logs = project / ".snakemake/slurm_logs"
    for rule, shards in llm_shards(project, STUDY).items():
        for shard in shards:
            ids = [f.stem for f in (logs / f"rule_{rule}" / shard).glob("*.log")]
            assert len(ids) == (2 if (rule, shard) == (VICTIM_RULE, VICTIM_SHARD) else 1), (rule, shard, ids)
    jobs = job_ids_in_logs(project)
    all_ids = [i for ids in jobs.values() for i in ids]
    assert len(all_ids) == len(set(all_ids)), "two jobs share a SLURM job id"

    # 4. The same artifacts as the recorded local `snakemake --cores 2` run of the same params (all its studies;
    # this one compared), byte for byte: the replay gives every job the recorded answers.
    got, want = artifacts(project / "results", STUDY), artifacts(tiny_run.project / "results", STUDY)
    assert len(got) > 20 and differing(got, want) == [], f"cluster and local artifacts differ: {differing(got, want)}"
    print(
        f"\nSLURM: first run (a shard cancelled) {first_run:.0f} s, re-run {second_run:.0f} s; {len(all_ids)} SLURM "
        f"jobs; {len(got)} artifacts identical to the recorded local run's"
    )
