"""Running many episodes (or judgings) against a set of clients."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from socsim.llm import LLMClient
from socsim.progress import gather_with_progress

T = TypeVar("T")  # a row
Item = TypeVar("Item")  # what one job is for


@contextlib.asynccontextmanager
async def opened(clients: dict[str, LLMClient]) -> AsyncIterator[dict[str, LLMClient]]:
    """Probe every client (a clear error before any work), and close them all on the way out."""
    try:
        for client in clients.values():
            await client.probe()
        yield clients
    finally:
        for client in clients.values():
            await client.aclose()


async def gather_rows(jobs: Iterable[Awaitable[list[T]]], desc: str, unit: str = "episode") -> list[T]:
    """Await the jobs concurrently behind a progress bar; their rows concatenated in job order."""
    return [row for rows in await gather_with_progress(jobs, desc, unit=unit) for row in rows]


async def run_all(
    clients: dict[str, LLMClient], jobs: Iterable[Awaitable[list[T]]], desc: str, unit: str = "episode"
) -> list[T]:
    """gather_rows inside opened(clients). Pass `jobs` as a generator: nothing starts before the probes."""
    async with opened(clients):
        return await gather_rows(jobs, desc, unit)


async def run_grouped(
    clients: dict[str, LLMClient],
    items: Sequence[Item],
    job: Callable[[Item], Awaitable[list[T]]],
    group: Callable[[Item], tuple[str, ...]],
    desc: str,
    unit: str = "episode",
) -> list[T]:
    """run_all over job(item) for every item, started group by group (stable within a group), so that
    requests sharing a prompt prefix run one after another and a prefix cache keeps it; the rows come
    back in the items' order, whatever the schedule."""
    order = sorted(range(len(items)), key=lambda i: group(items[i]))
    async with opened(clients):
        done = await gather_with_progress((job(items[i]) for i in order), desc, unit=unit)
    by_item: list[list[T]] = [[] for _ in items]
    for i, rows in zip(order, done, strict=True):
        by_item[i] = rows
    return [row for rows in by_item for row in rows]
