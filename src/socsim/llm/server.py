"""Server backends: TGI and any OpenAI-compatible server, through huggingface_hub's
AsyncInferenceClient, over a pool of base URLs.

The two differ only in their structured-output dialect (and in how they report the model).
Requests go to the least-busy endpoint, with a bounded number in flight per endpoint;
connection errors, timeouts, 429 and 5xx are retried with exponential backoff and jitter.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import httpx2
from huggingface_hub import AsyncInferenceClient
from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError

from socsim.llm.errors import EndpointUnavailableError, LLMError
from socsim.llm.types import Completion, Request

RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class RetryPolicy:
    max_tries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def delay(self, attempt: int) -> float:
        """Full-jitter exponential backoff for the given (1-based) failed attempt."""
        cap = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return random.uniform(cap / 2, cap)


class _Endpoint:
    def __init__(self, url: str, concurrency: int, timeout: float):
        self.url = url.rstrip("/")
        self.semaphore = asyncio.Semaphore(concurrency)
        self.in_flight = 0  # waiting for or holding the semaphore
        self.active = 0  # holding it: requests sent and not yet answered
        self.max_active = 0
        self.client = AsyncInferenceClient(base_url=self.url, timeout=timeout)


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, (InferenceTimeoutError, httpx2.TransportError, asyncio.TimeoutError)):
        return True
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return exc.response.status_code in RETRYABLE_STATUS
    return False


def _describe(exc: BaseException) -> str:
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code}: {str(exc).splitlines()[0][:200]}"
    return f"{type(exc).__name__}: {exc}"[:300]


class ServerBackend:
    def __init__(self, kind: str, endpoints: list[str], dialect: str | None = None, model: str | None = None,
                 concurrency: int = 8, timeout: float = 120.0, retry: RetryPolicy | None = None):
        if kind not in ("tgi", "openai"):
            raise ValueError(f"unknown server backend {kind!r}")
        self.kind = kind
        self.dialect = dialect or kind
        self.model = model
        self.endpoint_urls = [u.rstrip("/") for u in endpoints]
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.retries = 0
        self._endpoints: list[_Endpoint] | None = None
        self._identity: dict | None = None
        self._rr = 0

    # -- health ---------------------------------------------------------------------------
    async def _probe_one(self, client: httpx2.AsyncClient, url: str) -> dict:
        paths = ["/info", "/v1/models"] if self.kind == "tgi" else ["/v1/models", "/info"]
        last = None
        for path in paths:
            try:
                resp = await client.get(url + path)
            except httpx2.HTTPError as exc:
                raise EndpointUnavailableError(
                    f"LLM endpoint {url} is unreachable ({type(exc).__name__}: {exc}); start the server or fix "
                    f"llm.endpoints in params.yaml") from None
            if resp.status_code == 200:
                data = resp.json()
                if path == "/info":
                    return {"model_id": data.get("model_id"), "model_sha": data.get("model_sha"),
                            "server": f"tgi {data.get('version', '')}".strip()}
                models = data.get("data") or []
                ids = [m.get("id") for m in models]
                if self.model and self.model not in ids:
                    raise EndpointUnavailableError(
                        f"LLM endpoint {url} does not serve llm.model={self.model!r} (it lists {ids})")
                return {"model_id": self.model or (ids[0] if ids else None), "model_sha": None,
                        "server": "openai-compatible"}
            last = f"HTTP {resp.status_code} on {path}"
        raise EndpointUnavailableError(f"LLM endpoint {url} failed its health probe ({last})")

    async def probe(self) -> dict:
        """Check every endpoint before a stage starts; record the model they serve."""
        async with httpx2.AsyncClient(timeout=min(self.timeout, 10.0)) as client:
            infos = await asyncio.gather(*(self._probe_one(client, u) for u in self.endpoint_urls))
        models = {(i["model_id"], i["model_sha"]) for i in infos}
        if len(models) > 1:
            listing = ", ".join(f"{u} -> {i['model_id']}@{i['model_sha']}" for u, i in zip(self.endpoint_urls, infos))
            raise LLMError(f"llm.endpoints serve different models ({listing}); a pool must serve one model")
        info = infos[0]
        self._identity = {"backend": self.kind, "dialect": self.dialect, "model_id": info["model_id"],
                          "model_sha": info["model_sha"], "runtime": info["server"]}
        self._endpoints = [_Endpoint(u, self.concurrency, self.timeout) for u in self.endpoint_urls]
        return self._identity

    def identity(self) -> dict:
        if self._identity is None:
            raise LLMError("server backend used before probe()")
        return self._identity

    # -- calls ----------------------------------------------------------------------------
    def _pick(self) -> _Endpoint:
        assert self._endpoints is not None
        n = len(self._endpoints)
        order = [self._endpoints[(self._rr + i) % n] for i in range(n)]
        self._rr = (self._rr + 1) % n
        return min(order, key=lambda e: e.in_flight)

    async def _call(self, ep: _Endpoint, request: Request) -> Completion:
        kwargs = dict(
            messages=request.message_dicts(),
            max_tokens=request.sampling.max_tokens,
            temperature=request.sampling.temperature,
            top_p=request.sampling.top_p,
            seed=request.seed,
        )
        if self.model:
            kwargs["model"] = self.model
        if request.constraint is not None:
            kwargs["response_format"] = request.constraint.response_format(self.dialect)
        out = await ep.client.chat_completion(**kwargs)
        choice = out.choices[0]
        usage = out.usage
        return Completion(text=choice.message.content or "", prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                          finish_reason=choice.finish_reason, endpoint=ep.url)

    async def complete(self, request: Request) -> Completion:
        if self._endpoints is None:
            await self.probe()
        errors: list[str] = []
        for attempt in range(1, self.retry.max_tries + 1):
            ep = self._pick()
            ep.in_flight += 1
            try:
                async with ep.semaphore:
                    ep.active += 1
                    ep.max_active = max(ep.max_active, ep.active)
                    try:
                        return await self._call(ep, request)
                    finally:
                        ep.active -= 1
            except Exception as exc:  # noqa: BLE001 - classified below
                if not _retryable(exc):
                    raise LLMError(f"LLM request to {ep.url} failed: {_describe(exc)}") from exc
                errors.append(f"{ep.url}: {_describe(exc)}")
            finally:
                ep.in_flight -= 1
            if attempt < self.retry.max_tries:
                self.retries += 1
                await asyncio.sleep(self.retry.delay(attempt))
        raise EndpointUnavailableError(
            f"LLM request failed after {self.retry.max_tries} tries; last errors: " + " | ".join(errors[-3:]))

    async def aclose(self) -> None:
        for ep in self._endpoints or []:
            await ep.client.close()
