"""Constraint parsing: valid, invalid, empty and over-long answers; dialects; seeds."""

import json

import pytest

from socsim.llm import Choice, IntRange, JsonSchema, derive_seed


@pytest.mark.parametrize("text,expected", [("yes", "Yes"), ("  No \n", "No"), ('"yes"', "Yes"), ("MAYBE", "Maybe")])
def test_choice_valid(text, expected):
    value, ok, err = Choice(("Yes", "No", "Maybe")).parse(text)
    assert (value, ok, err) == (expected, True, None)


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("Perhaps", "not one of"),
        ("Yes, because the argument is convincing and " + "long " * 50, "not one of"),
    ],
)
def test_choice_invalid(text, reason):
    value, ok, err = Choice(("Yes", "No", "Maybe")).parse(text)
    assert value is None and ok is False and reason in err


@pytest.mark.parametrize("text,expected", [("3", 3), (" 5\n", 5), ('"1"', 1), ("-2", -2)])
def test_int_range_valid(text, expected):
    assert IntRange(-2, 5).parse(text) == (expected, True, None)


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty"),
        ("6", "outside"),
        ("-3", "outside"),
        ("three", "not an integer"),
        ("2.5", "not an integer"),
        ("4" * 40, "too long"),
        ("3 because I mostly agree with the statement", "too long"),
    ],
)
def test_int_range_invalid(text, reason):
    value, ok, err = IntRange(-2, 5).parse(text)
    assert value is None and not ok and reason in err


SCHEMA = {
    "type": "object",
    "required": ["name", "age"],
    "additionalProperties": False,
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


def test_json_schema_valid():
    value, ok, err = JsonSchema.of(SCHEMA).parse('{"name": "Ann", "age": 40}')
    assert ok and value == {"name": "Ann", "age": 40} and err is None


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty"),
        ('{"name": "Ann"}', "'age' is a required property"),
        ('{"name": "Ann", "age": -1}', "minimum"),
        ('{"name": "Ann", "age": 4', "not valid JSON"),  # truncated, e.g. max_tokens hit
        ('{"name": "Ann", "age": 4} and some more text after it', "not valid JSON"),
    ],
)
def test_json_schema_invalid(text, reason):
    value, ok, err = JsonSchema.of(SCHEMA).parse(text)
    assert value is None and not ok and reason in err


def test_invalid_schema_rejected_early():
    with pytest.raises(Exception):  # noqa: B017 - jsonschema's SchemaError or ours: any refusal will do
        JsonSchema.of({"type": "no-such-type"})


def test_dialects():
    c = JsonSchema.of(SCHEMA, name="person")
    assert c.response_format("tgi") == {"type": "json", "value": SCHEMA}
    oa = c.response_format("openai")
    assert oa["type"] == "json_schema" and oa["json_schema"]["schema"] == {**SCHEMA, "additionalProperties": False}
    assert oa["json_schema"]["name"] == "person"
    assert IntRange(1, 5).response_format("tgi")["value"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5,
        "enum": [1, 2, 3, 4, 5],
    }
    assert IntRange(1, 5).response_format("llama_cpp")["type"] == "json_object"
    with pytest.raises(ValueError):
        c.response_format("nope")


def test_grammars():
    assert Choice(("a", 'say "hi"')).gbnf() == 'root ::= "a" | "say \\"hi\\""'
    g = IntRange(1, 3).gbnf()
    assert g == 'root ::= "3" | "2" | "1"'
    assert IntRange(0, 10**6).gbnf() is None  # falls back to the JSON-schema grammar
    assert JsonSchema.of(SCHEMA).gbnf() is None


def test_constraint_spec_is_stable():
    a = JsonSchema.of({"b": 1, "type": "object", "a": 2} | {"properties": {}})
    b = JsonSchema.of({"type": "object", "properties": {}, "a": 2, "b": 1})
    assert json.dumps(a.spec(), sort_keys=True) == json.dumps(b.spec(), sort_keys=True)


def test_seed_derivation():
    s = derive_seed(7, "facilitation", "personas", 3)
    assert s == derive_seed(7, "facilitation", "personas", 3)
    assert 0 <= s < 2**31
    others = {derive_seed(7, "facilitation", "personas", i) for i in range(1000)}
    assert len(others) == 1000  # no collisions among sibling ids
    assert derive_seed(8, "facilitation", "personas", 3) != s
    assert derive_seed(7, "facilitation", "personas3") != derive_seed(7, "facilitation", "personas", 3)


@pytest.mark.parametrize(
    "constraint,text,expected",
    [
        (Choice(("Yes", "No")), '{"answer": "yes"}', "Yes"),
        (IntRange(1, 5), '{"answer": 4}', 4),
        (IntRange(1, 5), '{ "answer" : "2" }', 2),
        (JsonSchema.of({"type": "array", "items": {"type": "integer"}}), '{"answer": [1, 2]}', [1, 2]),
    ],
)
def test_the_openai_wrapper_is_unwrapped(constraint, text, expected):
    assert constraint.parse(text) == (expected, True, None)


def test_an_object_root_is_never_unwrapped():
    c = JsonSchema.of({"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}})
    assert c.parse('{"answer": 3}') == ({"answer": 3}, True, None)
    assert c.wire_overhead("openai") == 0 and Choice(("a", "b")).wire_overhead("tgi") == 0
    # The whole compact wrapped answer in characters: a bound on its tokens at any tokenization.
    assert Choice(("Yes", "No")).wire_overhead("openai") == len('{"answer":"Yes"}')
    assert IntRange(-20, 5).wire_overhead("openai") == len('{"answer":-20}')
    assert JsonSchema.of({"type": "string"}).wire_overhead("openai") == len('{"answer":""}')
    assert Choice(("Ja", "Nein, danke schön")).wire_overhead("openai") == len('{"answer":"Nein, danke schön"}') + 1
    # A schema with properties but no type is an object: never wrapped, never unwrapped.
    untyped = JsonSchema.of({"properties": {"answer": {"type": "integer"}}, "required": ["answer"]})
    assert untyped.wire_overhead("openai") == 0 and untyped.parse('{"answer": 3}')[0] == {"answer": 3}
    assert untyped.response_format("openai")["json_schema"]["schema"]["type"] == "object"
    value, ok, err = Choice(("Yes", "No")).parse('{"answer": "Maybe"}')
    assert not ok and "Maybe" in err  # a wrapped answer outside the options still fails
    assert Choice(("Yes", "No")).parse('{"answer": "Yes", "x": 1}')[1] is False  # not the wrapper: kept as is
