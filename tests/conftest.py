"""Shared fixtures: the real embedded model, real llama.cpp HTTP servers on loopback, stage runs."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from socsim.llm.embedded import default_model_path
from socsim.llm.types import Completion

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` serving the embedded GGUF on a loopback port."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> "LlamaServer":
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", "2048", "--verbose", "false"]
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # share the cores politely with the tests
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/v1/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("llama_cpp.server did not come up in time")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def llama_server():
    server = LlamaServer().start()
    yield server
    server.stop()


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


def kill_after_cached_calls(cmd: list[str], cache: Path, calls: int, timeout: float = 300) -> int:
    """Start a stage, SIGKILL it once `calls` model calls are in its cache, return how many finished."""
    import signal

    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while cache_rows(cache) < calls and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the stage finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
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
