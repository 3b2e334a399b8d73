"""Fixtures (a real llama.cpp HTTP server on loopback, a SLURM cluster, an environment without proxies) and
the fast lane's guard. The helpers the tests import live in tests/support/ (`from support.project import
ROOT`, ...)."""

from __future__ import annotations

import os
import subprocess

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


@pytest.fixture(autouse=True)
def _fast_tests_stay_fast(request, monkeypatch):
    if request.node.get_closest_marker("slow"):
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
