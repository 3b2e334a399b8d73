"""The consumers: a stage's lease on a server (started, or joined, and waited for), a standalone server."""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.serving.engines import engine, needs_key
from socsim.serving.state import (
    HEARTBEAT_S,
    KEY_ENV,
    REDACTED,
    ServeError,
    _alive,
    _Heartbeat,
    _locked,
    _me,
    _read,
    _write,
    folder,
)

if TYPE_CHECKING:
    from socsim.llm.cache import CallCache
    from socsim.llm.client import Backend, LLMClient
    from socsim.llm.types import Completion, Request
    from socsim.models import ModelSpec


# -- consumers -------------------------------------------------------------------------------------


_LEASES = itertools.count()  # one process may hold several leases on one server (two stages' contexts)


LAUNCHER_ENV = "SOCSIM_SERVE_LAUNCHER"


def launcher() -> str:
    """Where a server starts: slurm (its own SLURM job) when the run's jobs are SLURM jobs (the Snakefile
    says so through SOCSIM_SERVE_LAUNCHER for a cluster executor), else local (this machine, also inside
    an interactive allocation)."""
    return "slurm" if os.environ.get(LAUNCHER_ENV) == "slurm" else "local"


@dataclass
class Lease:
    """A consumer's hold on a running server: its URL, the key variable when it needs one, its record."""

    name: str
    url: str
    api_key_env: str | None
    record: dict[str, Any]
    _beat: _Heartbeat | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._beat is not None:
            self._beat.stop()
            self._beat = None

    def failure(self) -> str | None:
        """What happened to the server when calls to it fail (it died: exit status and its log's tail)."""
        deadline = time.monotonic() + 3 * HEARTBEAT_S + 2  # the supervisor may not have seen it yet
        while True:
            state = _read(folder(self.name) / "server.json")
            if state.get("url") != self.url:
                return None
            if state.get("status") in ("died", "failed", "stopped"):
                return f"its {self.record.get('engine')} server {state['status']}: {state.get('reason', '')}".strip()
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)


def _launch(d: Path, spec: ModelSpec, how: str) -> dict[str, Any]:
    s = spec.serve or {}
    host = "0.0.0.0" if how == "slurm" else s.get("host", "127.0.0.1")
    if needs_key(host) and not os.environ.get(KEY_ENV):
        raise ServeError(
            f"models.{spec.name}: a server listening on {host} needs the run's API key, and {KEY_ENV} is not set; "
            f"run through Snakemake (which makes one per run) or export {KEY_ENV}"
        )
    launch = {
        "name": spec.name,
        "model_id": spec.model_id,
        "backend": spec.backend,
        "serve": s,
        "n_ctx": spec.n_ctx,
        "host": host,
        "launcher": how,
    }
    _write(d / "launch.json", launch)
    for f in ("stop", "supervisor.alive"):
        (d / f).unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "socsim.serving", "supervise", str(d)]
    log = d / "supervisor.log"
    if how == "slurm":
        sb = [
            "sbatch",
            "--parsable",
            f"--job-name=socsim-serve-{spec.name}",
            f"--output={log}",
            f"--chdir={Path.cwd()}",
        ]
        sb += [f"--gpus={s['gpus']}"] if s.get("gpus") else []
        sb += list(s.get("slurm_args") or [])
        out = subprocess.run([*sb, "--wrap", "exec " + shlex.join(cmd)], capture_output=True, text=True)
        if out.returncode != 0:
            raise ServeError(f"models.{spec.name}: sbatch of its server job failed: {out.stderr.strip()}")
        state = {"status": "queued", "slurm_job": out.stdout.strip().split(";")[0], "since": time.time()}
    else:
        with open(log, "ab") as fh:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        state = {"status": "starting", "supervisor": f"{socket.gethostname()}.{proc.pid}", "since": time.time()}
    _write(d / "server.json", state)
    return state


def acquire(spec: ModelSpec) -> Lease:
    """Take a lease on a served model's server, starting it when none is alive, and wait until it answers."""
    s = spec.serve or {}
    engine_name = s["engine"]
    how = launcher()
    if how == "local":
        engine(engine_name, s)  # a clear error now where it is not installed
    d = folder(spec.name)
    while True:
        with _locked(d):
            state = _read(d / "server.json")
            going = _supervised(d, state) and (state.get("status") == "stopping" or (d / "stop").exists())
            if not going:
                if not _running(d, state):
                    _kill_orphan(state)
                    state = _launch(d, spec, how)
                beat = _Heartbeat(d / "leases" / f"{_me()}~{next(_LEASES)}")
                break
        time.sleep(0.2)  # the last server is stopping (its port and GPUs may be the ones to use): wait
    try:
        state = _wait_ready(d, spec, float(s.get("ready_timeout", 900)))
    except BaseException:
        beat.stop()
        raise
    host = _read(d / "launch.json").get("host", "127.0.0.1")
    return Lease(spec.name, state["url"], KEY_ENV if needs_key(host) else None, _record(state), beat)


@contextlib.contextmanager
def standalone(spec: ModelSpec, timeout: float = 120.0) -> Iterator[tuple[ModelSpec, Lease]]:
    """A served model outside a run (benchmarks, tests): its server started in a scratch folder (its state
    there, not in the project), the spec pointed at it, and on leaving, the lease dropped and the server
    waited for until it has stopped (at once: no `linger`)."""
    import tempfile
    from dataclasses import replace

    serve = {**(spec.serve or {}), "linger": 0}
    spec = replace(spec, serve=serve)
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="socsim-serve-") as tmp:
        os.chdir(tmp)
        try:
            lease = acquire(spec)
            try:
                yield replace(spec, endpoints=(lease.url,), api_key_env=lease.api_key_env, serve=None), lease
            finally:
                lease.release()
                deadline = time.monotonic() + timeout
                state = _read(folder(spec.name) / "server.json")
                while time.monotonic() < deadline and state.get("status") not in ("stopped", "died", "failed"):
                    time.sleep(0.2)
                    state = _read(folder(spec.name) / "server.json")
                if state.get("status") in ("died", "failed"):  # its log goes with the scratch folder: say it here
                    print(
                        f"socsim: its {state.get('engine')} server {state['status']}: {state.get('reason')}",
                        file=sys.stderr,
                    )
        finally:
            os.chdir(old)


def _supervised(d: Path, state: Mapping[str, Any]) -> bool:
    """Whether the server's supervisor is alive."""
    mark = state.get("supervisor")
    return isinstance(mark, str) and _alive(mark, d / "supervisor.alive")


def _running(d: Path, state: Mapping[str, Any], statuses: Sequence[str] = ("starting", "ready")) -> bool:
    """Whether a supervisor is alive (or its SLURM job is queued) and its server is not going away."""
    status = state.get("status")
    if status == "queued":
        return _slurm_pending(str(state.get("slurm_job")))
    if status not in statuses or (d / "stop").exists() and "stopping" not in statuses:
        return False
    return _supervised(d, state)


def _kill_orphan(state: Mapping[str, Any]) -> None:
    """An engine whose supervisor died without stopping it (on this host): stop its process group."""
    pid, mark = state.get("engine_pid"), str(state.get("supervisor", ""))
    # Its group, also where the engine itself is gone: vLLM's EngineCore and workers outlive its API server.
    if isinstance(pid, int) and mark.rpartition(".")[0] == socket.gethostname():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _slurm_pending(job: str) -> bool:
    """Whether a SLURM job is still queued or running (a failing squeue: assumed so, asked again later)."""
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True)
    if out.returncode != 0 and "Invalid job id" not in out.stderr:
        return True
    return out.stdout.strip() in ("PENDING", "CONFIGURING", "RUNNING")


def _wait_ready(d: Path, spec: ModelSpec, ready_timeout: float) -> dict[str, Any]:
    """Until server.json says ready (its URL answers). A failure, a dead supervisor, a SLURM server job
    that ended, or no answer within ready_timeout (a queued SLURM job's wait included) raise, with the
    tail of the server's log."""
    engine_name = (spec.serve or {}).get("engine")
    start, checked = time.monotonic(), 0.0
    while True:
        state = _read(d / "server.json")
        status = state.get("status")
        if status == "ready":
            return state
        if status in ("failed", "died", "stopped"):
            raise ServeError(f"models.{spec.name}: its {engine_name} server {status}: {state.get('reason')}")
        waited = time.monotonic() - start
        if waited > ready_timeout + 30:
            where = f"SLURM job {state['slurm_job']} still {status}" if state.get("slurm_job") else "no answer"
            raise ServeError(
                f"models.{spec.name}: its server is not ready after {ready_timeout:.0f} s ({where}); its log:\n"
                + tail(d / "server.log")
            )
        if waited - checked > 5:  # now and then: is whoever starts it still there?
            checked = waited
            if not _running(d, state):
                what = f"SLURM server job {state.get('slurm_job')}" if state.get("slurm_job") else "supervisor"
                raise ServeError(
                    f"models.{spec.name}: its server's {what} ended before it was ready; its log:\n"
                    + tail(d / "supervisor.log")
                )
        time.sleep(0.2)


def _record(state: Mapping[str, Any]) -> dict[str, Any]:
    """What provenance and metrics record of a served model's server (the key is never in it)."""
    keys = (
        "engine",
        "version",
        "distribution",
        "python",
        "command",
        "url",
        "launcher",
        "slurm_job",
        "gpus",
        "prefix_caching",
        "deterministic",
        "sampling_defaults",
        "structured_outputs",
        "chunked_prefill",
    )
    return {k: state[k] for k in keys if state.get(k) is not None}


# Where and how the run's server was started, not what it computes: its URL, who launched it (local or a SLURM job),
# its command line (with host and port) and the GPUs it was given (CUDA_VISIBLE_DEVICES, where socsim assigns them).
# The stage's metrics record them (ModelRecord.server); an artifact's provenance records the rest, so a local and a
# SLURM run of the same params write the same bytes.
LAUNCH_KEYS = ("url", "launcher", "slurm_job", "command", "gpus")


def computed_by(record: Mapping[str, Any]) -> dict[str, Any]:
    """A server's record less where and how it was started (LAUNCH_KEYS): the engine as it computed."""
    return {k: v for k, v in record.items() if k not in LAUNCH_KEYS}


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    key = os.environ.get(KEY_ENV)
    out = "\n".join(text[-lines:])
    return out.replace(key, REDACTED) if key else out


class LeasedBackend:
    """A served model's backend with its lease on the run's own server: the inner backend (a server
    backend pointed at the lease's URL) answers; `release()` drops the lease when the stage's job ends
    (`aclose()` only closes connections: a client reopens them on its next call, the lease stays);
    `record` and `failure()` say how the server was started and what happened to it. The rest of the
    Backend interface is the inner backend's, forwarded one by one (its calls and its optional capabilities)."""

    def __init__(self, lease: Lease, inner: Backend) -> None:
        self.lease, self.inner = lease, inner

    @property
    def retries(self) -> int:
        return self.inner.retries

    @property
    def name(self) -> str | None:
        return self.inner.name

    @property
    def engine(self) -> dict[str, Any] | None:
        return self.inner.engine

    @property
    def canaried(self) -> list[dict[str, Any]] | None:
        return self.inner.canaried

    @property
    def replayed_from(self) -> str | None:
        return self.inner.replayed_from

    @property
    def in_flight(self) -> int | None:
        return self.inner.in_flight

    def endpoint_stats(self) -> dict[str, dict[str, int | bool]] | None:
        return self.inner.endpoint_stats()

    def canary_of(self) -> Callable[[], Awaitable[list[dict[str, Any]]]] | None:
        return self.inner.canary_of()

    @property
    def record(self) -> dict[str, Any]:
        return self.lease.record

    def failure(self) -> str | None:
        return self.lease.failure()

    def release(self) -> None:
        self.lease.release()

    async def probe(self) -> dict[str, Any]:
        return await self.inner.probe()

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def complete(self, request: Request) -> Completion:
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def served_client(params: Mapping[str, Any], spec: ModelSpec, cache: CallCache | None = None) -> LLMClient:
    """The client of a served model (`serve:`): a lease on the run's own server of it (started, or joined,
    and waited for, now), held by its backend from construction (socsim.models.client: `LeasedBackend`);
    `cache`: the call cache it shares (None: none)."""
    from socsim import models

    lease = acquire(spec)
    try:
        served = replace(spec, endpoints=(lease.url,), api_key_env=lease.api_key_env)
        return models.client(params, served, "", cache=cache, wrap=lambda backend: LeasedBackend(lease, backend))
    except BaseException:
        lease.release()
        raise
