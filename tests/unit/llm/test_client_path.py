"""The client's path to a server, as a fast engine drives it (benchmarks/orchestration.py measures its speed): the
bytes on the wire, requests beyond the concurrency waiting in line, one canary for concurrent requests, call cache
keys and batched commits, and the planted control's server answering what `completion()` computes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
import urllib.error
import urllib.request

import pytest

from socsim import config, models
from socsim.canonical import canonical_json
from socsim.llm import Choice, IntRange, JsonSchema, Request, Sampling
from socsim.llm import cache as cache_module
from socsim.llm.cache import CallCache, request_key
from socsim.llm.server import request_body, wire_json
from socsim.llm.types import Completion
from support.llm import ScriptedServer
from support.planted import PlantedServer

MODEL = "org/served-model"


def client(tmp_path, url: str, concurrency: int):
    entry = {"backend": "openai", "model_id": MODEL, "endpoints": [url], "concurrency": concurrency}
    llm = {"cache_path": str(tmp_path / "cache.sqlite"), "retries": {"max_tries": 2, "backoff_base": 0.01}}
    return models.named_client(config.validate({"llm": llm, "models": {"m": entry}}), "m")


def ask(i: int, constraint=None) -> Request:
    msgs = [{"role": "system", "content": "Sé brief."}, {"role": "user", "content": f'Question {i}: "why"?'}]
    return Request.chat(msgs, 1000 + i, Sampling(0.7, 0.95, 16), constraint)


def test_the_body_goes_as_the_compact_json_socsim_built(tmp_path):
    with ScriptedServer(MODEL) as srv:
        c = client(tmp_path, srv.url, 1)
        req = ask(1)
        c.run([req])
    assert srv.raw == [wire_json(request_body(req, "openai", MODEL))]
    assert json.loads(srv.raw[0]) == srv.bodies[0] == request_body(req, "openai", MODEL)
    compact = json.dumps(srv.bodies[0], ensure_ascii=False, separators=(",", ":")).encode()
    assert srv.raw[0] == compact and "Sé".encode() in srv.raw[0]  # compact, UTF-8 kept


def test_requests_beyond_the_concurrency_wait_in_line_and_each_gets_its_answer(tmp_path):
    def slow(body: dict) -> str:
        time.sleep(0.01)
        return body["messages"][-1]["content"]

    with ScriptedServer(MODEL, reply=slow) as srv:
        c = client(tmp_path, srv.url, 3)
        out = c.run([ask(i) for i in range(40)])
    assert [r.text for r in out] == [f'Question {i}: "why"?' for i in range(40)]
    (ep,) = c.backend._endpoints
    assert ep.max_active == 3 and ep.active == 0  # the bound held, and was used


def test_a_request_cancelled_while_it_waits_for_a_slot_loses_no_slot(tmp_path):
    with ScriptedServer(MODEL, reply=lambda body: (time.sleep(0.2), "ok")[1]) as srv:
        c = client(tmp_path, srv.url, 1)

        async def go():
            async with c:
                first = asyncio.ensure_future(c.generate(ask(1)))
                waiting = asyncio.ensure_future(c.generate(ask(2)))
                last = asyncio.ensure_future(c.generate(ask(3)))
                await asyncio.sleep(0.05)
                waiting.cancel()
                return await asyncio.wait_for(asyncio.gather(first, last), 10)

        answers = asyncio.run(go())
    assert [r.text for r in answers] == ["ok", "ok"] and len(srv.bodies) == 2


def test_concurrent_constrained_requests_share_one_canary(tmp_path):
    with ScriptedServer(MODEL, reply=lambda body: '{"answer":"Yes"}') as srv:
        c = client(tmp_path, srv.url, 8)
        out = c.run([ask(i, Choice(("Yes", "No"))) for i in range(30)])
    assert all(r.parse_ok and r.value == "Yes" for r in out)
    assert len(srv.canaries) == 1 and len(srv.bodies) == 30


@pytest.mark.parametrize(
    "constraint",
    [
        None,
        Choice(("Yes", "No")),
        IntRange(-2, 2),
        JsonSchema.of({"type": "object", "properties": {"ü": {"type": "string"}}}),
    ],
)
def test_the_cache_key_is_the_sha256_of_the_canonical_request(constraint):
    identity = {"backend": "openai", "model_id": MODEL, "z": [1, {"b": 2.5, "a": "é"}], "runtime": None}
    req = ask(7, constraint)
    material = {"model": identity, **req.key_material()}
    expected = hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()
    assert request_key(identity, req) == expected == request_key(identity, req, canonical_json(identity))
    assert request_key({**identity, "model_id": "other"}, req) != expected
    # a schema with a key "sampling" (the key the model's JSON is put in before: a string's quotes are escaped)
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "sampling": {"type": "integer"}}}
    tricky = Request.chat([("user", 'say ,"sampling":1')], 3, constraint=JsonSchema.of(schema))
    material = {"model": identity, **tricky.key_material()}
    assert request_key(identity, tricky) == hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()


def test_equal_samplings_written_alike_or_not_key_as_their_own_json():
    identity = {"model_id": MODEL}
    for sampling in (Sampling(1.0, 1.0, 8), Sampling(1, 1, 8), Sampling(0.0, 1.0, 8), Sampling(0, 1, 8)):
        req = Request.chat([("user", "hi")], 1, sampling)
        expected = hashlib.sha256(canonical_json({"model": identity, **req.key_material()}).encode()).hexdigest()
        assert request_key(identity, req) == expected, sampling


def test_a_canary_that_failed_is_asked_again_by_the_next_run(tmp_path):
    from socsim.llm.canary import ConstraintIgnoredError

    answers = iter(["not the constraint", None])  # first: an engine ignoring it; then one applying it
    with ScriptedServer(MODEL, reply=lambda body: '{"answer":"Yes"}') as srv:
        srv.canary_answer = lambda body: next(answers)
        c = client(tmp_path, srv.url, 4)
        with pytest.raises(ConstraintIgnoredError):
            c.run([ask(1, Choice(("Yes", "No")))])
        out = c.run([ask(2, Choice(("Yes", "No")))])
    assert out[0].value == "Yes" and len(srv.canaries) == 2


def rows(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


def test_answers_are_committed_in_batches_and_all_by_close(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    monkeypatch.setattr(cache_module, "FLUSH_EVERY_S", 3600.0)
    cache = CallCache(path)
    ident = {"model_id": MODEL}
    cache.put("k0", Completion("first", 1, 1), ident)  # the first answer of a file: committed at once
    for i in range(1, 5):
        cache.put(f"k{i}", Completion(f"a{i}", 3, 2, "stop"), ident)
    assert rows(path) == 1  # the others wait for the next commit
    assert cache.get("k3") == Completion("a3", 3, 2, "stop")  # and are answered from memory meanwhile
    cache.close()
    assert rows(path) == 5
    again = CallCache(path)
    assert again.get("k4") == Completion("a4", 3, 2, "stop") and len(again) == 5
    again.close()


def test_at_a_slow_pace_every_answer_is_committed_as_it_comes(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    monkeypatch.setattr(cache_module, "FLUSH_EVERY_S", 0.0)
    cache = CallCache(path)
    for i in range(3):
        cache.put(f"k{i}", Completion("x"), {"model_id": MODEL})
        assert rows(path) == i + 1
    cache.close()


def test_many_pending_answers_are_committed_at_flush_rows(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    monkeypatch.setattr(cache_module, "FLUSH_EVERY_S", 3600.0)
    monkeypatch.setattr(cache_module, "FLUSH_ROWS", 4)
    cache = CallCache(path)
    for i in range(9):
        cache.put(f"k{i}", Completion("x"), {"model_id": MODEL})
    assert rows(path) == 1 + 4 + 4  # the first at once, then two full batches
    cache.close()


def planted_body(constraint=None) -> dict:
    return request_body(ask(3, constraint), "openai", "socsim/planted-effects")


def post(url: str, data: bytes, key: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("constraint", [None, Choice(("Yes", "No")), IntRange(1, 5)])
def test_the_planted_server_answers_what_completion_computes(constraint):
    from socsim.planted.server import completion

    body = planted_body(constraint)
    with PlantedServer("planted") as srv:
        status, answer = post(srv.url + "/v1/chat/completions", wire_json(body))
    expected = completion(body, "planted", srv.model_id)
    assert status == 200
    assert {**answer, "created": 0} == {**expected, "created": 0}


def test_the_planted_server_asks_for_its_key():
    with PlantedServer("planted", key="k3y") as srv:
        for path in ("/v1/models", "/v1/chat/completions"):
            req = urllib.request.Request(srv.url + path, data=None if "models" in path else b"{}")
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(req, timeout=30)
            assert info.value.code == 401, path
        assert post(srv.url + "/v1/chat/completions", wire_json(planted_body()), key="k3y")[0] == 200


def test_the_planted_server_refuses_what_it_cannot_read():
    with PlantedServer("null") as srv:
        assert post(srv.url + "/v1/chat/completions", b"{not json")[0] == 400
        status, err = post(srv.url + "/v1/chat/completions", wire_json({"messages": []}))
        assert status == 400 and "messages" in err["error"]["message"]
        assert post(srv.url + "/v1/other", b"{}")[0] == 404
        with urllib.request.urlopen(srv.url + "/v1/models", timeout=30) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == srv.model_id


def test_a_proxy_from_the_environment_is_read_once_per_endpoint(monkeypatch):
    from socsim.llm.server import env_proxy

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert env_proxy("https://api.openai.com") == "http://proxy.example:3128"
    assert env_proxy("https://internal.example:8000") is None
    monkeypatch.delenv("HTTPS_PROXY")
    assert env_proxy("https://api.openai.com") is None
