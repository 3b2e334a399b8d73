"""Output constraints: one of a list of strings, an integer in a range, a JSON schema.

Each constraint knows how to express itself in every backend's dialect (a llama.cpp GBNF
grammar in process; as `response_format`: TGI's `json`, OpenAI's `json_schema` (vLLM, SGLang,
llama.cpp's llama-server, the hosted API) or `json_object` with a `schema` (llama-cpp-python's server)) and
how to validate an answer on return. Validation never raises: it returns (value, ok, error) and the caller
keeps the raw text, so an answer that does not parse is counted, not fatal.

The OpenAI shape is one that every engine and the hosted API's strict mode accept (`strict_schema`): an
object at the root (a Choice or IntRange answer, or any schema whose root is not an object, is wrapped as
the one required property `answer`, and unwrapped on parse), `additionalProperties: false` on every
object, every property required, every enum typed.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema.exceptions

from socsim.llm import compact


def _gbnf_literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


WRAP = "answer"  # the one property that holds an answer whose schema has no object at its root (openai)
STRICT_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # the hosted API's rule for a json_schema's name


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" or ("type" not in schema and "properties" in schema)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as the hosted API's strict mode takes it (and vLLM, SGLang, llama-server alike): an object
    root (a non-object schema becomes the one required property `answer`), `additionalProperties: false`
    on every object, every property required (an optional property becomes required: strict mode has no
    optional ones), every enum typed (a type from its values where the schema names none)."""
    root = schema if _is_object(schema) else {"type": "object", "properties": {WRAP: schema}}
    strict: dict[str, Any] = _strict(root)
    return strict


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("enum", "const") else _strict(v)) for k, v in node.items()}
    if "properties" in out:
        out["properties"] = {k: _strict(v) for k, v in node["properties"].items()}
    if _is_object(out):
        out["type"] = "object"
        out["additionalProperties"] = False
        named = [k for k in node.get("required") or [] if k in (out.get("properties") or {})]
        out["required"] = named + [k for k in out.get("properties") or {} if k not in named]
    if "enum" in out and "type" not in out:
        kinds = {_json_type(v) for v in out["enum"]}
        out["type"] = kinds.pop() if len(kinds) == 1 else sorted(kinds)
    return out


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return "string" if isinstance(value, str) else type(value).__name__


class Constraint:
    kind: str = ""

    def spec(self) -> dict[str, Any]:  # stable description, part of the cache key
        raise NotImplementedError

    def json_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def gbnf(self) -> str | None:
        """A llama.cpp grammar, or None to derive one from json_schema()."""
        return None

    @property
    def format_name(self) -> str:
        """The json_schema's name in the OpenAI shape."""
        return self.kind

    def wire_overhead(self, dialect: str) -> int:
        """Tokens to add to the request's max_tokens (the answer's budget) for the OpenAI wrapper of a schema
        without an object root: the UTF-8 bytes of the whole compact wrapped answer (its longest value inside
        `{"answer":...}`), a bound at any tokenization (a token holds at least one byte; under a grammar, vLLM's
        SmolLM2 spent 12 tokens on `{"answer":"No"}`)."""
        if dialect != "openai" or _is_object(self.json_schema()):
            return 0
        return len(json.dumps({WRAP: self._longest()}, ensure_ascii=False, separators=(",", ":")).encode())

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - constraints are frozen values; one per (constraint, budget)
    def wire_max_tokens(self, max_tokens: int, dialect: str) -> int:
        """The max_tokens a request sends for an answer budget of `max_tokens`, in the dialect's shape, so that
        what is not the model's own words never eats that budget. The OpenAI wrapper: its bytes on top
        (wire_overhead). An object root, in every dialect, by the bytes of its compact skeleton (keys,
        punctuation, the longest enum values and integers: socsim.llm.compact.skeleton): with free text (a
        string that is no enum), max_tokens stays the budget of the words and the skeleton comes on top;
        without, the skeleton is the whole answer's bound, and the budget is at least that. (Measured on vLLM's
        SmolLM2 under a grammar: `{"argument_quality":1,"toxicity":1` cut at 20 tokens.) An answer still cut
        there is reported as cut (finish_reason "length"), not as the model's parse failure."""
        schema = self.json_schema()
        if not _is_object(schema):
            return max_tokens + self.wire_overhead(dialect)
        bound = len(json.dumps(compact.skeleton(schema), ensure_ascii=False, separators=(",", ":")).encode())
        return max_tokens + bound if compact.has_free_text(schema) else max(max_tokens, bound)

    @functools.lru_cache(maxsize=1024)  # noqa: B019 - once per constraint (it goes with every request)
    def compact_grammar(self) -> str | None:
        """The GBNF grammar of the answer's compact JSON in the OpenAI shape (the object root or the wrapper
        `{"answer":...}`, no whitespace: socsim.llm.compact), for engines that take a grammar per request; None
        where the schema has what the grammar does not express (it then goes as a JSON schema)."""
        return _compact(json.dumps(strict_schema(self.json_schema()), sort_keys=False))

    def _longest(self) -> Any:
        """The longest answer the constraint allows, as a JSON value (for wire_overhead); unbounded: ""."""
        return ""

    @functools.lru_cache(maxsize=1024)  # noqa: B019 - once per constraint and dialect; callers do not change it
    def response_format(self, dialect: str) -> dict[str, Any]:
        schema = self.json_schema()
        if dialect == "tgi":
            return {"type": "json", "value": schema}
        if dialect == "openai":
            wire = {"name": self.format_name, "schema": strict_schema(schema), "strict": True}
            return {"type": "json_schema", "json_schema": wire}
        if dialect == "llama_cpp":
            return {"type": "json_object", "schema": schema}
        raise ValueError(f"unknown structured-output dialect {dialect!r}")

    def parse(self, text: str) -> tuple[Any, bool, str | None]:
        if text is None or not text.strip():
            return None, False, "empty answer"
        try:
            return self._parse(self._unwrap(text.strip())), True, None
        except (ValueError, jsonschema.ValidationError) as exc:
            msg = exc.message if isinstance(exc, jsonschema.ValidationError) else str(exc)
            return None, False, msg[:300]

    def _parse(self, text: str) -> Any:
        raise NotImplementedError

    def _unwrap(self, text: str) -> str:
        """An answer in the OpenAI shape ({"answer": value}) as the bare value, for a schema without an
        object root (which that shape wraps); any other text as it is."""
        if not text.startswith("{") or _is_object(self.json_schema()):
            return text
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        if not isinstance(value, dict) or list(value) != [WRAP]:
            return text
        return json.dumps(value[WRAP], ensure_ascii=False)


def _unquote(text: str) -> str:
    """Accept a bare answer or the same answer as a JSON string (servers answer JSON)."""
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(value, str):
            return value.strip()
    return text


@dataclass(frozen=True)
class Choice(Constraint):
    """Exactly one of the given strings (matched case-insensitively, returned canonically)."""

    options: tuple[str, ...]
    kind = "choice"

    def __post_init__(self) -> None:
        if not self.options or len(set(o.lower() for o in self.options)) != len(self.options):
            raise ValueError("Choice needs distinct, non-empty options")

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "options": list(self.options)}

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.options)}

    def gbnf(self) -> str:
        return "root ::= " + " | ".join(_gbnf_literal(o) for o in self.options)

    def _longest(self) -> str:
        return max(self.options, key=lambda o: len(json.dumps(o, ensure_ascii=False)))

    def _parse(self, text: str) -> str:
        answer = _unquote(text)
        for option in self.options:
            if answer.lower() == option.lower():
                return option
        raise ValueError(f"answer {answer[:60]!r} is not one of {list(self.options)}")


@dataclass(frozen=True)
class IntRange(Constraint):
    """An integer in [low, high]."""

    low: int
    high: int
    kind = "int_range"

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("IntRange needs low <= high")

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "low": self.low, "high": self.high}

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer", "minimum": self.low, "maximum": self.high}
        if self.high - self.low <= 100:
            # Grammar compilers (llama.cpp, outlines) enforce an enum but not always a range.
            schema["enum"] = list(range(self.low, self.high + 1))
        return schema

    def _longest(self) -> int:
        return max(self.low, self.high, key=lambda v: len(str(v)))

    def gbnf(self) -> str | None:
        if self.high - self.low > 2000:
            return None  # too many literals; the JSON-schema grammar bounds the form, parse() the range
        return "root ::= " + " | ".join(_gbnf_literal(str(v)) for v in range(self.high, self.low - 1, -1))

    def _parse(self, text: str) -> int:
        answer = _unquote(text)
        if len(answer) > 24:
            raise ValueError(f"answer too long for an integer: {answer[:40]!r}...")
        try:
            value = int(answer)
        except ValueError:
            raise ValueError(f"answer {answer!r} is not an integer") from None
        if not self.low <= value <= self.high:
            raise ValueError(f"answer {value} is outside [{self.low}, {self.high}]")
        return value


@dataclass(frozen=True)
class JsonSchema(Constraint):
    """A JSON document valid against `schema` (given as canonical JSON text, so it hashes)."""

    schema_text: str
    name: str = "answer"
    kind = "json_schema"

    @staticmethod
    def of(schema: dict[str, Any], name: str = "answer") -> JsonSchema:
        jsonschema.Draft202012Validator.check_schema(schema)
        return JsonSchema(json.dumps(schema, sort_keys=True, separators=(",", ":")), name)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "schema": json.loads(self.schema_text)}

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(self.schema_text)
        return schema

    @property
    def format_name(self) -> str:
        return self.name

    def _parse(self, text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg} at char {exc.pos}") from None
        error = jsonschema.exceptions.best_match(_validator(self.schema_text).iter_errors(value))
        if error is not None:
            raise error  # what jsonschema.validate raises, without checking the schema again on every answer
        return value


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> jsonschema.Draft202012Validator:
    """One validator per schema (its check, done in JsonSchema.of, costs milliseconds per answer otherwise)."""
    return jsonschema.Draft202012Validator(json.loads(schema_text))


@functools.lru_cache(maxsize=256)
def _compact(strict_text: str) -> str | None:
    """One compact grammar per strict schema (socsim.llm.compact.compact_gbnf)."""
    return compact.compact_gbnf(json.loads(strict_text))
