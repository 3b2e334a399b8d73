"""llm.parse_fail_fast: a model whose first N constrained answers all fail to parse stops the stage, with
a message naming the model, the constraint, the engine and what came back; the parse-failure rate per
model in the metrics and on the stage's log. Scripted backends (tests/support/llm.py), no model."""

from __future__ import annotations

import argparse
import asyncio
import json

import pytest

from socsim import cli
from socsim.context import StageContext
from socsim.llm import Choice, JsonSchema, LLMClient, LLMError, Request
from socsim.llm.accounting import Accounting
from socsim.llm.cache import CallCache
from socsim.llm.errors import UnparsedAnswersError
from socsim.sim import runner
from socsim.stages import Stage, Study
from support.llm import Scripted, scripted_client
from support.project import ROOT

YES_NO = Choice(("yes", "no"))
OPINION = JsonSchema.of({"type": "object", "required": ["opinion"], "properties": {"opinion": {"enum": ["a", "b"]}}})


class Served(Scripted):
    """A scripted server: an engine's identity, and at most `slots` requests in flight (a server's bound)."""

    def __init__(self, reply, slots=2):
        super().__init__(reply, "org/judge-8b")
        self.slots = asyncio.Semaphore(slots)

    def identity(self):
        return {"backend": "openai", "dialect": "vllm", "model_id": "org/judge-8b", "runtime": "vLLM 0.6.3"}

    async def complete(self, request):
        async with self.slots:
            return await super().complete(request)


def asks(n, constraint=YES_NO, start=0):
    return [Request.chat([("user", f"question {i}")], seed=i, constraint=constraint) for i in range(start, start + n)]


def test_the_first_n_unparsed_stop_naming_model_constraint_engine_and_answers():
    backend = Served(lambda r: "{}")
    client = LLMClient(backend, None, parse_fail_fast=5, name="judge")
    with pytest.raises(UnparsedAnswersError) as err:
        client.run(asks(200, OPINION), "judging")
    msg = str(err.value)
    assert isinstance(err.value, LLMError)
    assert "model 'judge' (models.judge): the first 5 constrained answers all failed to parse" in msg
    assert "llm.parse_fail_fast: 5" in msg
    assert "engine: backend openai, dialect vllm, runtime vLLM 0.6.3, model_id org/judge-8b" in msg
    assert 'constraint: {"kind":"json_schema","schema":{"properties":{"opinion":{"enum":["a","b"]}}' in msg
    assert "what came back (the first 3):\n    1. '{}' (model): " in msg and "    3. '{}' (model)" in msg
    assert "    4. " not in msg
    assert "'opinion' is a required property" in msg  # the parse error
    assert "call cache" not in msg.split("what came back")[0]
    assert len(backend.requests) < 20  # stopped: the other requests were cancelled, never sent
    assert client.accounting.parse_failures == client.accounting.constrained >= 5


def test_long_answers_and_errors_are_cut_short():
    client = scripted_client(lambda r: "no! " * 500)
    client.parse_fail_fast = 2
    with pytest.raises(UnparsedAnswersError) as err:
        client.run(asks(2), "judging")
    msg = str(err.value)
    assert "model 'scripted' (models.scripted)" in msg and "engine: backend scripted" in msg
    assert 'constraint: {"kind":"choice","options":["yes","no"]}' in msg
    assert "1. 'no! no!" in msg and "no!…' (model): answer 'no! " in msg and len(msg) < 1600


@pytest.mark.parametrize("parsed_at", [0, 2, 4])
def test_one_parsed_answer_among_the_first_n_keeps_the_stage_going(parsed_at):
    client = scripted_client(lambda r: "yes" if r.seed == parsed_at else "{}")
    client.parse_fail_fast = 5
    out = client.run(asks(40), "judging")  # answers come back in request order here
    assert [r.parse_ok for r in out] == [i == parsed_at for i in range(40)]
    assert client.accounting.parse_failures == 39 and client.accounting.constrained == 40


def test_the_first_parsed_answer_after_the_nth_is_too_late():
    client = scripted_client(lambda r: "yes" if r.seed == 5 else "{}")
    client.parse_fail_fast = 5
    with pytest.raises(UnparsedAnswersError, match="the first 5 constrained answers"):
        client.run(asks(40), "judging")


@pytest.mark.parametrize("off", [0, None])
def test_zero_or_null_is_off(off):
    client = scripted_client(lambda r: "{}")
    client.parse_fail_fast = off
    assert not any(r.parse_ok for r in client.run(asks(30), "judging"))


def test_free_text_never_counts():
    client = scripted_client(lambda r: "{}")
    client.parse_fail_fast = 5
    free = [Request.chat([("user", f"talk {i}")], seed=i) for i in range(30)]
    out = client.run(free + asks(4), "mixed")  # 30 free-text answers neither count nor parse for the rule
    assert all(r.parse_ok for r in out[:30]) and not any(r.parse_ok for r in out[30:])
    assert client.accounting.constrained == 4 and client.accounting.parse_failures == 4
    with pytest.raises(UnparsedAnswersError, match="the first 5 constrained answers"):
        client.run(asks(1, start=100), "one more")  # the same client: the fifth constrained answer


def test_cache_hits_count(tmp_path):
    path = tmp_path / "calls.sqlite"
    first = LLMClient(Scripted(lambda r: "{}", "m"), CallCache(path), parse_fail_fast=None, name="m")
    first.run(asks(6), "first run")  # a cache full of answers that never parse
    first.close()
    fixed = Scripted(lambda r: "yes", "m")  # the server is fixed now, but the cache gives the old answers
    again = LLMClient(fixed, CallCache(path), parse_fail_fast=5, name="m")
    with pytest.raises(UnparsedAnswersError) as err:
        again.run(asks(6), "re-run")
    again.close()
    msg = str(err.value)
    assert fixed.requests == [] and again.accounting.cache_hits >= 5
    assert "1. '{}' (call cache)" in msg
    assert "of these answers came from the call cache (llm.cache_path)" in msg and "delete that cache file" in msg


def test_the_rate_is_in_the_metrics():
    client = scripted_client(lambda r: "maybe" if r.seed % 10 < 3 else "no")
    client.run(asks(10) + [Request.chat([("user", "hi")], seed=99)], "judging")
    m = client.accounting.as_metrics()
    assert (m["requests"], m["constrained"], m["parse_failures"], m["parse_failure_rate"]) == (11, 10, 3, 0.3)
    keys = list(m)
    assert keys[keys.index("cache_hits") :][:4] == ["cache_hits", "constrained", "parse_failures", "parse_failure_rate"]
    assert Accounting().as_metrics()["parse_failure_rate"] is None  # no constrained answer: no rate
    free = scripted_client(lambda r: "x")
    free.run([Request.chat([("user", "hi")], seed=1)], "talk")
    m = free.accounting.as_metrics()
    assert m["constrained"] == 0 and m["parse_failure_rate"] is None


# -- in a stage: the error stops it through the runner and the CLI; the rate on its log ---------------------


def _study(n):
    """A study of one LLM stage that judges n questions with the default model through sim.runner."""

    def run(ctx):
        client = ctx.model_client("smollm2-135m", "test.judge_model")

        async def one(req):
            return [await client.generate(req)]

        free = Request.chat([("user", "hello")], seed=1000)
        rows = asyncio.run(runner.run_all({"m": client}, (one(r) for r in [*asks(n), free]), "judging"))
        ctx.write_metrics(judged=len(rows))

    stage = Stage("judge", "judge", run, uses_llm=True, models=lambda p: {"smollm2-135m": "test.judge_model"})
    return Study("test", {}, [stage])


def _run(tmp_path, monkeypatch, reply, n, overrides=()):
    from socsim import models

    def scripted(params, spec, cache_path=None, *, cache=None, **_):  # models.client over the scripted backend
        return LLMClient(Scripted(reply, spec.name), cache, None, params["llm"]["parse_fail_fast"], spec.name)

    monkeypatch.setattr(models, "client", scripted)
    study = _study(n)
    args = argparse.Namespace(
        study="test",
        _study=study,
        _stage=study.stage("judge"),
        params=[str(ROOT / "params.yaml")],
        set=[f"llm.cache_path={tmp_path / 'cache.sqlite'}", *overrides],
        shard=None,
        metrics=[str(tmp_path / "judge.json")],
    )
    return cli.run_args(args)


def test_a_stage_stops_through_the_runner_and_the_cli_with_the_message(tmp_path, monkeypatch, capsys):
    rc = _run(tmp_path, monkeypatch, lambda r: "{}", 300, ["llm.parse_fail_fast=7"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "socsim: error: model 'smollm2-135m' (models.smollm2-135m): the first 7 constrained answers" in err
    assert "CancelledError" not in err and not (tmp_path / "judge.json").exists()


def test_the_default_stops_after_20(tmp_path, monkeypatch, capsys):
    assert _run(tmp_path, monkeypatch, lambda r: "{}", 300) == 2
    assert "the first 20 constrained answers all failed to parse" in capsys.readouterr().err


def test_a_finished_stage_prints_the_rate_per_model_and_writes_it(tmp_path, monkeypatch, capsys):
    rc = _run(tmp_path, monkeypatch, lambda r: "{}" if r.seed % 40 == 1 else "no", 120)
    err = capsys.readouterr().err
    assert rc == 0
    assert "socsim: test.judge: model smollm2-135m: 3 of 120 constrained answers did not parse (2.5 %)\n" in err
    m = json.loads((tmp_path / "judge.json").read_text())
    assert (m["requests"], m["constrained"], m["parse_failures"]) == (121, 120, 3)
    assert m["models"]["smollm2-135m"]["parse_failure_rate"] == 0.025


def test_the_summary_names_each_model_and_says_when_none_was_constrained(tmp_path):
    from socsim import config

    params = config.load([ROOT / "params.yaml"], ["models.j2={}"])
    stage = Stage("judge", "judge", lambda ctx: None, uses_llm=True, models=lambda p: {"smollm2-135m": "x", "j2": "y"})
    study = Study("test", {}, [stage])
    ctx = StageContext(study, study.stage("judge"), params, {}, clients=lambda spec: scripted_client(lambda r: "yes"))
    a, b = ctx.model_client("smollm2-135m", "x"), ctx.model_client("j2", "y")
    a.run(asks(4))
    b.run([Request.chat([("user", "hi")], seed=1)])
    assert ctx.parse_summary() == [
        "socsim: test.judge: model smollm2-135m: 0 of 4 constrained answers did not parse (0.0 %)",
        "socsim: test.judge: model j2: no constrained answers",
    ]
