"""A real single-node SLURM cluster (tests/pipeline/slurm_cluster.py) and Snakemake's SLURM executor on it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from slurm_cluster import job_ids_in_logs, process_alive, snakemake_slurm_args

pytestmark = pytest.mark.slow


SNAKEFILE = textwrap.dedent("""\
    localrules: all

    rule all:
        input: "a.txt", "b.txt"

    rule job_a:
        output: "a.txt"
        shell: 'echo "$SLURM_JOB_ID" > {output}'

    rule job_b:
        output: "b.txt"
        shell: 'echo "$SLURM_JOB_ID" > {output}'
    """)


def test_snakemake_runs_jobs_through_slurm(slurm_cluster, tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    python = Path(sys.executable)  # the venv's python: jobs run `<this python> -m snakemake`
    # Commands inside rules come from the submitting shell's PATH: the venv must be on it.
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [
        str(python),
        "-m",
        "snakemake",
        "--executor",
        "slurm",
        "--jobs",
        "4",
        "--default-resources",
        f"slurm_partition={slurm_cluster.partition}",
        "runtime=10",
        "mem_mb=1000",
        "cpus_per_task=1",
        *snakemake_slurm_args(),
    ]
    t0 = time.monotonic()
    res = subprocess.run(
        cmd, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    elapsed = time.monotonic() - t0
    print(f"\nsnakemake --executor slurm (2 jobs) took {elapsed:.1f} s")
    assert res.returncode == 0, f"snakemake failed ({res.returncode}):\n{res.stdout}\n{res.stderr[-6000:]}"

    ids = {name: (tmp_path / f"{name}.txt").read_text().strip() for name in ("a", "b")}
    assert all(v.isdigit() for v in ids.values()), f"outputs do not hold SLURM job ids: {ids}"
    assert ids["a"] != ids["b"], f"both rules ran in the same SLURM job: {ids}"
    assert job_ids_in_logs(tmp_path) == {"job_a": [int(ids["a"])], "job_b": [int(ids["b"])]}


def test_stop_leaves_no_daemon_and_start_again(slurm_cluster):
    """stop() ends slurmd, slurmctld and munged (by pid); start() on the same directory brings it back."""
    pids = slurm_cluster.pids()
    assert set(pids) == {"slurmd", "slurmctld", "munged"}
    assert all(process_alive(pid) for pid in pids.values())

    slurm_cluster.stop()
    print(f"\nstop: {slurm_cluster.shutdown_seconds:.1f} s")
    assert [name for name, pid in pids.items() if process_alive(pid)] == []
    assert slurm_cluster.pids() == {}

    slurm_cluster.start()  # the session fixture stays usable for later tests
    print(f"restart: {slurm_cluster.startup_seconds:.1f} s")
    assert set(slurm_cluster.pids()) == {"slurmd", "slurmctld", "munged"}
    assert all(process_alive(pid) for pid in slurm_cluster.pids().values())
