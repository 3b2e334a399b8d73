"""params.yaml: loading, validation against workflow/schemas/params.schema.yaml, defaults.

The schema is the single description of every key: its type, range, default and meaning.
Validation fills defaults, then reports the first problems with the dotted key that caused
them, so that a bad value stops a run with a message a researcher can act on.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from socsim.canonical import canonical_json
from socsim.legacy import legacy_hint

SCHEMA_RELPATH = Path("workflow") / "schemas" / "params.schema.yaml"


class ParamsError(ValueError):
    """params.yaml does not satisfy the schema; the message names the key."""


def schema_path(params_path: str | os.PathLike[str] | None = None) -> Path:
    """Find params.schema.yaml: $SOCSIM_SCHEMA, next to params.yaml, or in the source tree."""
    candidates = []
    if os.environ.get("SOCSIM_SCHEMA"):
        candidates.append(Path(os.environ["SOCSIM_SCHEMA"]))
    if params_path is not None:
        candidates.append(Path(params_path).resolve().parent / SCHEMA_RELPATH)
    candidates.append(Path.cwd() / SCHEMA_RELPATH)
    candidates.append(Path(__file__).resolve().parents[2] / SCHEMA_RELPATH)
    for c in candidates:
        if c.is_file():
            return c
    raise ParamsError(f"cannot find the params schema; looked in: {', '.join(map(str, candidates))}")


def load_schema(params_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """params.schema.yaml (seed, llm) with every study's fragment beside it (<study>.schema.yaml)
    as the schema of its section."""
    path = schema_path(params_path)
    with open(path, encoding="utf-8") as fh:
        schema: dict[str, Any] = yaml.safe_load(fh)
    for fragment in sorted(path.parent.glob("*.schema.yaml")):
        if fragment != path:
            with open(fragment, encoding="utf-8") as fh:
                schema["properties"][fragment.name.removesuffix(".schema.yaml")] = yaml.safe_load(fh)
    return schema


def _fill_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """Recursively insert schema defaults for missing object keys."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        return value
    props = schema.get("properties", {})
    for key, sub in props.items():
        if key not in value and "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
        if key in value:
            value[key] = _fill_defaults(sub, value[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):  # a map of named entries (the models registry): each entry's defaults
        for key in value:
            if key not in props:
                value[key] = _fill_defaults(extra, value[key])
    return value


def _describe(schema: Mapping[str, Any]) -> str:
    """What the schema expects, in words."""
    parts = []
    if "oneOf" in schema:
        return " or ".join(_describe(s) for s in schema["oneOf"])
    if "enum" in schema:
        parts.append("one of " + ", ".join(json.dumps(v) for v in schema["enum"]))
    elif "type" in schema:
        t = schema["type"]
        parts.append(" or ".join(t) if isinstance(t, list) else t)
    for k, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if k in schema:
            parts.append(f"{word} {schema[k]}")
    if "pattern" in schema:
        parts.append(f"matching {schema['pattern']}")
    if "minItems" in schema:
        parts.append(f"at least {schema['minItems']} item(s)")
    return ", ".join(parts) or "a valid value"


def parameter_rows(schema: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(key, what it takes, default, description) of every key the schema declares, depth first; a map of named
    entries (the models registry) as `<prefix><name>.<key>`. A section's default is its keys' (shown on them)."""
    for key, sub in (schema.get("properties") or {}).items():
        name = f"{prefix}{key}"
        section = sub.get("type") == "object" and (
            "properties" in sub or isinstance(sub.get("additionalProperties"), dict)
        )
        default = "" if section or "default" not in sub else json.dumps(sub["default"])
        yield name, _describe(sub), default, " ".join(str(sub.get("description", "")).split())
        yield from parameter_rows(sub, name + ".")
        extra = sub.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("type") == "object":
            yield from parameter_rows(extra, f"{name}.<name>.")


def parameter_table(schema: Mapping[str, Any]) -> str:
    """docs/parameters.md: every key of params.yaml, from the schema (`socsim params table`; a test keeps the
    committed page equal to it)."""
    head = [
        "# Parameters",
        "",
        "Every key of `params.yaml`, generated from `workflow/schemas/` by `socsim params table > docs/parameters.md`",
        "(a test fails when this page and the schema differ). A section's default is its keys' defaults.",
        "",
        "| key | takes | default | what it is |",
        "| --- | --- | --- | --- |",
    ]

    def cell(x: str) -> str:
        return x.replace("|", "\\|")

    rows = [
        f"| `{k}` | {cell(t)} | {f'`{cell(d)}`' if d else ''} | {cell(w)} |" for k, t, d, w in parameter_rows(schema)
    ]
    return "\n".join(head + rows) + "\n"


def _format_error(err: jsonschema.ValidationError, origin: Callable[[list[Any]], str] = lambda path: "") -> str:
    """One line per bad key; `origin(path)`: where the key was set (" (set in <file>)"), or ""."""
    path = list(err.absolute_path)
    key = ".".join(str(p) for p in path) or "<top level>"
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        prefix = "" if key == "<top level>" else key + "."
        return "; ".join(
            f"{prefix}{k}: unknown key (allowed here: {', '.join(allowed) or 'none'}){origin([*path, k])}"
            for k in extra
        )
    if err.validator == "required":
        return f"{key}: {err.message}{origin(path)}"
    return f"{key}: expected {_describe(err.schema)}, got {json.dumps(err.instance)}{origin(path)}"


Source = tuple[str, Mapping[str, Any]]  # a params file's name (or a --set override) and what it sets


def sources(files: Iterable[str | os.PathLike[str]], missing_ok: bool = False) -> list[Source]:
    """Params files read, each with its name: where validate() says a bad key was set (`missing_ok`: a file
    that is not there is left out, as Snakemake leaves out its configfile when --configfile gives others)."""
    return [(str(f), read_yaml(f)) for f in files if not missing_ok or Path(f).is_file()]


def _origin(path: list[Any], given: Sequence[Source]) -> str:
    """Where the key at `path` was set: " (set in <the last source that sets it>)", or "" (none does: a default).
    A source sets it when it holds the whole path, or a value that is not a mapping on the way (it replaces)."""
    for name, data in reversed(given):
        node: Any = data
        for part in path:
            if not isinstance(node, Mapping):
                break
            node = node.get(part, _UNSET)
        if node is not _UNSET:
            return f" (set in {name})"
    return ""


_UNSET = object()


def in_files(files: Sequence[str | os.PathLike[str]], exc: Exception) -> ParamsError:
    """A params error prefixed by the file(s) whose merge it is about."""
    names = [str(f) for f in files]
    where = names[0] if len(names) == 1 else f"{', '.join(names)} (merged in this order)"
    return ParamsError(f"{where}: {exc}")


def validate(
    params: dict[str, Any] | None, schema: Mapping[str, Any] | None = None, given: Sequence[Source] = ()
) -> dict[str, Any]:
    """Return a validated deep copy of params with every default filled in. `given`: the sources params were
    merged from (sources()), so that each bad key says where it was set."""
    schema = schema if schema is not None else load_schema()
    params = copy.deepcopy(params) if params is not None else {}
    if not isinstance(params, dict):
        raise ParamsError(f"params must be a mapping of keys to values, got {type(params).__name__}")
    hint = legacy_hint(params)
    if hint:
        raise ParamsError(hint)
    params = _fill_defaults(schema, params)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        lines = [_format_error(e, lambda path: _origin(path, given)) for e in errors]
        raise ParamsError("invalid params:\n  " + "\n  ".join(lines))
    _check_semantics(params)
    return params


def _check_semantics(params: Mapping[str, Any]) -> None:
    """Rules a JSON schema cannot express."""
    roles = params.get("facilitation", {}).get("personas", {}).get("roles", {"any": 1})
    if sum(roles.values()) <= 0:
        raise ParamsError("facilitation.personas.roles: expected at least one role share > 0")


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge override into base, key by key (as Snakemake merges --configfile files)."""
    out = dict(base)
    for k, v in override.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: where (line and column, 1-based), what, and what it was reading."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return " ".join(str(exc).split())
    mark, ctx = exc.problem_mark, exc.context_mark
    during = f" ({exc.context} at line {ctx.line + 1}, column {ctx.column + 1})" if exc.context and ctx else ""
    return f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}{during}"


def read_yaml(path: str | os.PathLike[str], what: str = "params file") -> dict[str, Any]:
    """A YAML file holding a mapping (params, study materials), with errors that name the file."""
    path = Path(path)
    if not path.is_file():
        raise ParamsError(f"{what} not found: {path}")
    with open(path, encoding="utf-8") as fh:
        try:
            data = yaml.safe_load(fh) or {}
        except yaml.YAMLError as exc:
            raise ParamsError(f"{what} {path} is not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping of keys to values")
    return data


def load(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = "params.yaml", overrides: Iterable[str] = ()
) -> dict[str, Any]:
    """Read params files (later ones override earlier ones), apply key=value overrides
    (values parsed as YAML), validate and fill defaults."""
    paths = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    given = sources(paths)
    params: dict[str, Any] = {}
    for _, data in given:
        params = deep_merge(params, data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ParamsError(f"override {item!r}: expected key=value")
        parts = _dotted_parts(params, key)
        set_dotted(params, key, yaml.safe_load(raw))
        one: dict[str, Any] = {parts[-1]: True}  # where the key is, for the message
        for part in reversed(parts[:-1]):
            one = {part: one}
        given.append((f"--set {item}", one))
    try:
        return validate(params, load_schema(paths[0]), given)
    except ParamsError as exc:
        raise in_files(paths, exc) from None


def get_dotted(params: Mapping[str, Any], key: str) -> Any:
    node: Any = params
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def _dotted_parts(params: Mapping[str, Any], key: str) -> list[str]:
    """A dotted key's path in params: registry names may hold dots (qwen2.5-7b)."""
    parts = key.split(".")
    registry = params.get("models")
    if parts[0] == "models" and isinstance(registry, dict):
        rest = key.removeprefix("models.")
        name = max((n for n in registry if rest == n or rest.startswith(n + ".")), key=len, default=None)
        if name is not None:
            parts = ["models", name, *[p for p in rest.removeprefix(name).split(".") if p]]
    return parts


def set_dotted(params: dict[str, Any], key: str, value: Any) -> None:
    parts = _dotted_parts(params, key)
    node = params
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def subset(params: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The values of the given dotted keys, as a flat {key: value} mapping."""
    return {k: get_dotted(params, k) for k in sorted(keys)}


def params_hash(values: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(values).encode()).hexdigest()
