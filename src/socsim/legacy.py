"""Params of the shape before the model registry (model keys in `llm`, `{name: ..., model: ...}` entries in
the studies): `legacy_hint` gives the message that shows the registry entries such a file would need
(config.validate stops with it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

OLD_LLM_KEYS = ("backend", "model_path", "model", "endpoints", "api_key_env", "dialect", "n_ctx")
# Where the studies named models as {name, llm overrides} entries: dotted key -> list | one | map.
OLD_REFERENCES = {
    "facilitation.models": "list",
    "coherence.agent_models": "list",
    "coherence.judge_model": "one",
    "coherence.judge_models": "map",
    "opinion_dynamics.agent_models": "list",
    "opinion_dynamics.classifier.model": "one",
    "opinion_dynamics.validation.against": "one",
    "debate.agent_models": "list",
    "debate.annotator.model": "one",
}
_OLD_TO_NEW = {"backend": "backend", "model_path": "gguf", "model": "model_id", "endpoints": "endpoints"}
_OLD_TO_NEW |= {"api_key_env": "api_key_env", "dialect": "dialect", "n_ctx": "n_ctx", "sampling": "sampling"}


def _get(params: Mapping[str, Any], dotted: str) -> Any:
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _old_entries(value: Any, kind: str) -> Iterable[Mapping[str, Any]]:
    if kind == "map":
        items = list(value.values()) if isinstance(value, Mapping) else []
    else:
        items = value if kind == "list" and isinstance(value, list) else [value]
    return [e for e in items if isinstance(e, Mapping) and "name" in e]


def _new_entry(
    llm: Mapping[str, Any], overrides: Mapping[str, Any], converted: list[str] | None = None
) -> dict[str, Any]:
    merged = {**{k: v for k, v in llm.items() if k in OLD_LLM_KEYS}, **overrides}
    entry = {_OLD_TO_NEW[k]: v for k, v in merged.items() if k in _OLD_TO_NEW and v is not None}
    backend = entry.setdefault("backend", "embedded")
    if backend == "embedded":
        for k in ("endpoints", "api_key_env", "dialect"):
            entry.pop(k, None)
        if entry.get("model_id") and not entry.get("gguf"):
            # The old embedded backend ignored `model`: it ran SmolLM2-135M under this name. What was meant
            # is a server serving that model.
            entry = {"backend": "openai", "model_id": entry["model_id"], "endpoints": ["http://127.0.0.1:8000"]}
            if converted is not None:
                converted.append(entry["model_id"])
    return entry


def legacy_hint(params: Mapping[str, Any]) -> str | None:
    """For params of the shape before the registry: the message that shows the new shape; else None."""
    llm = params.get("llm") if isinstance(params.get("llm"), Mapping) else {}
    assert isinstance(llm, Mapping)
    old_llm = sorted(k for k in OLD_LLM_KEYS if k in llm)
    old_refs = [k for k, kind in OLD_REFERENCES.items() if _old_entries(_get(params, k), kind)]
    if not old_llm and not old_refs:
        return None
    registry: dict[str, Any] = {}
    studies: dict[str, Any] = {}
    converted: list[str] = []
    for key, kind in OLD_REFERENCES.items():
        value = _get(params, key)
        if not _old_entries(value, kind):
            continue
        for e in _old_entries(value, kind):
            entry = _new_entry(llm, {k: v for k, v in e.items() if k != "name"}, converted)
            if registry.setdefault(e["name"], entry) != entry:
                registry[f"{e['name']}-2"] = entry
        names: Any = (
            [e["name"] if isinstance(e, Mapping) else e for e in value]
            if kind == "list"
            else {k: v["name"] for k, v in value.items()}
            if kind == "map"
            else value["name"]
        )
        node = studies
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = names
    if not registry:  # only the llm section is old: the studies' default model ran on it
        registry["smollm2-135m"] = _new_entry(llm, {})
    shared = {k: v for k, v in llm.items() if k not in OLD_LLM_KEYS}
    new = {"models": registry, **({"llm": shared} if shared else {}), **studies}
    found = [f"llm.{k}" for k in old_llm] + old_refs
    return (
        "params use the shape before the model registry (" + ", ".join(found) + "). Models are now named "
        "entries of a top-level `models:` section, and studies refer to them by name only; `llm:` keeps what "
        "every model shares (sampling defaults, timeouts, retries, cache, concurrency). For these params:\n\n"
        + str(yaml.safe_dump(new, sort_keys=False, default_flow_style=None, width=110))
        + (
            f"\nThe embedded backend ignored `model` ({', '.join(converted)}): it ran SmolLM2-135M under those "
            "names. They are shown as server models (point endpoints at your server), or give `gguf: hf://...`."
            if converted
            else ""
        )
    )
