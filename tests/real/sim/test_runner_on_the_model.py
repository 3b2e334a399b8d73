"""The simulation runner on the real embedded model: episodes run concurrently, the client is probed and closed
once, and a run is deterministic (a fresh cache gives the same rows; the first cache gives them without a call)."""

from __future__ import annotations

import asyncio

import pytest

from socsim import models
from socsim.llm import LLMClient
from socsim.sim import policies, runner, stop, views
from socsim.sim.episode import Episode, Speaker, play


class Tracked(LLMClient):
    """The real client, counting probes and closes and recording the seeds of its requests in order."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.order, self.probes, self.closes = [], 0, 0

    async def probe(self):
        self.probes += 1
        return await super().probe()

    async def aclose(self):
        self.closes += 1
        await super().aclose()

    async def generate(self, request):
        self.order.append(request.seed)
        return await super().generate(request)


def _real_client(tmp_path, name) -> Tracked:
    from socsim import config

    return models.named_client(
        config.validate(
            {"llm": {"cache_path": str(tmp_path / name / "llm.sqlite")}, "models": {"smollm2-135m": {"n_ctx": 1024}}}
        ),
        cls=Tracked,
    )


def _episodes(n=3):
    return [
        Episode(
            f"e{i}",
            "smol",
            100 + i,
            (Speaker("a", "Ann", "You are Ann. Be brief."), Speaker("b", "Bob", "You are Bob. Be brief.")),
            "Is tea better than coffee?",
            ("test", f"e{i}"),
        )
        for i in range(n)
    ]


def _run_real(client: LLMClient) -> list[dict]:
    async def one(ep):
        return await play(
            ep,
            policies.Alternate("a", "b"),
            stop.TurnBudget(4),
            client,
            client.sampling(max_tokens=4),
            lambda sp, ts: views.as_chat(sp.system_prompt, ts, sp.id),
        )

    return asyncio.run(runner.run_all({"smol": client}, (one(ep) for ep in _episodes()), "test"))


@pytest.mark.slow
def test_runner_on_the_real_model_is_concurrent_closes_and_is_deterministic(tmp_path):
    a = _real_client(tmp_path, "a")
    rows_a = _run_real(a)
    assert a.probes == 1 and a.closes == 1
    assert len(rows_a) == 3 * 4 and [r["episode_id"] for r in rows_a] == [f"e{i}" for i in range(3) for _ in range(4)]
    # concurrently: the first requests of every episode go out before any episode's second
    first_of = [_episodes()[i].turn_seed(1) for i in range(3)]
    assert sorted(a.order[:3]) == sorted(first_of)
    assert a.accounting.calls == 9 and any(r["text"] for r in rows_a[1::4])
    b = _real_client(tmp_path, "b")  # a fresh cache: real calls again
    assert _run_real(b) == rows_a and b.accounting.calls == 9
    again = _real_client(tmp_path, "a")  # the first cache: no calls
    assert _run_real(again) == rows_a and again.accounting.calls == 0 and again.accounting.cache_hits == 9
