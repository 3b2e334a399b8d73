"""Progress bars for long stages, and running many coroutines behind one."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Iterable, Iterator
from typing import TypeVar

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


def progress_bar(total: int, desc: str, unit: str = "it") -> tqdm:
    """On stderr; redrawn often on a terminal, every 10 s in a log (Snakemake, a cluster job)."""
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.5 if sys.stderr.isatty() else 10.0,
        disable=_QUIET[0],
    )


async def gather_with_progress(awaitables: Iterable[Awaitable[T]], desc: str, unit: str = "it") -> list[T]:
    """Await everything concurrently, results in input order; on a failure cancel the rest."""
    awaitables = list(awaitables)
    bar = progress_bar(len(awaitables), desc, unit)

    async def one(aw: Awaitable[T]) -> T:
        result = await aw
        bar.update(1)
        return result

    tasks = [asyncio.ensure_future(one(a)) for a in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        bar.close()
