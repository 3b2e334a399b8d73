"""One run of a stage shard at a time: a second run of the same shard (a job of a killed Snakemake runs on,
`snakemake --unlock`, `dvc repro` beside Snakemake) stops at once naming the stage, the shard, the lock file
and the pid holding it, and touches no output; a run killed with -9 leaves no lock that stops the next."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from support.project import ROOT, run_socsim

# A run of a stage through the CLI (socsim.cli.run_args: the lock and all), whose stage body marks that it
# started, then runs until killed.
HOLDER = """
import sys, time
from dataclasses import replace
from pathlib import Path
from socsim import cli

args = cli.build_parser().parse_args(sys.argv[2:])
def run(ctx):
    Path(sys.argv[1]).write_text("running")
    time.sleep(300)
args._stage = replace(args._stage, run=run)
sys.exit(cli.run_args(args))
"""


def hold(tmp_path: Path, *argv: str) -> subprocess.Popen:
    """A process running the stage of `argv`, once it runs (its lock taken)."""
    started = tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(started), *argv],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not started.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the holder did not start"
        time.sleep(0.05)
    return proc


def test_a_second_run_of_the_same_shard_stops_at_once_and_touches_no_output(tmp_path):
    setups = tmp_path / "setups.parquet"
    setups.write_bytes(b"read by neither run")
    comments, metrics = tmp_path / "comments.parquet", tmp_path / "metrics" / "smollm2-135m.json"
    comments.write_bytes(b"an earlier run's comments")
    argv = ["facilitation", "simulate", "--shard", "smollm2-135m", "--setups", str(setups)]
    argv += ["--comments", str(comments), "--metrics", str(metrics)]
    holder = hold(tmp_path, *argv)
    lock = tmp_path / "metrics" / ".smollm2-135m.json.lock"
    try:
        t0 = time.monotonic()
        second = run_socsim(*argv, timeout=60)
        took = time.monotonic() - t0
        assert holder.poll() is None  # the first runs on
    finally:
        holder.kill()  # -9: no clean-up
        holder.wait(timeout=30)
    assert second.returncode == 2, second.stderr
    err = second.stderr
    assert err.startswith("socsim: error: facilitation.simulate shard smollm2-135m is running already"), err
    assert f"its lock file {lock} is held by pid {holder.pid}" in err and "touches no output" in err
    assert "started" not in err and "Traceback" not in err and took < 30
    assert comments.read_bytes() == b"an earlier run's comments" and not metrics.exists()
    assert lock.read_text().split()[0] == str(holder.pid)  # left by the killed holder: unlocked


def test_a_run_killed_with_minus_9_leaves_no_lock_that_stops_the_next(tmp_path):
    out = {name: tmp_path / f"{name}.parquet" for name in ("personas", "topics")}
    argv = ["opinion_dynamics", "materials", "--metrics", str(tmp_path / "materials.json")]
    argv += [a for name, path in out.items() for a in (f"--{name}", str(path))]
    holder = hold(tmp_path, *argv)
    holder.kill()
    holder.wait(timeout=30)
    lock = tmp_path / ".materials.json.lock"
    assert lock.exists()  # the file stays; the kernel dropped the lock with its process
    proc = run_socsim(*argv, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert all(p.is_file() for p in out.values()) and (tmp_path / "materials.json").is_file()
    assert not lock.exists()  # a run that ends removes its lock file
