"""Before a run's first job: every model it needs can be used (servers answer and serve their model ids,
the engines of the servers it starts are installed, every hf:// GGUF is in the Hub cache or fetched now),
all checked at once, one error listing all that cannot be used."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from socsim import models
from socsim.models import ModelSpec


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


def check(params: Mapping[str, Any], names: Iterable[str], local: bool = True) -> None:
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

    specs = [models.resolve(params, n) for n in sorted(set(names))]
    servers = [s for s in specs if s.served and not s.serve]
    served = [s for s in specs if s.serve]
    missing = []
    for spec in served if local else []:
        try:
            serving.engine(spec.serve["engine"], spec.serve)  # type: ignore[index]
        except LLMError as exc:
            missing.append(f"{spec.name}: {spec.where()}: {exc}")

    async def one(spec: ModelSpec) -> str | None:
        backend = models.client(params, spec, cache_path="").backend
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
