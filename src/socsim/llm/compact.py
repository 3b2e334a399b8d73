"""A JSON schema as the grammar of its compact JSON: no whitespace between tokens, properties in order.

Why: an engine given a JSON schema (OpenAI's `response_format`) lets the model put any whitespace between
JSON tokens unless the server was started otherwise (vLLM's `--structured-outputs-config
'{"disable_any_whitespace": true}'`, which socsim's own servers get). A server a user started with its defaults
let SmolLM2 spend its answer on newlines between the braces and cut it at max_tokens. vLLM (0.32) accepts
`disable_any_whitespace` per request but applies only the server's setting; a grammar per request is
what every server applies: vLLM's `structured_outputs.grammar`, SGLang's `ebnf` (both XGrammar's EBNF, which
reads llama.cpp's GBNF).

`compact_gbnf(schema)` is the GBNF of the schema's compact JSON (`json.dumps(value, separators=(",", ":"))`, keys
in the order of `properties`), for the schemas socsim sends (`strict_schema`: every property required, no
others): objects, strings (enum, const, minLength/maxLength, a pattern of character classes, literals and
quantifiers), integers (enum, a bounded range), numbers, booleans, null, arrays (items, minItems/maxItems),
`anyOf` and type lists. It returns None for anything else (a keyword it does not know, a pattern with groups
or alternatives), and the request goes as a JSON schema as before. What the grammar lets through, the
constraint's parse() still validates against the schema.

`skeleton(schema)`: the compact answer with every free string empty and every other value at its longest,
the part of an answer that is not the model's own words (its UTF-8 bytes bound its tokens).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# A JSON string's character: anything but a quote, a backslash or a control character, or an escape.
CHAR = r'( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )'
NUMBER = r'"-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?'
INTEGER = r'( "0" | "-"? [1-9] [0-9]{0,17} )'
KNOWN = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "items",
    "minItems",
    "maxItems",
    "anyOf",
    "description",
    "title",
}
MAX_LITERALS = 2000  # an integer range enumerated as literals up to this many values
MAX_REPEAT = 10_000


class Unsupported(Exception):
    """The schema has something the compact grammar does not express (the request goes as a JSON schema)."""


def literal(value: Any) -> str:
    """A GBNF literal of a JSON value's compact text."""
    return json.dumps(json.dumps(value, ensure_ascii=False, separators=(",", ":")), ensure_ascii=False)


def _gbnf(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def compact_gbnf(schema: dict[str, Any]) -> str | None:
    """The GBNF grammar (root rule `root`) of the schema's compact JSON, or None where it cannot say it."""
    rules: dict[str, str] = {}
    try:
        root = _node(schema, rules)
    except Unsupported:
        return None
    return "\n".join([f"root ::= {root}", *(f"{k} ::= {v}" for k, v in rules.items())])


def _node(s: Any, rules: dict[str, str]) -> str:
    if not isinstance(s, dict) or set(s) - KNOWN:
        raise Unsupported(f"keywords {sorted(set(s) - KNOWN) if isinstance(s, dict) else s!r}")
    if "const" in s:
        return literal(s["const"])
    if "enum" in s:
        if not s["enum"]:
            raise Unsupported("empty enum")
        return "( " + " | ".join(literal(v) for v in s["enum"]) + " )"
    if "anyOf" in s:
        return "( " + " | ".join(_node(b, rules) for b in s["anyOf"]) + " )"
    kind = s.get("type")
    if isinstance(kind, list):
        return "( " + " | ".join(_node({**s, "type": k}, rules) for k in kind) + " )"
    if kind == "object" or (kind is None and "properties" in s):
        return _object(s, rules)
    if kind == "string":
        return _string(s, rules)
    if kind == "integer":
        return _integer(s, rules)
    if kind == "number":
        if "minimum" in s or "maximum" in s:
            raise Unsupported("a bounded number")
        rules.setdefault("number", NUMBER)
        return "number"
    if kind == "boolean":
        return '( "true" | "false" )'
    if kind == "null":
        return '"null"'
    if kind == "array":
        return _array(s, rules)
    raise Unsupported(f"type {kind!r}")


def _object(s: dict[str, Any], rules: dict[str, str]) -> str:
    props = s.get("properties") or {}
    if s.get("additionalProperties", True) is not False or set(s.get("required") or []) != set(props):
        raise Unsupported("an object that is not strict (all properties required, no others)")
    parts = []
    for i, (key, sub) in enumerate(props.items()):
        parts.append(_gbnf(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":") + " " + _node(sub, rules))
    return " ".join([_gbnf("{"), *parts, _gbnf("}")])


def _repeat(atom: str, low: int, high: int | None) -> str:
    if high is not None and high > MAX_REPEAT:
        raise Unsupported("a repetition too long")
    if high is None:
        return f"{atom}{{{low},}}" if low else f"{atom}*"
    return f"{atom}{{{low},{high}}}"


def _string(s: dict[str, Any], rules: dict[str, str]) -> str:
    if "pattern" in s:
        if "minLength" in s or "maxLength" in s:
            raise Unsupported("a pattern with length bounds")
        return f'"\\"" {pattern_gbnf(s["pattern"])} "\\""'
    rules.setdefault("char", CHAR)
    return f'"\\"" {_repeat("char", int(s.get("minLength", 0)), s.get("maxLength"))} "\\""'


def _integer(s: dict[str, Any], rules: dict[str, str]) -> str:
    low, high = s.get("minimum"), s.get("maximum")
    if low is not None and high is not None and high - low < MAX_LITERALS:  # the integers in [low, high]
        return "( " + " | ".join(_gbnf(str(v)) for v in range(math.floor(high), math.ceil(low) - 1, -1)) + " )"
    if low is not None or high is not None:
        raise Unsupported("an integer range too wide to enumerate")
    rules.setdefault("integer", INTEGER)
    return "integer"


def _array(s: dict[str, Any], rules: dict[str, str]) -> str:
    if not isinstance(s.get("items"), dict):
        raise Unsupported("an array without one items schema")
    item = _node(s["items"], rules)
    low, high = int(s.get("minItems", 0)), s.get("maxItems")
    if high is not None and high == 0:
        return '"[]"'
    rest = _repeat(f'( "," {item} )', max(low - 1, 0), None if high is None else int(high) - 1)
    body = f"{item} {rest}"
    return f'"[" {body} "]"' if low else f'"[" ( {body} )? "]"'


# -- patterns: a regex of character classes, literals and quantifiers, anchored at both ends --------------

_TOKEN = re.compile(r"\[(?:\\.|[^\]\\])+\]|\\[dws]|\\.|[^\\\[\]{}()*+?|^$.]")
_QUANT = re.compile(r"\{(\d+)(?:,(\d*))?\}|[*+?]")
_CLASSES = {r"\d": "[0-9]", r"\w": "[A-Za-z0-9_]"}


def pattern_gbnf(pattern: str) -> str:
    """A JSON-string pattern as GBNF (characters that a JSON string would escape are refused)."""
    if not (pattern.startswith("^") and pattern.endswith("$")):
        raise Unsupported("an unanchored pattern")
    body, out, i = pattern[1:-1], [], 0
    while i < len(body):
        m = _TOKEN.match(body, i)
        if m is None:
            raise Unsupported(f"pattern {pattern!r}")
        tok, i = m.group(), m.end()
        if tok in _CLASSES:
            atom = _CLASSES[tok]
        elif tok.startswith("["):
            _safe_class(tok)
            atom = tok
        elif tok.startswith("\\"):
            if tok[1] in '"\\' or tok[1].isalnum():
                raise Unsupported(f"pattern escape {tok!r}")
            atom = _gbnf(tok[1])
        else:
            if tok in '"\\' or ord(tok) < 0x20:
                raise Unsupported(f"pattern character {tok!r}")
            atom = _gbnf(tok)
        q = _QUANT.match(body, i)
        if q is not None:
            i = q.end()
            if q.group() in "*+?":
                atom += q.group()
            else:
                low = int(q.group(1))
                high = low if q.group(2) is None else (int(q.group(2)) if q.group(2) else None)
                atom = _repeat(atom, low, high)
        out.append(atom)
    return " ".join(out) if out else '""'


def _safe_class(tok: str) -> None:
    """A pattern's character class that a JSON string may hold unescaped: not negated, without escapes, and
    no character or range that takes in a control character, a quote or a backslash."""
    body = tok[1:-1]
    if body.startswith("^") or "\\" in body:
        raise Unsupported(f"pattern class {tok!r}")
    i = 0
    while i < len(body):
        low = high = body[i]
        if i + 2 < len(body) and body[i + 1] == "-":
            high, i = body[i + 2], i + 3
        else:
            i += 1
        if ord(low) < 0x20 or any(ord(low) <= c <= ord(high) for c in (0x22, 0x5C)):
            raise Unsupported(f"pattern class {tok!r} takes in a character a JSON string escapes")


def skeleton(schema: dict[str, Any]) -> Any:
    """The schema's answer with every free string empty and every other value at its longest (enum values,
    integer bounds, the longest number the grammar allows), arrays at their most items (their fewest where
    unbounded, which has_free_text counts as free): the part of an answer that is not the model's own words,
    and where nothing is free, a bound on the whole answer."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and schema["enum"]:
        return _longest(schema["enum"])
    if "anyOf" in schema and schema["anyOf"]:
        return _longest([skeleton(b) for b in schema["anyOf"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _longest([skeleton({**schema, "type": k}) for k in kind]) if kind else ""
    if kind == "object" or (kind is None and "properties" in schema):
        return {k: skeleton(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "integer":
        bounds = [b for b in (schema.get("minimum"), schema.get("maximum")) if b is not None]
        return _longest(bounds) if len(bounds) == 2 else -(10**17)  # INTEGER: a sign and 18 digits
    if kind == "number":
        return -1.234567890123456e-100  # about as long as NUMBER allows
    if kind == "array":
        n = schema.get("maxItems", schema.get("minItems", 0))
        return [skeleton(schema.get("items") or {})] * int(n)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return ""


def _longest(values: list[Any]) -> Any:
    return max(values, key=lambda v: len(json.dumps(v, ensure_ascii=False)))


def has_free_text(schema: Any) -> bool:
    """Whether the schema lets the model write words of its own (a string that is not an enum or const)."""
    if not isinstance(schema, dict) or "enum" in schema or "const" in schema:
        return False
    if schema.get("type") == "string" or (isinstance(schema.get("type"), list) and "string" in schema["type"]):
        return True
    if schema.get("type") == "array" and "maxItems" not in schema:
        return True  # as many items as the model writes
    subs = [*(schema.get("properties") or {}).values(), *(schema.get("anyOf") or [])]
    if isinstance(schema.get("items"), dict):
        subs.append(schema["items"])
    return any(has_free_text(v) for v in subs)
