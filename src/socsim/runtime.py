"""The model half of a stage's context: which registry names its declaration lets it call, one client per
name (its backend, or a factory's: `socsim plan` counts), one call cache shared by them, and what answered
(identities, accounting, server records). A served model's client holds its lease on the run's own server
in its backend (socsim.serving.LeasedBackend: taken when the client is made, dropped on close)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from socsim import models
from socsim.config import ParamsError
from socsim.io.model_record import ModelRecord

if TYPE_CHECKING:
    from socsim.llm import LLMClient
    from socsim.models import ModelSpec
    from socsim.serving import LeasedBackend

# The accounting every stage's metrics sum over its models.
SUMMED = (
    "requests",
    "calls",
    "cache_hits",
    "constrained",
    "parse_failures",
    "parse_failures_cut",
    "retries",
    "prompt_tokens",
    "completion_tokens",
)


class ModelRuntime:
    """The clients of one stage's job. `declared`: the registry names its declaration allows (name -> the
    params key naming it); `cache_path`: where its call cache is (asked when the first client is made);
    `factory`: how a model becomes a client (None: its backend through the registry)."""

    def __init__(
        self,
        params: Mapping[str, Any],
        label: str,
        declared: Callable[[], Mapping[str, str]],
        cache_path: Callable[[], str | None],
        factory: Callable[[ModelSpec], LLMClient] | None = None,
    ) -> None:
        self._params, self.label = params, label
        self._declared, self._cache_path, self._factory = declared, cache_path, factory
        self._clients: dict[str, LLMClient] = {}  # registry name -> LLMClient

    def clients(
        self, names: Sequence[str], where: str, present: Iterable[Mapping[str, Any]] | None = None
    ) -> dict[str, LLMClient]:
        """One client per registry name; with `present`, only the models that rows of it name."""
        if present is not None:
            used = {r["model"] for r in present}
            names = [n for n in names if n in used]
        return {n: self.client(n, where) for n in dict.fromkeys(names)}

    def client(self, name: str, where: str) -> LLMClient:
        """The client of one registry name (one per job; the job's clients share its call cache)."""
        if name not in self._clients:
            declared = self._declared()
            if name not in declared:
                raise ParamsError(
                    f"stage {self.label} called model {name!r}, which its declaration does not name "
                    f"(declared: {', '.join(declared) or 'none'}); add it to the stage's models"
                )
            spec = models.resolve(self._params, name, where)
            self._clients[name] = self._made(spec) if self._factory is not None else self._built(spec)
        return self._clients[name]

    def _made(self, spec: ModelSpec) -> LLMClient:
        assert self._factory is not None
        client = self._factory(spec)
        client.name = client.name or spec.name
        return client

    def _built(self, spec: ModelSpec) -> LLMClient:
        """A client built once (socsim.models.client) with the job's one call cache, opened with its first
        client; a served model's lease on the run's own server taken now (socsim.serving.served_client)."""
        from socsim.llm.cache import CallCache

        shared = next((c.cache for c in self._clients.values() if c.cache is not None), None)
        path = None if shared is not None else self._cache_path()
        cache = shared if shared is not None else (CallCache(path) if path else None)
        try:
            if spec.serve:  # the run's own server: started (or joined) now, the lease in the client's backend
                from socsim import serving

                return serving.served_client(self._params, spec, cache)
            return models.client(self._params, spec, "", cache=cache)
        except BaseException:
            if cache is not None and cache is not shared:
                cache.close()
            raise

    def identity(self) -> dict[str, Any] | None:
        """Registry name -> the identity of the model that answered under it (None: no model was called)."""
        return {n: c.identity() for n, c in self._clients.items() if c.answered} or None

    def metrics(self) -> dict[str, Any]:
        """Accounting of the clients: totals, and each model's own (the models that answered)."""
        servers = self.servers()
        per = {
            name: ModelRecord(
                identity=c.identity(),
                accounting=c.accounting.as_metrics(),
                server=servers.get(name),
                engine=c.backend.engine,
                canary=c.backend.canaried,
                replayed_from=c.backend.replayed_from,
            ).as_json()
            for name, c in self._clients.items()
            if c.answered
        }
        known = [m["prompt_tokens_evaluated"] for m in per.values() if m["prompt_tokens_evaluated"] is not None]
        return {
            **{k: sum(m[k] for m in per.values()) for k in SUMMED},
            "prompt_tokens_evaluated": sum(known) if known else None,  # where the backends say
            "models": per,
        }

    def parse_summary(self, where: str) -> list[str]:
        """One line per model that answered: how many of its constrained answers did not parse."""
        lines = []
        for name, c in self._clients.items():
            if not c.answered:
                continue
            acc = c.accounting
            if acc.constrained:
                said = (
                    f"{acc.parse_failures} of {acc.constrained} constrained answers did not parse "
                    f"({100 * acc.parse_failures / acc.constrained:.1f} %)"
                    + (f", {acc.parse_failures_cut} of them cut at max_tokens" if acc.parse_failures_cut else "")
                )
            else:
                said = "no constrained answers"
            lines.append(f"socsim: {where}: model {name}: {said}")
        return lines

    def _leased(self) -> dict[str, LeasedBackend]:
        """Registry name -> the backend holding a lease on the run's own server of it."""
        from socsim.serving import LeasedBackend

        return {n: c.backend for n, c in self._clients.items() if isinstance(c.backend, LeasedBackend)}

    def servers(self) -> dict[str, dict[str, Any]]:
        """Registry name -> how the run's own server of it was started, for the served models that answered."""
        return {n: b.record for n, b in self._leased().items() if self._clients[n].answered}

    def failures(self) -> str:
        """What happened to the run's own servers these clients called, where one failed or died ("": none)."""
        return "\n".join(f"models.{n}: {f}" for n, b in self._leased().items() if (f := b.failure()))

    def close(self) -> None:
        for b in self._leased().values():
            b.release()
        caches = {id(c.cache): c.cache for c in self._clients.values() if c.cache is not None}
        for cache in caches.values():
            cache.close()
