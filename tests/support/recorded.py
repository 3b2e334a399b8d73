"""The recorded tiny run: the tiny config (tests/params.tiny.yaml: every stage of every study) run once per
test session for real, on the embedded model, by `snakemake --cores 2` in a copy of the project (the fixture
`tiny_run` in tests/conftest.py). The executor tests (Snakemake + DVC, SLURM, cancel and resume) replay its
call caches (socsim.llm.replay: SOCSIM_REPLAY) rather than ask the model again: they test scheduling,
sharding, resumption and DVC, and a replay on the same params writes the recorded run's artifacts byte for
byte, or stops on the first request the recording does not hold."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from socsim.config import deep_merge
from socsim.llm import replay
from support.project import ROOT, copy_project, sh, tool_env

TINY = "tests/params.tiny.yaml"


def source_commit() -> str:
    """The commit of the socsim that runs (every artifact's provenance records it: socsim.io.provenance)."""
    return sh(["git", "rev-parse", "HEAD"], ROOT).stdout.strip()


@dataclass(frozen=True)
class TinyRun:
    project: Path  # its copy of the project: params.yaml holds the tiny config, results/ the run's outputs
    seconds: float  # the Snakemake run's wall time
    commit: str  # the socsim commit it ran on
    console: str = ""  # what Snakemake printed (stderr): its jobs' lines of progress among them

    @property
    def caches(self) -> Path:
        """The recording: the run's call caches, one per shard."""
        return self.project / ".socsim-cache"

    def replay_env(self, delay: float = 0.0) -> dict[str, str]:
        """The environment of a run that replays this one (each answer `delay` seconds late). A commit since the
        recording changes every artifact's provenance, so a byte-for-byte comparison could only fail: say so."""
        if (now := source_commit()) != self.commit:
            pytest.fail(
                f"socsim was committed since the tiny run was recorded ({self.commit[:10]} -> {now[:10]}): every "
                "artifact's provenance names the commit, so no replay can equal the recording; run the tests again",
                pytrace=False,
            )
        return {**tool_env(), replay.ENV: str(self.caches), replay.DELAY_ENV: str(delay)}


def tiny_project(dest: Path) -> Path:
    """A copy of the project whose params.yaml is the defaults with the tiny config merged in (so that DVC runs
    the DAG Snakemake runs), dvc.yaml exported for it (the shard ids follow the topics), committed."""
    project = copy_project(dest)
    params = yaml.safe_load((project / "params.yaml").read_text())
    tiny = yaml.safe_load((ROOT / TINY).read_text())
    (project / "params.yaml").write_text(yaml.safe_dump(deep_merge(params, tiny), sort_keys=False))
    sh(["socsim", "dvc", "export"], project)
    sh(["git", "commit", "-qam", "tiny"], project)
    return project


def record(dest: Path) -> TinyRun:
    """The tiny run for real: its plan first (as `make run` does), then `snakemake --cores 2`."""
    project = tiny_project(dest)
    sh(["socsim", "plan", "--json", "plan.json"], project)
    commit, t0 = source_commit(), time.monotonic()
    proc = sh(["snakemake", "--cores", "2"], project, timeout=3600)
    (project / "console.txt").write_text(proc.stderr)  # kept with the recording (SOCSIM_TEST_RECORDED)
    return TinyRun(project, time.monotonic() - t0, commit, proc.stderr)


def artifacts(results: Path, study: str | None = None) -> dict[str, bytes]:
    """Every result file (of one study, or all) but the run-specific ones: logs, benchmarks, metrics (times,
    cache hits, where the answers came from)."""
    root = results / study if study else results
    out = {}
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(results)
        if f.is_file() and not f.name.startswith(".") and not {"logs", "benchmarks", "metrics"} & set(rel.parts):
            out[str(rel)] = f.read_bytes()
    return out


def differing(got: dict[str, bytes], want: dict[str, bytes]) -> list[str]:
    """The files missing on one side or not byte-identical."""
    return sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
