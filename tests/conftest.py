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

from socsim.llm.local import LlamaServer, free_port  # noqa: F401 - used by the test modules
from socsim.llm.types import Completion

ROOT = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)  # the venv's tools (snakemake, dvc, socsim)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """One SLURM cluster for the session (tests/slurm_cluster.py): packages installed if needed (as root;
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


def sh(args: list[str], cwd: Path, check: bool = True, timeout: float = 2400) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=tool_env(), capture_output=True, text=True, timeout=timeout)
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
    """A backend whose speakers follow a script: reply(request) -> text; records every request."""

    retries = 0

    def __init__(self, reply):
        self.reply, self.requests, self.closed = reply, [], 0

    async def probe(self):
        return self.identity()

    def identity(self):
        return {"backend": "scripted"}

    async def complete(self, request):
        self.requests.append(request)
        await asyncio.sleep(0)
        return Completion(text=self.reply(request), completion_tokens=3)

    async def aclose(self):
        self.closed += 1
