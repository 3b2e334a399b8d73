"""Shared fixtures: the real embedded model, real llama.cpp HTTP servers on loopback, stage runs."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from socsim.llm.local import SERVED_MODEL_ID, LlamaServer, free_port  # noqa: F401 - used by the test modules
from socsim.llm.types import Completion

ROOT = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)  # the venv's tools (snakemake, dvc, socsim)


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


def tool_env() -> dict:
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        DVC_NO_ANALYTICS="1",
    )
    return env


def sh(
    args: list[str], cwd: Path, check: bool = True, timeout: float = 2400, env: dict | None = None
) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env or tool_env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def copy_project(dest: Path) -> Path:
    """A fresh git repository at `dest` holding the project's tracked and untracked-but-not-ignored files."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    (dest / "dvc.lock").unlink(missing_ok=True)
    sh(["git", "init", "-q"], dest)
    sh(["git", "add", "-A"], dest)
    sh(["git", "commit", "-qm", "init"], dest)
    return dest


def write_params(path: Path, **sections) -> Path:
    """A params file: the repository's defaults, overridden section by section, cache under tmp."""
    from socsim.config import deep_merge

    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    base["llm"]["cache_path"] = str(path.parent / "cache" / "llm.sqlite")
    params = deep_merge(base, sections)
    path.write_text(yaml.safe_dump(params))
    return path


def served(endpoints: list, model_id: str = SERVED_MODEL_ID, **extra) -> dict:
    """A models-registry entry for loopback llama-cpp-python servers (LlamaServer) of the shipped GGUF."""
    return {"backend": "openai", "dialect": "llama_cpp", "model_id": model_id, "endpoints": list(endpoints), **extra}


def socsim_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "socsim.cli", *args]


def run_socsim(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(socsim_cmd(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kw)


def read_metrics(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def cache_rows(cache_path: Path) -> int:
    import sqlite3

    if not Path(cache_path).exists():
        return 0
    conn = sqlite3.connect(str(cache_path), timeout=30)
    try:
        return conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@pytest.fixture
def env_no_proxy():
    env = dict(os.environ)
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        env.pop(k, None)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def signal_after_cached_calls(
    cmd: list[str], cache: Path, calls: int, sig: int, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Start a stage, send it `sig` once `calls` model calls are in its cache, wait for it to end:
    its exit code and stderr."""
    import tempfile

    with tempfile.TemporaryFile("w+") as err:  # a file, not a pipe: a full pipe would stall the stage
        # SIGINT at its default in the child: a test run in the background of a non-interactive shell
        # inherits SIGINT ignored, and Python would then keep ignoring Ctrl-C.
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + timeout
        while cache_rows(cache) < calls and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the stage finished before it could be signalled"
        proc.send_signal(sig)
        proc.wait(timeout=120)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, "", err.read())


def kill_after_cached_calls(
    cmd: list[str], cache: Path, calls: int, timeout: float = 300, sig: int = signal.SIGKILL
) -> int:
    """Start a stage, send it `sig` (SIGKILL: no clean-up at all) once `calls` model calls are in its
    cache, return how many finished."""
    signal_after_cached_calls(cmd, cache, calls, sig, timeout)
    return cache_rows(cache)


class Scripted:
    """The one scripted test backend: its speakers follow a script, reply(request) -> text; it records
    every request. No model: what the fast lane's tests use in place of the LLM layer's backends."""

    retries = 0

    def __init__(self, reply, name=None):
        self.reply, self.name, self.requests, self.closed = reply, name, [], 0

    async def probe(self):
        return self.identity()

    def identity(self):
        return {"backend": "scripted"} if self.name is None else {"backend": "scripted", "model": self.name}

    async def complete(self, request):
        self.requests.append(request)
        await asyncio.sleep(0)
        return Completion(text=self.reply(request), completion_tokens=3)

    async def aclose(self):
        self.closed += 1


def scripted_client(reply, name="scripted"):
    """An LLMClient (no call cache) over the scripted backend."""
    from socsim.llm import LLMClient

    return LLMClient(Scripted(reply, name), None)
