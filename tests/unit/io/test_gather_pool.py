"""gather_with_progress with a limit: that many workers, results in input order, a failure cancels the rest and
leaves no coroutine unawaited; and a client drives its backend with as many workers as the backend has slots."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from socsim import progress


def counted(limit: int | None, n: int, fail_at: int | None = None) -> tuple[list[int], int, list[int]]:
    """Run n sleepers through gather_with_progress: (results, most at once, indexes started)."""
    now = {"in": 0, "most": 0}
    started: list[int] = []

    async def one(i: int) -> int:
        started.append(i)
        now["in"] += 1
        now["most"] = max(now["most"], now["in"])
        try:
            await asyncio.sleep(0.001 * ((i * 7) % 5))  # out of order: results must come back in input order
            if i == fail_at:
                raise ValueError(f"call {i} failed")
            return i * i
        finally:
            now["in"] -= 1

    async def main() -> list[int]:
        with progress.quiet():
            return await progress.gather_with_progress((one(i) for i in range(n)), "t", limit=limit)

    return asyncio.run(main()), now["most"], started


def test_a_limit_runs_that_many_at_once_and_keeps_the_input_order():
    out, most, started = counted(4, 40)
    assert out == [i * i for i in range(40)]
    assert most == 4
    assert started[:4] == [0, 1, 2, 3]  # taken in input order
    out, most, _ = counted(None, 40)  # no limit: every one at once, as before
    assert out == [i * i for i in range(40)] and most == 40
    out, most, _ = counted(64, 10)  # a limit above the count: the same
    assert out == [i * i for i in range(10)] and most == 10


def test_a_failure_stops_the_workers_and_closes_what_none_took():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="call 5 failed"):
            counted(3, 50, fail_at=5)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)], [str(w.message) for w in caught]


def test_a_server_backend_has_as_many_slots_as_its_endpoints_take():
    from socsim.llm.server import ServerBackend

    backend = ServerBackend("openai", ["http://127.0.0.1:9", "http://127.0.0.1:10"], concurrency=8)
    assert backend.in_flight == 16
