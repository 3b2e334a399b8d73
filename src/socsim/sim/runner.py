"""Running many episodes (or judgings) against a set of clients."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import TypeVar

from socsim.llm import LLMClient
from socsim.progress import gather_with_progress

T = TypeVar("T")  # a row


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
