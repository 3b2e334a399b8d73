"""Replay (socsim.llm.replay): a recorded run's call caches answer in place of the model, under the identity
of the backend they stand in for; a request the recording does not hold stops the stage, never reaching the
model. The executor tests replay one recorded tiny run this way (tests/pipeline/conftest.py)."""

from __future__ import annotations

import asyncio

import pytest

from socsim import config, models
from socsim.llm import LLMClient, Request, Sampling
from socsim.llm.cache import CallCache
from socsim.llm.errors import ReplayMissError
from socsim.llm.replay import DELAY_ENV, ENV, ReplayBackend
from support.llm import Scripted


def ask(i: int) -> Request:
    return Request.chat([("user", f"question {i}")], seed=100 + i, sampling=Sampling(0.7, 0.95, 8), label=f"q{i}")


def never(request):
    raise AssertionError(f"the model was called under replay: {request}")


def record(path, n: int) -> list[str]:
    """n answers of the scripted model 'm', stored in a call cache at `path` (a recording)."""
    client = LLMClient(Scripted(lambda r: f"answer to {r.messages[-1][1]}", "m"), CallCache(path))
    texts = [r.text for r in client.run([ask(i) for i in range(n)])]
    client.close()
    return texts


def test_a_replay_gives_the_recorded_answers_and_never_calls_the_model(tmp_path):
    recorded = record(tmp_path / "rec" / "shard.sqlite", 3)
    inner = Scripted(never, "m")  # the same identity as the recording's model
    client = LLMClient(ReplayBackend(inner, tmp_path / "rec"), CallCache(tmp_path / "own.sqlite"))
    got = client.run([ask(i) for i in range(3)])
    assert [r.text for r in got] == recorded and inner.requests == []
    assert client.accounting.calls == 3 and client.accounting.cache_hits == 0  # the replay answered, not the cache
    again = client.run([ask(0)])  # the run's own cache now holds the replayed answers
    assert again[0].cached and again[0].text == recorded[0]
    client.close()


def test_a_request_the_recording_lacks_stops_loudly(tmp_path):
    record(tmp_path / "rec.sqlite", 2)
    inner = Scripted(never, "m")
    client = LLMClient(ReplayBackend(inner, tmp_path / "rec.sqlite"), None)
    with pytest.raises(ReplayMissError) as err:
        client.run([ask(0), ask(7)])
    assert f"{ENV}={tmp_path / 'rec.sqlite'}" in str(err.value) and "q7" in str(err.value)
    assert "never calls the model" in str(err.value) and inner.requests == []


def test_another_model_identity_finds_nothing(tmp_path):
    record(tmp_path / "rec.sqlite", 1)
    client = LLMClient(ReplayBackend(Scripted(never, "other"), tmp_path / "rec.sqlite"), None)
    with pytest.raises(ReplayMissError, match="'other'|None"):
        client.run([ask(0)])


def test_a_recording_without_call_caches_is_named(tmp_path):
    (tmp_path / "empty").mkdir()
    client = LLMClient(ReplayBackend(Scripted(never, "m"), tmp_path / "empty"), None)
    with pytest.raises(ReplayMissError, match="no call cache there"):
        client.run([ask(0)])


def test_the_delay_paces_each_answer(tmp_path, monkeypatch):
    record(tmp_path / "rec.sqlite", 2)
    monkeypatch.setenv(DELAY_ENV, "0.2")
    backend = ReplayBackend(Scripted(never, "m"), tmp_path / "rec.sqlite")
    assert backend.delay == 0.2

    async def timed() -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await backend.complete(ask(0))
        return loop.time() - t0

    assert asyncio.run(timed()) >= 0.2


def test_the_environment_wraps_every_registry_model_at_construction(tmp_path, monkeypatch):
    """An embedded model under SOCSIM_REPLAY: its identity from its file (not loaded: the fast lane's guard
    would fail a load), its answers from the recording; the stage's metrics name the recording."""
    params = config.validate({"llm": {"cache_path": str(tmp_path / "own.sqlite")}})
    plain = models.named_client(params)
    assert not isinstance(plain.backend, ReplayBackend)
    monkeypatch.setenv(ENV, str(tmp_path / "rec"))
    replayed = models.named_client(params)
    assert isinstance(replayed.backend, ReplayBackend)
    assert replayed.identity() == plain.identity() and replayed.identity()["backend"] == "embedded"
    assert replayed.backend.replayed_from == str(tmp_path / "rec")
    plain.close()
    replayed.close()
