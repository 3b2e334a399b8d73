"""LLMClient: the one async interface the studies use, whatever backend answers.

cache lookup -> backend call (retries, pool, concurrency) -> cache store -> validation ->
accounting. A request's answer depends only on (model identity, request), so re-runs cost
no calls and a crashed stage resumes from the calls that finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from socsim.llm.accounting import Accounting
from socsim.llm.cache import CallCache, request_key
from socsim.llm.types import Completion, Request, Response, Sampling
from socsim.progress import gather_with_progress


class Backend(Protocol):
    """What every backend (embedded, tgi, openai) provides; only LLMClient talks to it."""

    retries: int  # retries so far (timeouts, connection errors, 429, 5xx)

    async def probe(self) -> dict[str, Any]: ...  # load the model / check every endpoint; returns identity()

    def identity(self) -> dict[str, Any]: ...  # backend, model id, revision/sha: part of every cache key

    async def complete(self, request: Request) -> Completion: ...

    async def aclose(self) -> None: ...  # release the model / connections (a later call reopens)


class LLMClient:
    """Use as `async with client:` (or call `aclose()`) to probe and then release the backend;
    `run()` does so for a synchronous stage. `close()` closes the call cache (a stage's context
    closes the caches it opened)."""

    def __init__(self, backend: Backend, cache: CallCache | None, default_sampling: Sampling | None = None):
        self.backend = backend
        self.cache = cache
        self.default_sampling = default_sampling or Sampling()
        self.accounting = Accounting()
        self._probed = False
        self.verified: dict[str, Any] | None = None  # the identity the backend reported when it was probed

    @property
    def answered(self) -> bool:
        """Whether the model was reached (probed: loaded, or its server checked) under this client."""
        return self.verified is not None

    @classmethod
    def from_params(
        cls, params: dict[str, Any], model: str | None = None, cache_path: str | Path | None = None
    ) -> LLMClient:
        """The client of one models-registry entry of validated params (default: the first one)."""
        from socsim import models

        name = model if model is not None else next(iter(params["models"]))
        built = models.client(params, models.resolve(params, name), cache_path)
        return built if cls is LLMClient else cls(built.backend, built.cache, built.default_sampling)

    async def probe(self) -> dict[str, Any]:
        """Health-check the backend (load the model / probe every endpoint) and return its identity."""
        identity = await self.backend.probe()
        self._probed = True
        self.verified = identity
        return identity

    def identity(self) -> dict[str, Any]:
        return self.backend.identity()

    def sampling(self, **overrides: float | None) -> Sampling:
        base = self.default_sampling.as_dict()
        base.update({k: v for k, v in overrides.items() if v is not None})
        return Sampling(**base)

    async def generate(self, request: Request) -> Response:
        if not self._probed:
            await self.probe()
        acc = self.accounting
        acc.requests += 1
        key = request_key(self.identity(), request) if self.cache is not None else ""
        completion = self.cache.get(key) if self.cache is not None else None
        cached = completion is not None
        if completion is not None:  # cached
            acc.cache_hits += 1
        else:
            acc.call_started()
            try:
                completion = await self.backend.complete(request)
            finally:
                acc.retries = self.backend.retries  # the backend's total: concurrent requests share it
                if hasattr(self.backend, "endpoint_stats"):  # server pools: calls, failures, retries per endpoint
                    acc.endpoints = self.backend.endpoint_stats()
            acc.call_finished(completion, grammar=request.constraint is not None)
            if self.cache is not None:
                self.cache.put(key, completion, self.identity())
        if request.constraint is not None:
            value, ok, err = request.constraint.parse(completion.text)
        else:
            value, ok, err = completion.text, True, None
        if not ok:
            acc.parse_failures += 1
        return Response(
            text=completion.text,
            value=value,
            parse_ok=ok,
            parse_error=err,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            finish_reason=completion.finish_reason,
            cached=cached,
        )

    async def generate_all(self, requests: Sequence[Request], desc: str = "LLM calls") -> list[Response]:
        """Answer all requests concurrently (bounded by the backend); results in input order."""
        if not self._probed:
            await self.probe()
        return await gather_with_progress((self.generate(r) for r in requests), desc, unit="call")

    def run(self, requests: Sequence[Request], desc: str = "LLM calls") -> list[Response]:
        """Synchronous entry point for a stage: probe, answer everything, release the backend."""

        async def main() -> list[Response]:
            async with self:
                return await self.generate_all(requests, desc)

        return asyncio.run(main())

    async def __aenter__(self) -> LLMClient:
        await self.probe()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the backend (model memory, connections); the cache stays open for later calls."""
        await self.backend.aclose()
        self._probed = False

    def close(self) -> None:
        """Close the call cache (at the end of the stage)."""
        if self.cache is not None:
            self.cache.close()
