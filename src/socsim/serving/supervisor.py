"""The supervisor (`python -m socsim.serving supervise <folder>`): runs the engine in its own process
group, records it, and stops it when no consumer is left or to come."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.llm.errors import LLMError
from socsim.llm.local import free_port
from socsim.serving.engines import Engine, command, engine, redact
from socsim.serving.leases import tail
from socsim.serving.run import _owner_gone
from socsim.serving.state import (
    KEY_ENV,
    LOOPBACK,
    REDACTED,
    STOP_GRACE_S,
    ServeError,
    _alive,
    _Heartbeat,
    _locked,
    _me,
    _read,
    _write,
)

if TYPE_CHECKING:
    pass


# -- the supervisor ---------------------------------------------------------------------------------


def _health(url: str, backend: str) -> bool:
    import urllib.request

    key = os.environ.get(KEY_ENV)
    for path in ("/info", "/v1/models") if backend == "tgi" else ("/v1/models", "/health"):
        req = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {key}"} if key else {})
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            continue
    return False


def visible_gpus() -> list[str]:
    """This machine's GPUs as CUDA names them: CUDA_VISIBLE_DEVICES where set (an allocation's), else
    every GPU nvidia-smi lists; [] without GPUs."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [g for g in given.split(",") if g.strip()]
    if not shutil.which("nvidia-smi"):
        return []
    out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else []


def assign_gpus(base: Path, name: str, n: int) -> list[str]:
    """Give the server `name` n GPUs of this machine that no other live server of the run holds (several
    servers side by side on one node); the assignment is freed when its supervisor ends."""
    d = base / name
    with _locked(base):
        held = _read(base / "gpus.json")
        for other in list(held):
            state = _read(base / other / "server.json")
            if other == name or not _alive(str(state.get("supervisor", "")), base / other / "supervisor.alive"):
                del held[other]
        taken = {g for gs in held.values() for g in gs}
        free = [g for g in visible_gpus() if g not in taken]
        if len(free) < n:
            holders = ", ".join(f"{k}: {','.join(v)}" for k, v in sorted(held.items())) or "none"
            raise ServeError(
                f"models.{name}: its server needs {n} GPU(s) and {len(free)} of this machine's "
                f"{len(visible_gpus())} are free (held by the run's other servers: {holders}); run fewer studies "
                "or models at once, or give it fewer gpus"
            )
        mine = free[:n]
        held[name] = mine
        _write(base / "gpus.json", held)
    _write(d / "gpus.json", {"gpus": mine})
    return mine


def engine_record(eng: Engine, python: str | None) -> dict[str, Any]:
    """What the server's record (server.json, and so provenance and metrics) says of the engine itself: its
    name, version, interpreter, and `distribution`, the installed package: name, version, hash and what the
    hash is of (`Engine.package`; None for an engine that is a program, TGI)."""
    return {"engine": eng.name, "version": eng.version(python), "distribution": eng.package(python), "python": python}


def supervise(d: Path) -> int:
    """Run one server until it is no longer needed (see the module's docstring); returns the exit status."""
    from socsim.models import ModelSpec

    launch = _read(d / "launch.json")
    serve = launch["serve"]
    spec = ModelSpec(
        name=launch["name"], backend=launch["backend"], model_id=launch["model_id"], n_ctx=launch["n_ctx"], serve=serve
    )
    host = launch["host"]
    beat = _Heartbeat(d / "supervisor.alive")
    state: dict[str, Any] = {**_read(d / "server.json"), "supervisor": _me(), "launcher": launch["launcher"]}
    base = d.parent
    signals: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: signals.append(signum))

    def publish(**changes: Any) -> None:
        state.update(changes)
        _write(d / "server.json", state)

    try:
        eng = engine(serve["engine"], serve)
        python = eng.python(serve)
        port = serve.get("port") or free_port(host)
        argv, env, flags = command(spec, host, port)
        if serve.get("gpus") and launch["launcher"] == "local":  # a SLURM job's allocation has its own
            env["CUDA_VISIBLE_DEVICES"] = ",".join(assign_gpus(base, launch["name"], int(serve["gpus"])))
            flags["gpus"] = env["CUDA_VISIBLE_DEVICES"]
    except (ServeError, LLMError, OSError) as exc:
        publish(status="failed", reason=str(exc))
        beat.stop(remove=False)
        return 1
    reach = socket.gethostname() if host == "0.0.0.0" else ("127.0.0.1" if host in LOOPBACK else host)
    url = f"http://{reach}:{port}"
    publish(
        status="starting",
        **engine_record(eng, python),
        command=redact(argv),
        url=url,
        host=host,
        since=time.time(),
        **flags,
    )
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE", **env},
        start_new_session=True,  # its own process group: stopping it stops its workers too
        preexec_fn=_death_signal(),
    )
    copier = threading.Thread(target=_copy_log, args=(proc, d / "server.log"), daemon=True)
    copier.start()
    publish(engine_pid=proc.pid)
    return _watch(d, proc, copier, url, launch, state, publish, signals, beat)


def _watch(
    d: Path,
    proc: subprocess.Popen[bytes],
    copier: threading.Thread,
    url: str,
    launch: Mapping[str, Any],
    state: Mapping[str, Any],
    publish: Callable[..., None],
    signals: Sequence[int],
    beat: _Heartbeat,
) -> int:
    """The supervisor's loop: the engine watched until it dies, a signal comes, it does not get ready in
    time, or no consumer needs it any more; then stopped and its end published. Returns the exit status."""
    serve, base = launch["serve"], d.parent
    started, idle_since = time.monotonic(), None
    ready_timeout = float(serve.get("ready_timeout", 900))
    linger = float(serve.get("linger", 60))
    reason = ""
    try:
        while True:
            code = proc.poll()
            if code is not None:
                # What it started is left in its group (vLLM's EngineCore and workers), holding the log's pipe.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                copier.join(timeout=5)  # its last lines into the log before the tail is read
                what = "failed" if state["status"] == "starting" else "died"
                publish(status=what, reason=f"the engine exited with status {code}; its log:\n{tail(d / 'server.log')}")
                return 1
            if signals:
                reason = f"signal {signals[0]}"
                break
            if state["status"] == "starting":
                if _health(url, launch["backend"]):
                    publish(status="ready", ready_s=round(time.monotonic() - started, 1))
                elif time.monotonic() - started > ready_timeout:
                    _stop(proc)
                    copier.join(timeout=5)
                    publish(
                        status="failed",
                        reason=f"not answering after {ready_timeout:.0f} s (ready_timeout); its log:\n"
                        + tail(d / "server.log"),
                    )
                    return 1
            with _locked(d):
                done = _done(d, base)
                if done is None:
                    idle_since = None
                elif done or (idle_since is not None and time.monotonic() - idle_since >= linger):
                    reason = done or f"no consumer for {linger:.0f} s"
                    publish(status="stopping", reason=reason)
                    break
                elif idle_since is None:
                    idle_since = time.monotonic()
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            _stop(proc)
            publish(status="stopped", reason=reason or "stopped", exit=proc.returncode)
        beat.stop(remove=False)
    return 0


def _death_signal() -> Any:
    """A function for the engine to run before exec: SIGKILL when its supervisor dies, however it dies
    (Linux PR_SET_PDEATHSIG). libc is loaded here, in the supervisor, so the child only makes the call."""
    import ctypes

    try:
        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)


def _copy_log(proc: subprocess.Popen[bytes], path: Path) -> None:
    """The engine's output into server.log, with the run's key replaced wherever it shows (TGI and SGLang
    print their arguments)."""
    key = os.environ.get(KEY_ENV, "").encode()
    assert proc.stdout is not None
    with open(path, "ab") as log:
        for line in proc.stdout:
            log.write(line.replace(key, REDACTED.encode()) if key else line)
            log.flush()


def _done(d: Path, base: Path) -> str | None:
    """Why the server is no longer needed ("" : no consumer now, but one may come), or None (needed)."""
    if (d / "stop").exists():
        return "the run asked it to stop"
    if _owner_gone(base):  # the run has ended (its jobs, if any are left, are orphans it will run again)
        return "the run has ended"
    leases = d / "leases"
    live = False
    for f in leases.glob("*") if leases.is_dir() else []:
        if _alive(f.name, f):
            live = True
        else:
            f.unlink(missing_ok=True)
    if live:
        return None
    owner_gone = _owner_gone(base)
    consumers = _read(d / "consumers.json")
    if "outputs" in consumers and all(_written(Path(p), consumers["since"]) for p in consumers["outputs"]):
        return "every job that calls it is done"
    if owner_gone is False:
        return None  # the run goes on and a consumer is still to come
    return ""  # no run owns it: linger


def _written(path: Path, since: float) -> bool:
    """Whether a job's output was written in this run (a file, or a folder's own entry)."""
    try:
        return path.stat().st_mtime >= since - 1
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the engine's process group, SIGKILL after the grace."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # workers left in the group
        os.killpg(proc.pid, signal.SIGKILL)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "supervise":
        print("usage: python -m socsim.serving supervise <server folder>", file=sys.stderr)
        return 2
    return supervise(Path(args[1]))
