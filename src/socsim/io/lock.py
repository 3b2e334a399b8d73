"""One writer per output: an exclusive, non-blocking lock on a file beside a job's outputs.

A job whose Snakemake was killed (`kill -9`) runs on; after `snakemake --unlock`, or from `dvc repro`
beside Snakemake, a second copy of the same job would write the same outputs and call cache. The lock
(`flock`) is the kernel's: it goes with the process holding it, `kill -9` included, so a dead run never
leaves a stale one. The holder's pid and host are written into the file, to name it to the second run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path


class LockedError(RuntimeError):
    """Another process holds the lock: the job is running already."""


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says ("pid N on HOST")."""
    try:
        pid, _, host = os.pread(fd, 200, 0).decode("utf-8", "replace").strip().partition(" ")
    except OSError:
        pid, host = "", ""
    if not pid.isdigit():
        return "a process that is just starting (its pid is not written yet)"
    return f"pid {pid}" + (f" on {host}" if host and host != socket.gethostname() else "")


def _acquire(path: Path, what: str) -> int:
    """The open, locked lock file at `path` (its fd), or LockedError naming `what`, the file and the holder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # not inherited by the job's child processes
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise LockedError(
                f"{what} is running already: its lock file {path} is held by {holder}. This run stops here and "
                "touches no output. Wait for that run to end, or stop it (`kill <pid>`): the lock goes with its "
                "process (a job of a killed Snakemake runs on; `snakemake --unlock` does not stop it)."
            ) from None
        except BaseException:
            os.close(fd)
            raise
        # The file locked must still be the one at `path`: a holder that just ended removed its file, and a
        # third run may have made and locked a new one (then lock that one).
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        os.close(fd)


@contextlib.contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold the lock at `path` for the block (`what`: the job, as the refusal names it). The file holds the
    holder's pid and host, and is removed when the block ends (left by a killed process, it is unlocked)."""
    made = [p for p in reversed(path.parents) if not p.exists()]  # folders the lock makes: gone with it
    fd = _acquire(path, what)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while locked: a run waiting on this file sees it gone and takes a new one
        os.close(fd)
        for folder in reversed(made):  # unless the run wrote into them (rmdir only removes an empty one)
            with contextlib.suppress(OSError):
                folder.rmdir()
