"""A loopback OpenAI-compatible server on the embedded model: llama-cpp-python's own server serving
the GGUF that the embedded backend uses. The tests and benchmarks start it to exercise the server path
(pool, failover, API keys, SLURM jobs sharing one server) with real HTTP on a machine without a GPU.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

from socsim.llm.embedded import default_model_path

# The id the server lists under /v1/models (--model_alias): the Hub repository of the shipped GGUF, as a
# vLLM server of that model would name it. A registry entry of this server has it as model_id.
SERVED_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now on `host` (0.0.0.0: on every address)."""
    with socket.socket() as s:
        s.bind(("" if host == "0.0.0.0" else host, 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """`python -m llama_cpp.server` serving the embedded GGUF on a loopback port (stopped with SIGKILL)."""

    def __init__(
        self,
        port: int | None = None,
        api_key: str | None = None,
        n_threads: int | None = None,
        cpu: int | None = None,
        alias: str = SERVED_MODEL_ID,
    ):
        self.alias = alias  # the model id it serves
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_key, self.n_threads, self.cpu = api_key, n_threads, cpu
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> LlamaServer:
        """Start it (with `cpu`: pinned to that core by taskset) and wait until it lists its model."""
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "2048",
            "--model_alias",
            self.alias,
            "--verbose",
            "false",
        ]
        cmd += ["--api_key", self.api_key] if self.api_key else []
        cmd += ["--n_threads", str(self.n_threads)] if self.n_threads else []
        cmd = ["taskset", "-c", str(self.cpu), *cmd] if self.cpu is not None else cmd
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # share the cores politely with the tests
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}")
            try:
                req = urllib.request.Request(self.url + "/v1/models", headers=headers)
                with urllib.request.urlopen(req, timeout=2) as resp:
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
