"""A stage interrupted on purpose: signalled, or killed, once some of its model calls are in its cache."""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
from pathlib import Path

from support.metrics import cache_rows
from support.project import ROOT


def signal_after_cached_calls(
    cmd: list[str], cache: Path, calls: int, sig: int, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Start a stage, send it `sig` once `calls` model calls are in its cache, wait for it to end:
    its exit code and stderr."""
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
