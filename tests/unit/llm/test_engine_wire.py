"""The request socsim means, whoever started the server: the engine found at the probe (vLLM, SGLang) gets
each constraint as the grammar of its compact JSON per request, in its own field; another engine the JSON
schema; max_tokens sized so that what is not the model's words never eats its budget; an answer cut there
reported as cut; and the constraint canary, which stops a stage whose engine ignores the constraint field,
naming the engine, the field and what came back."""

from __future__ import annotations

import pytest

from socsim import config, models
from socsim.facilitation.annotate import ANSWER
from socsim.llm import Choice, IntRange, JsonSchema, Request, Sampling, canary
from socsim.llm.canary import ConstraintIgnoredError
from socsim.llm.compact import compact_gbnf, skeleton
from socsim.llm.server import request_body
from support.llm import ScriptedServer

MODEL = "org/served-model"
OPINION = JsonSchema.of(
    {
        "type": "object",
        "required": ["opinion", "justification"],
        "properties": {"opinion": {"enum": ["agree", "disagree"]}, "justification": {"type": "string"}},
    }
)


def client(url: str, dialect: str = "openai"):
    entry = {"backend": "openai", "model_id": MODEL, "endpoints": [url], "dialect": dialect}
    params = config.validate({"llm": {"retries": {"max_tries": 2, "backoff_base": 0.01}}, "models": {"m": entry}})
    return models.named_client(params, "m", cache_path="")


def ask(constraint, max_tokens=16) -> Request:
    return Request.chat([("user", "Is fire hot?")], 7, Sampling(0.0, 1.0, max_tokens), constraint)


@pytest.mark.parametrize(
    ("engine", "field"), [(("vllm", "0.32.0"), "structured_outputs"), (("sglang", "0.5.9"), "ebnf"), (None, None)]
)
def test_the_engine_found_at_the_probe_gets_the_compact_grammar_in_its_field(engine, field):
    with ScriptedServer(MODEL, reply=lambda body: '{"answer":"Yes"}', engine=engine) as srv:
        c = client(srv.url)
        [r] = c.run([ask(Choice(("Yes", "No")))])
        body = srv.bodies[-1]
    assert r.parse_ok and r.value == "Yes"
    grammar = 'root ::= "{" "\\"answer\\":" ( "\\"Yes\\"" | "\\"No\\"" ) "}"'
    # vLLM and SGLang: neutral values for what a plainly started server takes from the model's generation config
    neutral = {"top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}
    assert ({k: body.get(k) for k in neutral} == neutral) == (engine is not None)
    if field == "structured_outputs":
        assert body["structured_outputs"] == {"grammar": grammar} and "response_format" not in body
    elif field == "ebnf":
        assert body["ebnf"] == grammar and "response_format" not in body
    else:  # an engine that does not say what it is: the JSON schema, as before
        assert body["response_format"]["type"] == "json_schema" and "structured_outputs" not in body
    assert c.backend.engine == ({"name": engine[0], "version": engine[1]} if engine else None)


def test_a_schema_the_grammar_cannot_say_goes_as_a_json_schema_even_to_vllm():
    odd = JsonSchema.of(
        {"type": "object", "required": ["d"], "properties": {"d": {"type": "string", "format": "date"}}}
    )
    assert odd.compact_grammar() is None
    body = request_body(ask(odd), "openai", MODEL, engine="vllm")
    assert "structured_outputs" not in body and body["response_format"]["type"] == "json_schema"
    # the grammar's limits: a pattern with groups, an object that is not strict
    assert compact_gbnf({"type": "string", "pattern": "^(a|b)$"}) is None
    assert compact_gbnf({"type": "object", "properties": {"a": {"type": "integer"}}}) is None
    # a class that would let a quote, a backslash or a control character into the JSON string, unescaped
    for pattern in ("^[ -~]+$", "^[^,]+$", '^["a]$', "^[\\x00-z]$"):
        assert compact_gbnf({"type": "string", "pattern": pattern}) is None, pattern
    assert compact_gbnf({"type": "string", "pattern": "^[A-Za-z_#-]{2,4}$"}) == 'root ::= "\\"" [A-Za-z_#-]{2,4} "\\""'
    # an integer's bounds: the integers between them
    assert compact_gbnf({"type": "integer", "minimum": 0.5, "maximum": 2.5}) == 'root ::= ( "2" | "1" )'


def test_max_tokens_leaves_the_words_their_budget():
    # free text in an object: the skeleton (keys, punctuation, the longest enum value) on top
    assert skeleton(OPINION.json_schema()) == {"justification": "", "opinion": "disagree"}
    top = len('{"justification":"","opinion":"disagree"}')
    assert request_body(ask(OPINION, 24), "openai", MODEL)["max_tokens"] == 24 + top
    assert request_body(ask(OPINION, 24), "tgi", MODEL)["max_tokens"] == 24 + top
    # an object of enums: at least its whole answer (measured cut at 20 tokens on vLLM)
    whole = len('{"argument_quality":5,"toxicity":5}')
    assert request_body(ask(ANSWER, 20), "openai", MODEL)["max_tokens"] == whole
    assert request_body(ask(ANSWER, 64), "openai", MODEL)["max_tokens"] == 64
    # the wrapper of a bare answer, as before; free text unchanged
    assert request_body(ask(IntRange(1, 10), 4), "openai", MODEL)["max_tokens"] == 4 + len('{"answer":10}')
    assert request_body(ask(None, 9), "openai", MODEL)["max_tokens"] == 9


def test_an_answer_cut_at_max_tokens_is_reported_as_cut():
    with ScriptedServer(MODEL, reply=lambda body: '{"justification":"because it is') as srv:
        srv.finish_reason = "length"
        c = client(srv.url)
        [r] = c.run([ask(OPINION)])
    assert not r.parse_ok and r.parse_error.startswith("cut at max_tokens (16 tokens for the answer)")
    m = c.accounting.as_metrics()
    assert (m["parse_failures"], m["parse_failures_cut"]) == (1, 1)
    # sampling as applied (the request's; the wire's max_tokens adds the skeleton)
    assert m["sampling"] == [{"temperature": 0.0, "top_p": 1.0, "max_tokens": 16, "requests": 1}]


@pytest.mark.parametrize("engine", [("vllm", "0.32.0"), None])
def test_an_engine_that_ignores_the_constraint_field_stops_before_the_first_call(engine):
    with ScriptedServer(MODEL, engine=engine) as srv:
        srv.canary_answer = "Hello there, reader!"
        c = client(srv.url)
        with pytest.raises(ConstraintIgnoredError) as err:
            c.run([ask(Choice(("Yes", "No")))])
        assert srv.bodies == []  # no real request went out
        canaries = srv.canaries
    msg = str(err.value)
    # vLLM: its grammar field ignored, then response_format too (the field that would carry its constraints)
    assert "`response_format`" in msg and "'Hello there, reader!'" in msg and "models.m" in msg
    assert ("(openai-compatible, owned_by 'vllm' version 0.32.0)" if engine else "(openai-compatible)") in msg
    assert len(canaries) == (2 if engine else 1) and all(canary.is_canary(b) for b in canaries)


def test_a_vllm_that_ignores_its_grammar_field_gets_response_format():
    """An older vLLM (before `structured_outputs`) ignores the grammar field and applies response_format."""

    def older(body):
        return "Hi!" if "structured_outputs" in body else None  # None: an allowed string

    with ScriptedServer(MODEL, reply=lambda body: '{"answer":"Yes"}', engine=("vllm", "0.9.2")) as srv:
        srv.canary_answer = older
        c = client(srv.url)
        [r] = c.run([ask(Choice(("Yes", "No")))])
        body = srv.bodies[-1]
    assert r.parse_ok and "response_format" in body and "structured_outputs" not in body
    assert c.backend.canaried[0] == {"field": "structured_outputs.grammar", "ignored": "Hi!", "then": "response_format"}
    assert c.backend.canaried[1]["field"] == "response_format"


def test_the_canary_goes_before_the_first_constrained_call_only():
    with ScriptedServer(MODEL, reply=lambda body: '{"answer":"No"}', engine=("vllm", "0.32.0")) as srv:
        c = client(srv.url)
        c.run([ask(None), ask(None, 9)])  # free text only: no canary
        assert srv.canaries == []
        c.run([ask(Choice(("Yes", "No"))), ask(Choice(("Yes", "No")), 12), ask(IntRange(1, 3))])
        canaries = srv.canaries
    # vLLM takes both the grammar and (for the schemas the grammar cannot say) response_format: one canary each,
    # once for the client (concurrent requests wait for it)
    assert [("structured_outputs" in b, "response_format" in b) for b in canaries] == [(True, False), (False, True)]
    assert c.backend.canaried == [
        {"field": "structured_outputs.grammar", "answer": canary.OPTIONS[0]},
        {"field": "response_format", "answer": canary.OPTIONS[0]},
    ]
    assert c.accounting.calls == 5  # the canaries are not the stage's calls


def test_a_rerun_from_the_call_cache_sends_no_canary(tmp_path):
    with ScriptedServer(MODEL, reply=lambda body: '{"answer":"No"}', engine=("vllm", "0.32.0")) as srv:
        entry = {"backend": "openai", "model_id": MODEL, "endpoints": [srv.url]}
        params = config.validate({"llm": {"cache_path": str(tmp_path / "c.sqlite")}, "models": {"m": entry}})
        models.named_client(params, "m").run([ask(Choice(("Yes", "No")))])
        assert len(srv.canaries) == 2
        again = models.named_client(params, "m")
        [r] = again.run([ask(Choice(("Yes", "No")))])
        assert r.cached and len(srv.canaries) == 2 and again.backend.canaried is None
