"""The servers' state on files: their folders, locks, heartbeats and liveness (shared by every part)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.llm.errors import LLMError

if TYPE_CHECKING:
    pass


STATE = Path(".socsim") / "serve"  # relative to the project folder (the working folder of every job)
KEY_ENV = "SOCSIM_RUN_KEY"  # the run's API key, made by the Snakefile; never written anywhere
REDACTED = "<run key>"
LOOPBACK = ("127.0.0.1", "localhost")
HEARTBEAT_S = 1.0  # how often leases, the owner and the supervisor show they are alive
# A heartbeat older than this is a dead process (across hosts, where pids cannot be asked); generous,
# as a network filesystem may show a file's mtime a minute late (NFS attribute caching).
STALE_S = 120.0
STOP_GRACE_S = 30.0  # SIGTERM, then SIGKILL after this


class ServeError(LLMError):
    """A served model's server cannot be started, did not become ready, or died."""


# -- state on files ------------------------------------------------------------------------------


def folder(name: str, root: Path | None = None) -> Path:
    return (root or Path.cwd()) / STATE / name


def _read(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    except (OSError, ValueError):
        return {}


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(d: Path) -> Iterator[None]:
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is not alive
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def _me() -> str:
    return f"{socket.gethostname()}.{os.getpid()}"


def _alive(mark: str, path: Path) -> bool:
    """Whether the process of a heartbeat file ("<host>.<pid>") is alive: by its pid on this host, else by
    how fresh the file is."""
    host, _, pid = mark.split("~")[0].rpartition(".")  # a lease is "<host>.<pid>~<n>"
    if host == socket.gethostname() and pid.isdigit():
        return _pid_alive(int(pid))
    try:
        return time.time() - path.stat().st_mtime < STALE_S
    except OSError:
        return False


class _Heartbeat:
    """Touches a file every HEARTBEAT_S seconds from a daemon thread (until stopped or the process ends)."""

    def __init__(self, path: Path):
        self.path, self._stop = path, threading.Event()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                self.path.touch()

    def stop(self, remove: bool = True) -> None:
        self._stop.set()
        self._thread.join()  # no touch after this: a removed file stays removed
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()
