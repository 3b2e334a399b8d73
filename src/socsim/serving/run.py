"""The run (Snakemake): the run's key, which servers it starts for which jobs, stopping them all at its end."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.serving.leases import _kill_orphan, _running, _supervised
from socsim.serving.state import KEY_ENV, STATE, STOP_GRACE_S, _alive, _Heartbeat, _me, _read, _write, folder

if TYPE_CHECKING:
    pass


# -- the run (Snakemake) ---------------------------------------------------------------------------

_owner: _Heartbeat | None = None


def run_environment(params: Mapping[str, Any]) -> None:
    """At parse time of a run: a fresh API key for the run's servers (inherited by every job through the
    environment, and by SLURM jobs through sbatch's exported environment) when any served model may need
    one; a job's own parse keeps the key of its run."""
    if any("serve" in e for e in params["models"].values()):
        os.environ.setdefault(KEY_ENV, secrets.token_urlsafe(24))


def start_run(consumers: Mapping[str, Sequence[str]], root: Path | None = None) -> None:
    """Before the first job (Snakemake's onstart): this process owns the run's servers (they stop when it
    ends), and each served model's consumers are the outputs of the jobs that will call it."""
    global _owner
    base = (root or Path.cwd()) / STATE
    base.mkdir(parents=True, exist_ok=True)
    for name, outputs in consumers.items():
        d = folder(name, root)
        d.mkdir(parents=True, exist_ok=True)
        _write(d / "consumers.json", {"outputs": sorted(outputs), "since": time.time()})
        with contextlib.suppress(OSError):
            (d / "stop").unlink()
    _write(base / "owner.json", {"owner": _me()})
    _owner = _Heartbeat(base / "owner.alive")


def stop_run(root: Path | None = None, timeout: float = STOP_GRACE_S + 15) -> list[str]:
    """After the run (onsuccess / onerror, also after Ctrl-C or SIGTERM): ask every server to stop and wait
    until they have; SLURM server jobs that do not stop in time are cancelled. Returns what was stopped."""
    global _owner
    base = (root or Path.cwd()) / STATE
    live = ("queued", "starting", "ready", "stopping")
    stopped = []
    for d in sorted(p for p in base.glob("*") if p.is_dir()):
        state = _read(d / "server.json")
        if not _supervised(d, state):
            _kill_orphan(state)
        (d / "stop").touch()
        (d / "consumers.json").unlink(missing_ok=True)
        if state.get("status") in live:
            stopped.append(d.name)
    deadline = time.monotonic() + timeout
    for name in stopped:
        d = base / name
        while time.monotonic() < deadline:
            state = _read(d / "server.json")
            if state.get("status") == "queued" or not _running(d, state, live):
                break
            time.sleep(0.2)
        state = _read(d / "server.json")
        if state.get("slurm_job") and state.get("status") in live:
            subprocess.run(["scancel", str(state["slurm_job"])], check=False)  # queued, or not stopping in time
    if _owner is not None:
        _owner.stop()
        _owner = None
    (base / "owner.json").unlink(missing_ok=True)
    return stopped


def failures(root: Path | None = None) -> str:
    """The run's servers that failed to start or died, each with why and the tail of its log ("": none);
    Snakemake's onerror prints it, so the console says what the job logs say."""
    base = (root or Path.cwd()) / STATE
    out = []
    for d in sorted(p for p in base.glob("*") if p.is_dir()):
        state = _read(d / "server.json")
        if state.get("status") in ("failed", "died"):
            what = f"the {state.get('engine', '')} server of models.{d.name} {state['status']}"
            out.append(f"socsim: {what}: {state.get('reason')}")
    return "\n".join(out)


def _owner_gone(base: Path) -> bool | None:
    """Whether the run that owns the servers has ended (None: no Snakemake run owns them)."""
    owner = _read(base / "owner.json").get("owner")
    if not owner:
        return None
    return not _alive(owner, base / "owner.alive")
