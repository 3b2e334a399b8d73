"""Progress bars for long stages, and running many coroutines behind one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Awaitable, Iterable, Iterator
from typing import Any, TextIO, TypeVar

from tqdm import tqdm

T = TypeVar("T")
_QUIET = [False]


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No progress bars inside (a plan runs every stage in a moment)."""
    _QUIET[0] = True
    try:
        yield
    finally:
        _QUIET[0] = False


def is_quiet() -> bool:
    """Whether progress output is off (inside `quiet()`: a plan)."""
    return _QUIET[0]


# A job of the workflow writes its stderr to its log; the workflow gives it the console too, as this file
# descriptor (common.smk), with the log's path: the job then prints one progress line there now and then.
CONSOLE_FD_ENV = "SOCSIM_CONSOLE_FD"
LOG_ENV = "SOCSIM_LOG"
CONSOLE_EVERY = 30.0  # seconds between a bar's lines on the console
_CONSOLE: list[TextIO | None] = []
JOB = [""]  # the stage (and shard) this process runs, as its console lines name it (set by the CLI)


def _console() -> TextIO | None:
    """The console of a workflow job (None: not a job, or the console is not open)."""
    if not _CONSOLE:
        stream = None
        fd = os.environ.get(CONSOLE_FD_ENV, "")
        if fd.isdigit():
            try:
                stream = os.fdopen(int(fd), "w", buffering=1, closefd=False)
            except OSError:
                stream = None
        _CONSOLE.append(stream)
    return _CONSOLE[0]


def say(text: str) -> None:
    """A result a researcher should see as the run goes (e.g. the scorecard's counts): on the console of a workflow
    job (its log has it from stdout); nothing when not a job."""
    stream = _console()
    if stream is not None:
        stream.write(text.rstrip("\n") + "\n")


def duration(seconds: float | None) -> str:
    """A time as a person reads it: seconds, minutes or hours; None: "?" (unknown)."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Bar(tqdm):  # type: ignore[misc]
    """A tqdm bar that also prints a line on a workflow job's console: when it starts (with the log's path,
    once per job), every CONSOLE_EVERY seconds (done / total, rate, time left) and when it ends."""

    _log_said = [False]

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._t0 = self._last_line = time.monotonic()
        self._console_line(start=True)

    def _console_line(self, start: bool = False, end: bool = False) -> None:
        out = _console()
        if out is None or self.disable or not self.total:
            return
        now = time.monotonic()
        if not (start or end) and now - self._last_line < CONSOLE_EVERY:
            return
        self._last_line = now
        elapsed = now - self._t0
        job = f"{JOB[0]}: " if JOB[0] else ""
        line = f"{job}{self.desc}: {self.n:,}/{self.total:,} {self.unit}s ({100 * self.n / self.total:.0f} %)"
        if self.n and elapsed > 0 and not start:
            rate = self.n / elapsed
            line += f", {rate:.2f}/s" + ("" if end else f", ~{duration((self.total - self.n) / rate)} left")
        if end:  # closed on an error or Ctrl-C too (gather_with_progress's finally)
            line += ", done" if self.n >= self.total else ", stopped"
        if start and not Bar._log_said[0] and os.environ.get(LOG_ENV):
            line += f" (progress here every {CONSOLE_EVERY:.0f} s; the full log: {os.environ[LOG_ENV]})"
            Bar._log_said[0] = True
        try:
            print(line, file=out, flush=True)
        except OSError:
            pass

    def update(self, n: float | None = 1) -> bool | None:
        shown: bool | None = super().update(n)
        self._console_line()
        return shown

    def close(self) -> None:
        if not self.disable and self.total:
            self._console_line(end=True)
        super().close()


def progress_bar(total: int, desc: str, unit: str = "it") -> tqdm:
    """On stderr; redrawn often on a terminal, every 10 s in a log (Snakemake, a cluster job), and a line
    every CONSOLE_EVERY seconds on a workflow job's console (Bar)."""
    return Bar(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.5 if sys.stderr.isatty() else 10.0,
        disable=_QUIET[0],
    )


async def gather_with_progress(
    awaitables: Iterable[Awaitable[T]], desc: str, unit: str = "it", limit: int | None = None
) -> list[T]:
    """Await everything concurrently, results in input order; on a failure cancel the rest.

    `limit`: at most this many at once, taken in input order by that many workers (what a backend can have in
    flight): no task, and no wait for a free slot, per awaitable beyond them. None: one task per awaitable."""
    awaitables = list(awaitables)
    bar = progress_bar(len(awaitables), desc, unit)
    if limit is not None and 0 < limit < len(awaitables):
        try:
            return await _pooled(awaitables, limit, bar)
        finally:
            bar.close()

    def done(task: asyncio.Future[T]) -> None:
        if not task.cancelled() and task.exception() is None:
            bar.update(1)

    tasks = [asyncio.ensure_future(a) for a in awaitables]
    for t in tasks:
        t.add_done_callback(done)
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        bar.close()


async def _pooled(awaitables: list[Awaitable[T]], limit: int, bar: tqdm) -> list[T]:
    """`limit` workers that take the awaitables in input order; the first failure cancels the others, and what
    no worker took is closed unstarted (no coroutine left never awaited)."""
    results: list[Any] = [None] * len(awaitables)
    todo = iter(enumerate(awaitables))

    async def worker() -> None:
        for i, aw in todo:
            results[i] = await aw
            bar.update(1)

    workers = [asyncio.ensure_future(worker()) for _ in range(limit)]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for _, aw in todo:
            close = getattr(aw, "close", None)
            if close is not None:
                close()
        raise
    return results
