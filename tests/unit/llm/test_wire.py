"""What goes over the wire: the exact JSON body a loopback HTTP server receives from socsim's server
backend, per structured-output dialect (openai, tgi, llama_cpp), and the OpenAI shape held against the
hosted API's documented strict-mode rules for every schema socsim can send."""

from __future__ import annotations

import re

import pytest
import yaml

from socsim import config, models
from socsim.llm import Choice, IntRange, JsonSchema, LLMClient, LLMError, Request, Sampling
from socsim.llm.constraints import Constraint
from support.llm import ScriptedServer
from support.project import ROOT

MODEL = "org/served-model"


@pytest.fixture
def recorder():
    rec = ScriptedServer(MODEL)
    yield rec
    rec.close()


def client(tmp_path, url: str, dialect: str, backend: str = "openai", **llm) -> LLMClient:
    entry = {"backend": backend, "model_id": MODEL, "endpoints": [url], "dialect": dialect}
    llm = {"cache_path": str(tmp_path / "cache.sqlite"), "retries": {"max_tries": 2, "backoff_base": 0.01}, **llm}
    params = config.validate({"llm": llm, "models": {"m": entry}})
    return models.named_client(params, "m")


def ask(constraint=None, sampling=None, seed=1234) -> Request:
    msgs = [{"role": "system", "content": "You rate."}, {"role": "user", "content": "Is fire hot?"}]
    return Request.chat(msgs, seed, sampling or Sampling(0.7, 0.95, 16), constraint)


MESSAGES = [{"role": "system", "content": "You rate."}, {"role": "user", "content": "Is fire hot?"}]
YES_NO_OPENAI = {
    "type": "json_schema",
    "json_schema": {
        "name": "choice",
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": ["Yes", "No"]}},
            "additionalProperties": False,
            "required": ["answer"],
        },
        "strict": True,
    },
}


def test_openai_body_is_exactly_what_socsim_built(tmp_path, recorder):
    recorder.replies = [('{"answer": "Yes"}', 200)]
    c = client(tmp_path, recorder.url, "openai")
    [r] = c.run([ask(Choice(("Yes", "No")))])
    assert recorder.paths[-1] == "/v1/chat/completions"
    assert recorder.bodies[-1] == {
        "messages": MESSAGES,
        "max_tokens": 16 + len('{"answer":"Yes"}'),  # the answer's budget and the wrapped answer's characters
        "temperature": 0.7,
        "top_p": 0.95,
        "seed": 1234,
        "model": MODEL,
        "response_format": YES_NO_OPENAI,
    }
    assert (r.value, r.parse_ok) == ("Yes", True)  # the wrapped answer, unwrapped on parse
    assert recorder.headers[-1]["Authorization"] == "Bearer EMPTY"  # never the user's Hugging Face token


def test_openai_int_range_and_object_schema_on_the_wire(tmp_path, recorder):
    schema = JsonSchema.of(
        {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}}},
        name="rating",
    )
    recorder.replies = [('{"answer": 4}', 200), ('{"a": 2, "b": "x"}', 200), ('{"answer": 9}', 200)]
    c = client(tmp_path, recorder.url, "openai", concurrency=1)
    out = c.run([ask(IntRange(1, 5)), ask(schema, seed=2), ask(IntRange(1, 5), seed=3)])
    # 16 + len('{"answer":1}'); an object without free text: at least its longest answer (an integer of 18 digits)
    assert [b["max_tokens"] for b in recorder.bodies] == [28, len('{"a":-100000000000000000,"b":"x"}'), 28]
    int_fmt = recorder.bodies[0]["response_format"]["json_schema"]
    assert int_fmt["name"] == "int_range" and int_fmt["strict"] is True
    assert int_fmt["schema"] == {
        "type": "object",
        "properties": {"answer": {"type": "integer", "minimum": 1, "maximum": 5, "enum": [1, 2, 3, 4, 5]}},
        "additionalProperties": False,
        "required": ["answer"],
    }
    obj = recorder.bodies[1]["response_format"]["json_schema"]
    assert obj["name"] == "rating"
    assert obj["schema"] == {  # object root kept; every property required, typed enum, no extra properties
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"], "type": "string"}},
        "additionalProperties": False,
    }
    assert [(r.value, r.parse_ok) for r in out[:2]] == [(4, True), ({"a": 2, "b": "x"}, True)]
    assert out[2].parse_ok is False and "outside" in out[2].parse_error


def test_tgi_body(tmp_path, recorder):
    c = client(tmp_path, recorder.url, "tgi", backend="tgi")
    c.run([ask(Choice(("Yes", "No")))])
    assert recorder.paths[:2] == ["/info", "/v1/chat/completions"]  # TGI's identity, then its Messages API
    assert recorder.bodies[-1] == {
        "messages": MESSAGES,
        "max_tokens": 16,
        "temperature": 0.7,
        "top_p": 0.95,
        "seed": 1234,
        "model": MODEL,
        "response_format": {"type": "json", "value": {"type": "string", "enum": ["Yes", "No"]}},
    }


def test_tgi_greedy_sends_no_top_p_and_top_p_one_is_left_out(tmp_path, recorder):
    c = client(tmp_path, recorder.url, "tgi", backend="tgi", concurrency=1)
    c.run([ask(sampling=Sampling(0.0, 0.95, 8)), ask(sampling=Sampling(0.5, 1.0, 8), seed=2)])
    greedy, full = recorder.bodies
    assert greedy["temperature"] == 0.0 and "top_p" not in greedy  # top_p < 1 would sample at temperature 1
    assert full["temperature"] == 0.5 and "top_p" not in full  # TGI refuses top_p = 1.0 (HTTP 422)
    assert "response_format" not in greedy


@pytest.mark.parametrize("dialect", ["openai", "llama_cpp"])
def test_other_servers_always_get_top_p(tmp_path, recorder, dialect):
    """Greedy keeps its top_p, and top_p = 1 is sent: a llama.cpp server left without one applies 0.95."""
    c = client(tmp_path, recorder.url, dialect, concurrency=1)
    c.run([ask(sampling=Sampling(0.0, 0.95, 8)), ask(sampling=Sampling(0.7, 1.0, 8), seed=2)])
    assert [(b["temperature"], b["top_p"]) for b in recorder.bodies] == [(0.0, 0.95), (0.7, 1.0)]


def test_llama_cpp_body(tmp_path, recorder):
    recorder.replies = [("3", 200)]
    c = client(tmp_path, recorder.url, "llama_cpp")
    [r] = c.run([ask(IntRange(1, 5))])
    schema = {"type": "integer", "minimum": 1, "maximum": 5, "enum": [1, 2, 3, 4, 5]}
    assert recorder.bodies[-1] == {
        "messages": MESSAGES,
        "max_tokens": 16,
        "temperature": 0.7,
        "top_p": 0.95,
        "seed": 1234,
        "model": MODEL,
        "response_format": {"type": "json_object", "schema": schema},
    }
    assert (r.value, r.parse_ok) == (3, True)


def test_usage_cached_tokens_and_errors(tmp_path):
    rec = ScriptedServer(MODEL, replies=[("x", 400)], cached_tokens=8)
    try:
        c = client(tmp_path, rec.url, "openai")
        with pytest.raises(LLMError, match="HTTP 400"):  # not retryable: stops with the server's status
            c.run([ask()])
        rec.replies = [("fine", 503), ("fine", 200)]  # retried, then answered
        c2 = client(tmp_path / "b", rec.url, "openai")
        [r] = c2.run([ask(seed=7)])
        assert r.text == "fine" and c2.accounting.retries == 1
        m = c2.accounting.as_metrics()
        assert m["prompt_tokens"] == 11 and m["prompt_tokens_evaluated"] == 3  # 11 less 8 from the prefix cache
    finally:
        rec.close()


# What llama-cpp-python's server (`python -m llama_cpp.server`) answers to OpenAI's json_schema response_format: the
# request model's validation error, wrapped by its route handler as HTTP 500 (llama_cpp/server/errors.py).
LLAMA_CPP_PYTHON_500 = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or "
    "'json_object'\", 'input': 'json_schema'}]"
)


@pytest.mark.parametrize(
    ("dialect", "constraint", "hint"),
    [("openai", Choice(("Yes", "No")), True), ("openai", None, False), ("llama_cpp", Choice(("Yes", "No")), False)],
    ids=["openai-constrained", "openai-free", "llama_cpp-constrained"],
)
def test_the_same_http_500_twice_stops_and_a_constrained_openai_request_names_the_dialect(
    tmp_path, dialect, constraint, hint
):
    """llama-cpp-python's server answers every json_schema request with the same HTTP 500: retried five times
    it said nothing of why. The second identical 500 stops a constrained request; in the openai dialect the
    message says what a llama.cpp server needs."""
    with ScriptedServer(MODEL, replies=[(LLAMA_CPP_PYTHON_500, 500)] * 5) as rec:
        c = client(tmp_path, rec.url, dialect, retries={"max_tries": 5, "backoff_base": 0.01})
        with pytest.raises(LLMError) as info:
            c.run([ask(constraint)])
        posts = [p for p in rec.paths if p == "/v1/chat/completions"]
    msg = str(info.value)
    if constraint is None:  # a free request's identical 500s may be an outage's error page: retried in full
        assert len(posts) == 5 and "after 5 tries" in msg and "literal_error" in msg, msg
    else:
        assert len(posts) == 2, msg  # the first try and one retry, not five
        assert "failed twice with the same HTTP 500 answer, so it is not retried" in msg and "literal_error" in msg
    assert ("set `dialect: llama_cpp` in its registry entry" in msg and "models.m " in msg) is hint, msg


def test_http_500s_that_differ_are_retried_and_the_last_names_the_dialect(tmp_path):
    """A 500 whose body changes (a server in trouble) is retried up to max_tries; when the retries end on 500 for
    a constrained openai request, the error still says what a llama.cpp server needs."""
    replies = [(f"overloaded ({i})", 500) for i in range(5)]
    with ScriptedServer(MODEL, replies=replies) as rec:
        c = client(tmp_path, rec.url, "openai", retries={"max_tries": 5, "backoff_base": 0.01})
        with pytest.raises(LLMError) as info:
            c.run([ask(Choice(("Yes", "No")))])
        posts = [p for p in rec.paths if p == "/v1/chat/completions"]
    msg = str(info.value)
    assert len(posts) == 5 and "after 5 tries" in msg and 'HTTP 500: {"error": {"message": "overloaded (4)"}}' in msg, (
        msg
    )
    assert "set `dialect: llama_cpp` in its registry entry (docs/servers.md)" in msg


def test_api_root_with_v1(tmp_path, recorder):
    c = client(tmp_path, recorder.url + "/v1", "openai")  # a base URL such as https://api.openai.com/v1
    c.run([ask()])
    assert recorder.paths == ["/v1/models", "/v1/chat/completions"]


def test_openai_identity_marks_the_shape(tmp_path, recorder):
    """The cache-key change: openai-dialect identities name the strict shape; other dialects are as before."""
    a = client(tmp_path, recorder.url, "openai")
    b = client(tmp_path / "t", recorder.url, "llama_cpp")
    a.run([ask()])
    b.run([ask()])
    assert a.identity()["structured_output"] == "strict, object root"
    assert "structured_output" not in b.identity() and "greedy" not in b.identity()
    t = client(tmp_path / "tgi", recorder.url, "tgi", backend="tgi")
    t.run([ask()])
    assert t.identity()["greedy"] == "without top_p" and "structured_output" not in t.identity()


# -- the hosted API's strict mode --------------------------------------------------------------------

# The keywords its documentation lists as supported in strict structured outputs.
STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "enum", "const", "items", "anyOf", "$defs", "$ref",
    "description", "title", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
}  # fmt: skip


def strict_violations(fmt: dict) -> list[str]:
    """The hosted API's documented strict-mode rules, checked independently of socsim's own code."""
    problems = []
    if fmt.get("type") != "json_schema":
        return [f"type {fmt.get('type')!r} is not json_schema"]
    spec = fmt["json_schema"]
    if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", spec.get("name", "")):
        problems.append(f"name {spec.get('name')!r}")
    if spec.get("strict") is not True:
        problems.append("strict is not true")
    root = spec["schema"]
    if root.get("type") != "object":
        problems.append("root is not an object")

    def walk(node, where):
        if not isinstance(node, dict):
            return
        for key in set(node) - STRICT_KEYWORDS:
            problems.append(f"{where}: keyword {key!r}")
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties is not false")
            if sorted(node.get("required", [])) != sorted(node.get("properties", {})):
                problems.append(f"{where}: not every property is required")
        if "enum" in node and "type" not in node:
            problems.append(f"{where}: untyped enum")
        for k, v in (node.get("properties") or {}).items():
            walk(v, f"{where}.{k}")
        for k in ("items",):
            walk(node.get(k), f"{where}[]")
        for i, v in enumerate(node.get("anyOf") or []):
            walk(v, f"{where}|{i}")
        for k, v in (node.get("$defs") or {}).items():
            walk(v, f"{where}#{k}")

    walk(root, "$")
    return problems


def every_constraint() -> dict[str, Constraint]:
    """Every constraint socsim sends: the ones its modules name, and the ones built from data."""
    from socsim.coherence import agents, dialogue
    from socsim.debate import annotate as debate_annotate
    from socsim.debate import simulate as debate_simulate
    from socsim.facilitation import annotate, materials
    from socsim.opinion_dynamics import classify, outside_info

    prompts = yaml.safe_load((ROOT / "data" / "debate" / "prompts.yaml").read_text())
    return {
        "facilitation annotation": annotate.ANSWER,
        "facilitation persona": JsonSchema.of(materials.PERSONA_SCHEMA, name="persona"),
        "facilitation seed opinion": JsonSchema.of(materials.TOPIC_SCHEMA, name="seed_opinion"),
        "coherence yes/no": agents.YES_NO,
        "coherence preference": agents.PREFERENCE,
        "coherence judge": dialogue.JUDGE_SCORE,
        "debate validity": debate_annotate.VALIDITY,
        "debate stance": debate_annotate.stance_choice(prompts),
        "debate final opinion": debate_simulate.final_opinion_schema(prompts["labels"]),
        "opinion dynamics classifier": classify.ANSWER,
        "opinion dynamics outside info": outside_info.ANSWER,
    }


@pytest.mark.parametrize("name", list(every_constraint()))
def test_every_schema_socsim_sends_passes_strict_mode(name):
    fmt = every_constraint()[name].response_format("openai")
    assert strict_violations(fmt) == []


def test_the_strict_checker_catches_what_the_old_shape_broke():
    old = {"type": "json_schema", "json_schema": {"name": "choice", "schema": {"enum": ["Yes", "No"]}, "strict": True}}
    problems = strict_violations(old)
    assert "root is not an object" in problems and "$: untyped enum" in problems
    loose = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    wire = {"type": "json_schema", "json_schema": {"name": "x y", "schema": loose, "strict": True}}
    assert strict_violations(wire) == [
        "name 'x y'",
        "$: additionalProperties is not false",
        "$: not every property is required",
    ]
    assert strict_violations({"type": "json_object", "value": loose}) == ["type 'json_object' is not json_schema"]


def test_every_constraint_of_the_source_is_covered():
    """A new module-level constraint must join every_constraint() (this test reads the source)."""
    sources = set()
    for path in (ROOT / "src" / "socsim").rglob("*.py"):
        if path.parent.name != "llm" and re.search(r"(JsonSchema\.of|\bChoice|\bIntRange)\(", path.read_text()):
            sources.add(str(path.relative_to(ROOT)))
    assert sources == {
        "src/socsim/facilitation/annotate.py",
        "src/socsim/facilitation/materials.py",
        "src/socsim/coherence/dialogue.py",
        "src/socsim/coherence/agents.py",
        "src/socsim/debate/annotate.py",
        "src/socsim/debate/simulate.py",
        "src/socsim/opinion_dynamics/classify.py",
        "src/socsim/opinion_dynamics/outside_info.py",
    }
