"""Fixtures (the recorded tiny run, a real llama.cpp HTTP server on loopback, a SLURM cluster, an environment
without proxies) and the fast lane's guards (what a fast test may not do; where a slow test lives). The helpers
the tests import live in tests/support/ (`from support.project import ROOT`, ...)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from socsim.llm.local import LlamaServer

# -- the fast lane stays honest -------------------------------------------------------------------
# What makes a test slow, whatever file it is in: it loads the embedded model, starts a model server,
# runs Snakemake (a dry run excepted), DVC or SLURM. A test that does any of these without the `slow`
# marker fails, naming what it did, so `pytest -m "not slow"` stays fast. (A `socsim` stage in a
# subprocess is not caught here: those tests are marked by hand; `--durations` shows a straggler.)
SLOW_PROGRAMS = {"snakemake", "dvc", "sbatch", "srun", "slurmctld", "slurmd", "munged", "llama_cpp.server"}
DRY_RUN = {"-n", "--dry-run", "--dryrun", "--summary", "--lint", "--list-target-rules"}


def slow_reason(args) -> str | None:
    """Why a command line makes a test slow (None: it does not)."""
    words = [str(a) for a in ([args] if isinstance(args, str | os.PathLike) else args)]
    if len(words) == 1:
        words = words[0].split()
    names = [os.path.basename(w) for w in words]
    for name in names:
        if name in SLOW_PROGRAMS and not (name == "snakemake" and DRY_RUN & set(names)):
            return f"runs {name}"
    return None


# The lane shows in the folder: tests/unit and tests/studies hold fast tests only; a slow test lives in
# tests/pipeline (Snakemake, DVC, SLURM, servers the run starts), tests/real (the real model, a real server) or
# tests/long (long computations without a language model: a statistic's known-answer rates over hundreds of
# simulated data sets, the paper params' plan; the planted model's chains, its server in a thread of the test;
# the control run, params.control.yaml on Snakemake with the planted model's servers, made once for all
# workers). The first two need the machine alone (cores, ports, daemons): they are
# `serial`, run one at a time after the others (`make test`).
SERIAL_FOLDERS = ("pipeline", "real")
SLOW_FOLDERS = (*SERIAL_FOLDERS, "long")
TESTS = Path(__file__).resolve().parent


def folder_of(item) -> str:
    return Path(item.path).resolve().relative_to(TESTS).parts[0]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") and folder_of(item) in SERIAL_FOLDERS:
            item.add_marker(pytest.mark.serial)


@pytest.fixture(autouse=True)
def _fast_tests_stay_fast(request, monkeypatch):
    if request.node.get_closest_marker("slow"):
        folder = folder_of(request.node)
        if folder not in SLOW_FOLDERS:
            pytest.fail(
                f"{request.node.nodeid} is slow: move it to tests/{' or tests/'.join(SLOW_FOLDERS)} (tests/{folder} "
                "holds fast tests only)",
                pytrace=False,
            )
        return
    import socsim.llm.embedded as embedded

    def refuse(what: str):
        pytest.fail(f"{request.node.nodeid} {what}: mark it @pytest.mark.slow", pytrace=False)

    monkeypatch.setattr(embedded, "_prefix_state_llama_class", lambda: refuse("loads the embedded model"))
    popen_init = subprocess.Popen.__init__

    def guarded_init(self, args, *a, **kw):
        if why := slow_reason(args):
            refuse(why)
        popen_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_init)


@pytest.fixture(scope="session", autouse=True)
def planted_materials():
    """The planted control in this process (its policies called directly, its server in a thread: support.planted)
    answers from this repository's study materials, declared as a served project's are (socsim.planted.use_materials;
    a server the run starts gets its project's on its command line)."""
    from socsim import planted
    from support.project import ROOT

    planted.use_materials(ROOT / "data")
    yield
    planted.use_materials(None)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """One SLURM cluster for the session (tests/pipeline/slurm_cluster.py): packages installed if needed (as root;
    skipped with the reason elsewhere, never skipped under CI=true), daemons stopped at the end."""
    from slurm_cluster import SlurmCluster, ensure_packages

    ensure_packages()
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    cluster.start()
    print(
        f"\nSLURM cluster up in {cluster.startup_seconds:.1f} s (node {cluster.node}, partition "
        f"{cluster.partition}, {cluster.workdir})"
    )
    yield cluster
    cluster.stop()
    print(f"\nSLURM cluster stopped in {cluster.shutdown_seconds:.1f} s")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny config run once for real on the embedded model (support.recorded): the run the executor tests
    replay instead of asking the model again. SOCSIM_TEST_RECORDED=<a recorded project> re-uses one of an earlier
    session (while iterating on a pipeline test; of the same code and params, or the replays stop)."""
    from support.recorded import TinyRun, record, source_commit

    if earlier := os.environ.get("SOCSIM_TEST_RECORDED"):
        console = Path(earlier) / "console.txt"
        return TinyRun(Path(earlier), 0.0, source_commit(), console.read_text() if console.is_file() else "")
    run = record(tmp_path_factory.mktemp("recorded") / "proj")
    print(f"\nthe recorded tiny run: snakemake {run.seconds:.0f} s in {run.project}")
    return run


@pytest.fixture(scope="session")
def llama_server():
    server = LlamaServer().start()
    yield server
    server.stop()


@pytest.fixture
def env_no_proxy():
    env = dict(os.environ)
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        env.pop(k, None)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env
