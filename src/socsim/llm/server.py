"""Server backends: TGI and any OpenAI-compatible server, over a pool of base URLs.

Every request is one POST of `/v1/chat/completions` (TGI's Messages API is the same route) whose body is
exactly what `request_body` builds: no client library in between rewrites it. (huggingface_hub's
`chat_completion` turned a `json_schema` response_format into `json_object`, which vLLM and SGLang read as
"any JSON object": every constrained answer came back `{}`.) The dialects differ only in their
structured-output shape (socsim.llm.constraints) and in what TGI needs of its sampling fields.

The pool: each request goes to the least-busy live endpoint, with a bounded number in flight per endpoint.
Connection errors, timeouts, 429 and 5xx are retried with exponential backoff and jitter, on another endpoint
when one is ready; an HTTP 500 whose body repeats that of the try before is a request the server cannot take
(llama-cpp-python's server given OpenAI's json_schema), not retried further. An endpoint that fails backs off
(no request goes to it) and is health-checked when its backoff ends; after `max_tries` failures in a row (one
per backoff window) it is taken out of the pool and its requests go to the others. Only when every endpoint is
out does a request fail, with an error naming each endpoint and its last error. An endpoint that does not
answer the health probe at the start is left out the same way (with a warning), as long as one does answer.

API keys: a server that requires one (vLLM's --api-key, a hosted endpoint) gets it from the
environment variable that params name (`api_key_env` of the models entry, or of one endpoint). The key
itself is never stored: not in params, identity (cache keys, provenance), metrics, nor any message.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from socsim.llm.errors import EndpointUnavailableError, LLMConfigError, LLMError, ModelIdentityError
from socsim.llm.types import Capabilities, Completion, Request

RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}
NO_KEY = "EMPTY"  # the Bearer token sent to servers that need no key (OpenAI clients' convention)
AUTH_STATUS = {401, 403}


def _evaluated(usage: dict[str, Any], prompt_tokens: int) -> int | None:
    """The prompt tokens a server evaluated: its prompt tokens less those it served from its prefix
    cache, where its usage says (OpenAI-compatible `prompt_tokens_details.cached_tokens`; vLLM with
    --enable-prompt-tokens-details, SGLang with --enable-cache-report); None where it does not."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return None if cached is None else prompt_tokens - int(cached)


def api_url(base: str, path: str) -> str:
    """`path` (e.g. "/chat/completions") under the server's OpenAI-compatible API: a base URL that ends
    in /v1 (https://api.openai.com/v1) is the API root, any other gets /v1 added (http://host:8000)."""
    base = base.rstrip("/")
    return base + path if base.endswith("/v1") else base + "/v1" + path


# Engines that take a grammar per request, and the field it goes in (both read XGrammar's EBNF, a superset
# of llama.cpp's GBNF). vLLM 0.32 accepts `structured_outputs.disable_any_whitespace` per request but applies
# only the server's setting (measured: the same spaced answer with and without it), so socsim sends the
# answer's compact-JSON grammar (socsim.llm.compact): every server then answers as one socsim started.
GRAMMAR_FIELDS = {"vllm": "structured_outputs.grammar", "sglang": "ebnf"}
# Sent to vLLM and SGLang, whose servers started plainly apply the model's generation_config.json
# (`--generation-config auto`, `--sampling-defaults model`: top_k, min_p, repetition_penalty) to what a request
# leaves out, where the servers socsim starts apply neutral values: a request then samples alike on both.
NEUTRAL_SAMPLING = {"top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}


def constraint_field(request: Request, dialect: str, engine: str | None) -> str | None:
    """Where a request's output constraint goes on the wire: the engine's grammar field (GRAMMAR_FIELDS) for
    a known engine in the `openai` dialect where the compact grammar can say the schema, else
    `response_format` (None: no constraint)."""
    if request.constraint is None:
        return None
    if dialect == "openai" and engine in GRAMMAR_FIELDS and request.constraint.compact_grammar() is not None:
        return GRAMMAR_FIELDS[engine]
    return "response_format"


def request_body(
    request: Request,
    dialect: str,
    model: str | None,
    strict_roles: bool = False,
    engine: str | None = None,
    field: str | None = None,
) -> dict[str, Any]:
    """The JSON body of one chat completion, as it goes on the wire: the messages, the sampling, the seed,
    the model, the output constraint in the dialect's shape (for vLLM and SGLang, `engine`: the grammar of
    its compact JSON, constraint_field). What of an answer is not the model's own words (the wrapper of that
    shape, an object's keys) does not eat its max_tokens (Constraint.wire_max_tokens).

    TGI (its sources): temperature 0 is greedy only while top_p is not sent (a top_p < 1 turns sampling
    back on, at temperature 1), and top_p = 1.0 is refused (HTTP 422); so to TGI a greedy request goes
    without top_p, and a top_p >= 1 (no nucleus cut) is left out. Other servers always get top_p: a
    llama.cpp server left without one applies its own default (0.95)."""
    s = request.sampling
    budget = s.max_tokens if request.constraint is None else request.constraint.wire_max_tokens(s.max_tokens, dialect)
    body: dict[str, Any] = {"messages": request.message_dicts(strict_roles), "max_tokens": budget}
    body["temperature"] = s.temperature
    if dialect != "tgi" or (s.top_p < 1.0 and s.temperature != 0):
        body["top_p"] = s.top_p
    body["seed"] = request.seed
    if model:
        body["model"] = model
    if engine in GRAMMAR_FIELDS:  # what the request does not say, the model's generation_config would
        body.update(NEUTRAL_SAMPLING)
    if field is None or request.constraint is None:
        field = constraint_field(request, dialect, engine)
    if field == "structured_outputs.grammar":
        body["structured_outputs"] = {"grammar": request.constraint.compact_grammar()}  # type: ignore[union-attr]
    elif field == "ebnf":
        body["ebnf"] = request.constraint.compact_grammar()  # type: ignore[union-attr]
    elif field == "response_format":
        body["response_format"] = request.constraint.response_format(dialect)  # type: ignore[union-attr]
    return body


class HTTPStatusError(LLMError):
    """A server answered with an error status (its message: the first line of its body)."""

    def __init__(self, status: int, text: str):
        super().__init__(f"HTTP {status}: {text.strip().splitlines()[0][:200] if text.strip() else ''}")
        self.status, self.body = status, text


@dataclass(frozen=True)
class RetryPolicy:
    max_tries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def delay(self, attempt: int) -> float:
        """Full-jitter exponential backoff for the given (1-based) failed attempt."""
        cap = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return random.uniform(cap / 2, cap)


@dataclass(frozen=True)
class EndpointSpec:
    """One base URL and the environment variable holding its API key (None: no key sent)."""

    url: str
    api_key_env: str | None = None

    @classmethod
    def parse(cls, entry: str | dict[str, Any] | EndpointSpec, api_key_env: str | None = None) -> EndpointSpec:
        if isinstance(entry, EndpointSpec):
            return entry
        if isinstance(entry, str):
            return cls(entry.rstrip("/"), api_key_env)
        return cls(entry["url"].rstrip("/"), entry.get("api_key_env", api_key_env))

    def api_key(self) -> str | None:
        """The key from the environment, read when the pool starts; a clear error if it is unset."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise LLMConfigError(
                f"LLM endpoint {self.url} needs an API key from the environment variable {self.api_key_env} "
                f"(its api_key_env), which is not set; export it before the run (it is never written anywhere)"
            )
        return key


class _Endpoint:
    def __init__(self, spec: EndpointSpec, api_key: str | None, concurrency: int, timeout: float):
        self.url = spec.url
        self.spec = spec
        self.active = 0  # requests sent to it and not yet answered (at most llm.concurrency)
        self.max_active = 0
        self.calls = 0  # requests it answered
        self.failures = 0  # attempts that failed on it (retryable errors)
        self.retries = 0  # of those, the ones retried (here or on another endpoint)
        self.strikes = 0  # failures in a row, counted once per backoff window
        self.retry_at = 0.0  # monotonic time before which it is backing off
        self.removed = False
        self.last_error: str | None = None
        self.api_key = api_key
        self.recheck: asyncio.Task[None] | None = None  # health checks while it backs off
        self.chat_url = api_url(spec.url, "/chat/completions")
        self.proxy = env_proxy(spec.url)
        # A placeholder goes where there is no key of ours (servers without keys ignore it); never the
        # user's Hugging Face token. One connection per request in flight, kept alive (aiohttp: chosen by
        # measurement, benchmarks/orchestration.py; httpx2's pool scanned every connection on every request).
        self.client = session(timeout, concurrency, {"Authorization": f"Bearer {api_key or NO_KEY}"})

    def stats(self) -> dict[str, int | bool]:
        return {"calls": self.calls, "failures": self.failures, "retries": self.retries, "removed": self.removed}


def session(timeout: float, connections: int = 8, headers: dict[str, str] | None = None) -> aiohttp.ClientSession:
    """An HTTP session (inside a running event loop): at most `connections` connections, kept alive; `timeout`
    seconds to connect and between two reads of an answer (a long generation is not cut while it streams in)."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout),
        connector=aiohttp.TCPConnector(limit=connections, limit_per_host=connections),
        headers=headers,
        skip_auto_headers=("User-Agent",),
    )


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP(S)_PROXY, less NO_PROXY), as huggingface-hub's client
    honoured it; read once per endpoint (aiohttp's trust_env reads it on every request: 0.5 ms a call)."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


_WIRE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def wire_json(body: dict[str, Any]) -> bytes:
    """A request body's bytes on the wire: compact JSON, UTF-8 kept, no NaN (what socsim has always sent)."""
    return _WIRE.encode(body).encode("utf-8")


JSON_HEADERS = {"Content-Type": "application/json"}
# Retried: no connection, a connection lost or cut, an answer that is not HTTP (aiohttp's ClientResponseError: the
# status is read, never raised for), a timeout.
TRANSPORT_ERRORS = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    aiohttp.ClientResponseError,
    asyncio.TimeoutError,
)


async def _get_json(client: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> tuple[int, Any]:
    """GET a URL: its status and its body read as JSON (None where it is not JSON)."""
    async with client.get(url, headers=headers, proxy=env_proxy(url)) as resp:  # (the chat calls' proxy too)
        raw = await resp.read()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, None


async def _engine(
    client: aiohttp.ClientSession, url: str, owner: Any, headers: dict[str, str]
) -> dict[str, str | None] | None:
    """The engine behind an OpenAI-compatible endpoint, as it names itself: /v1/models' `owned_by` (vLLM
    "vllm", SGLang "sglang", llama.cpp's server "llamacpp") and its /version where it has one (vLLM, SGLang);
    None where it says nothing. Not part of the identity (cache keys): provenance, and the wire's constraint
    field (GRAMMAR_FIELDS)."""
    if not isinstance(owner, str) or not owner:
        return None
    version = None
    if owner in GRAMMAR_FIELDS:
        try:
            status, data = await _get_json(client, url.rstrip("/").removesuffix("/v1") + "/version", headers)
            if status == 200 and isinstance(data, dict):
                version = str(data.get("version"))
        except (TimeoutError, aiohttp.ClientError):
            version = None
    return {"name": owner, "version": version}


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, TRANSPORT_ERRORS):
        return True
    return isinstance(exc, HTTPStatusError) and exc.status in RETRYABLE_STATUS


def _status(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, HTTPStatusError) else None


def _same_500(a: BaseException | None, b: BaseException | None) -> bool:
    """Two tries of one request answered HTTP 500 with the same body: the server refuses this request (e.g.
    llama-cpp-python's server on a response_format it does not know), whereas an outage answers otherwise
    (a connection error, 502, 503, 504, a timeout) and is retried."""
    return (
        isinstance(a, HTTPStatusError)
        and isinstance(b, HTTPStatusError)
        and a.status == b.status == 500
        and a.body == b.body
    )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, HTTPStatusError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"[:300]


def _auth_error(spec: EndpointSpec, status: int | None) -> LLMError:
    if spec.api_key_env:
        return LLMConfigError(
            f"LLM endpoint {spec.url} refused the API key from the environment variable "
            f"{spec.api_key_env} (HTTP {status}); check its value"
        )
    return LLMConfigError(
        f"LLM endpoint {spec.url} requires an API key (HTTP {status}); set api_key_env of "
        f"its models entry to the name of the environment variable that holds it"
    )


class ServerBackend(Capabilities):
    def __init__(
        self,
        kind: str,
        endpoints: Sequence[str | dict[str, Any] | EndpointSpec],
        dialect: str | None = None,
        model: str | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        api_key_env: str | None = None,
        name: str | None = None,
        strict_roles: bool = False,
    ):
        if kind not in ("tgi", "openai"):
            raise ValueError(f"unknown server backend {kind!r}")
        self.kind = kind
        self.dialect = dialect or kind
        self.strict_roles = strict_roles  # messages sent through socsim.llm.types.alternating
        self.model = model  # the model id every endpoint must serve (the registry's model_id)
        self.name = name or model or kind  # the registry entry, for messages
        self.specs = [EndpointSpec.parse(e, api_key_env) for e in endpoints]
        self.endpoint_urls = [s.url for s in self.specs]
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.retries = 0
        self._endpoints: list[_Endpoint] | None = None
        self._identity: dict[str, Any] | None = None
        self.engine: dict[str, str | None] | None = None  # the engine as it names itself (probe; not the identity)
        self.canaried: list[dict[str, Any]] | None = None  # the constraint canaries it answered (canary())
        self.grammar_ignored = False  # the canary found the engine's grammar field ignored: response_format
        self._rr = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()  # requests without a slot

    # -- health ---------------------------------------------------------------------------
    async def _probe_one(self, client: aiohttp.ClientSession, spec: EndpointSpec, key: str | None) -> dict[str, Any]:
        url = spec.url
        paths = ["/info", "/v1/models"] if self.kind == "tgi" else ["/v1/models", "/info"]
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        last: str | None = None
        for path in paths:
            try:
                status, data = await _get_json(
                    client, url + path if path == "/info" else api_url(url, "/models"), headers
                )
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise EndpointUnavailableError(
                    f"LLM endpoint {url} is unreachable ({type(exc).__name__}: {exc}); start the server or fix "
                    f"models.{self.name}.endpoints"
                ) from None
            if status in AUTH_STATUS:
                raise _auth_error(spec, status)
            if status == 200 and isinstance(data, dict):
                if path == "/info":
                    self._check_served(url, [data.get("model_id")])
                    return {
                        "model_id": data.get("model_id"),
                        "model_sha": data.get("model_sha"),
                        "server": f"tgi {data.get('version', '')}".strip(),
                    }
                ids = [m.get("id") for m in data.get("data") or []]
                self._check_served(url, ids)
                model_id = self.model or (ids[0] if ids else None)
                owner = next((m.get("owned_by") for m in data.get("data") or [] if m.get("id") == model_id), None)
                return {
                    "model_id": model_id,
                    "model_sha": None,
                    "server": "openai-compatible",
                    "engine": await _engine(client, url, owner, headers),
                }
            last = f"HTTP {status} on {path}" + ("" if status != 200 else " (not a JSON object)")
        raise EndpointUnavailableError(f"LLM endpoint {url} failed its health probe ({last})")

    def _check_served(self, url: str, served: list[Any]) -> None:
        """The identity check: the endpoint must serve the registry's model id (an OpenAI-compatible server
        lists it among /v1/models, TGI names it in /info); a mismatch stops the stage."""
        if self.model is not None and self.model not in served:
            what = ", ".join(repr(s) for s in served) or "no model"
            raise ModelIdentityError(
                f"models.{self.name}: LLM endpoint {url} serves {what}, not the registry's model_id {self.model!r}; "
                f"point models.{self.name}.endpoints at a server of {self.model}, or correct its model_id"
            )

    async def probe(self) -> dict[str, Any]:
        """Check every endpoint before a stage starts and record the model they serve. An endpoint that
        does not answer is left out (with a warning) while another does; a wrong key, a wrong model or a
        pool serving different models stops the stage."""
        keys = [s.api_key() for s in self.specs]
        async with session(min(self.timeout, 10.0), max(2 * len(self.specs), 2)) as client:
            results = await asyncio.gather(
                *(self._probe_one(client, s, k) for s, k in zip(self.specs, keys)), return_exceptions=True
            )
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, EndpointUnavailableError):
                raise r
        up = [(s, k, r) for s, k, r in zip(self.specs, keys, results) if not isinstance(r, BaseException)]
        down = [str(r) for r in results if isinstance(r, BaseException)]
        if not up:
            raise EndpointUnavailableError(
                "; ".join(down) if len(down) == 1 else "no LLM endpoint answered: " + "; ".join(down)
            )
        for msg in down:
            print(f"socsim: warning: {msg}; going on with the other endpoints", file=sys.stderr)
        models = {(i["model_id"], i["model_sha"]) for _, _, i in up}
        if len(models) > 1:
            listing = ", ".join(f"{s.url} -> {i['model_id']}@{i['model_sha']}" for s, _, i in up)
            raise LLMError(
                f"models.{self.name}.endpoints serve different models ({listing}); a pool must serve one model"
            )
        info = up[0][2]
        self.engine = info.get("engine")
        self._identity = {
            "backend": self.kind,
            "dialect": self.dialect,
            "model_id": info["model_id"],
            "model_sha": info["model_sha"],
            "runtime": info["server"],
            **({"strict_roles": True} if self.strict_roles else {}),
            # The shape its constraints go out in (socsim.llm.constraints.strict_schema), part of every cache key:
            # answers cached under the earlier shape (rewritten on the wire to "any JSON object") are not reused.
            **({"structured_output": "strict, object root"} if self.dialect == "openai" else {}),
            # TGI's greedy requests go without top_p (with it TGI sampled at temperature 1): not the old answers.
            **({"greedy": "without top_p"} if self.dialect == "tgi" else {}),
        }
        before = {ep.url: ep for ep in self._endpoints or []}
        for old in before.values():  # a probe again (one client, several runs): the earlier sessions are released
            if not old.client.closed:
                try:
                    await old.client.close()
                except RuntimeError:  # a session of an event loop that has ended
                    pass
        self._waiting = collections.deque()  # futures of an earlier event loop (asyncio.run) are not awaited here
        self._endpoints = [_Endpoint(s, k, self.concurrency, self.timeout) for s, k in zip(self.specs, keys)]
        for ep, result in zip(self._endpoints, results):
            if ep.url in before:  # a stage that probes again (one client, several runs) keeps counting
                old = before[ep.url]
                ep.calls, ep.failures, ep.retries = old.calls, old.failures, old.retries
            if isinstance(result, BaseException):
                ep.removed, ep.last_error = True, str(result)
        return self._identity

    @property
    def engine_name(self) -> str | None:
        """The engine whose request fields it sends (None: the plain OpenAI shape; also after the canary found
        the engine's grammar field ignored)."""
        return self.engine.get("name") if self.engine and not self.grammar_ignored else None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            raise LLMError("server backend used before probe()")
        return self._identity

    def endpoint_stats(self) -> dict[str, dict[str, int | bool]]:
        """Per endpoint: calls answered, failed attempts, retries, and whether it was taken out."""
        return {ep.url: ep.stats() for ep in self._endpoints or []}

    # -- calls ----------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Requests the pool takes at once: `concurrency` on each endpoint."""
        return self.concurrency * len(self.specs)

    def _live(self) -> list[_Endpoint]:
        assert self._endpoints is not None
        return [ep for ep in self._endpoints if not ep.removed]

    async def _acquire(self) -> _Endpoint:
        """A slot on the least-busy live endpoint that is not backing off, taken when one is free (so
        that a slow or failing endpoint gets fewer requests, not an equal share queued up front); ties
        rotate so that an idle pool spreads its first requests. Requests without a slot wait in line: a freed slot
        wakes the first of them only, a change of an endpoint's state all (each goes back in line if none is free)."""
        woken = False
        while True:
            live = self._live()
            if not live:
                raise self._all_down()
            now = time.monotonic()
            ready = [ep for ep in live if ep.retry_at <= now and ep.active < self.concurrency]
            if ready:
                n = len(ready)
                ep = ready[0] if n == 1 else min((ready[(self._rr + i) % n] for i in range(n)), key=lambda e: e.active)
                self._rr += 1
                ep.active += 1
                ep.max_active = max(ep.max_active, ep.active)
                if woken and n > 1 and self._waiting:  # another slot is free too: the next in line takes it
                    self._wake()
                return ep
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)  # (after a wake of every waiter, they go back in their order)
            backoffs = [ep.retry_at - now for ep in live if ep.retry_at > now]
            try:
                if backoffs:
                    await asyncio.wait_for(waiter, min(backoffs))
                else:
                    await waiter
            except TimeoutError:
                pass  # a backoff ended: look again
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken, then cancelled: the slot goes to the next in line
                raise
            woken = True

    def _wake(self, every: bool = False) -> None:
        """Let the first request waiting for a slot look again (`every`: all of them, as after an endpoint's
        state changed)."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                if not every:
                    return

    def _all_down(self, hint: str = "") -> EndpointUnavailableError:
        listing = "; ".join(f"{ep.url} ({ep.last_error})" for ep in self._endpoints or [])
        return EndpointUnavailableError(
            f"every LLM endpoint failed after {self.retry.max_tries} tries and was taken out of the pool: {listing}"
            + hint
        )

    def _hint(self, request: Request, exc: BaseException) -> str:
        """What a request that failed on `exc` suggests: a constrained request in the `openai` dialect that ends on
        HTTP 500 is what llama-cpp-python's server answers to OpenAI's json_schema (it takes json_object only)."""
        if _status(exc) != 500 or request.constraint is None or self.dialect != "openai":
            return ""
        return (
            f"\nThis constrained request went in dialect `openai` (response_format json_schema). llama-cpp-python's "
            "server (`python -m llama_cpp.server`) takes only json_object with a schema, and answers json_schema with "
            f"HTTP 500: if models.{self.name} is a llama.cpp server of that kind, set `dialect: llama_cpp` in its "
            "registry entry (docs/servers.md)."
        )

    def _failed(self, ep: _Endpoint, exc: BaseException) -> None:
        """Count a failed try on an endpoint. A failure while it already backs off (other requests that
        were in flight) is the same outage, not a new strike; after `max_tries` strikes it is taken out.
        While it backs off no request is sent to it, and a health check after each backoff tells
        whether it is back (strikes cleared) or still down (one more strike)."""
        ep.failures += 1
        ep.last_error = _describe(exc)
        now = time.monotonic()
        if now < ep.retry_at or ep.removed:
            return
        ep.strikes += 1
        if ep.strikes >= self.retry.max_tries:
            ep.removed = True
            self._wake(every=True)
            if len(self._endpoints or []) > 1:
                print(
                    f"socsim: warning: LLM endpoint {ep.url} taken out of the pool after {ep.strikes} failed "
                    f"tries ({ep.last_error})",
                    file=sys.stderr,
                )
            return
        ep.retry_at = now + self.retry.delay(ep.strikes)
        if ep.recheck is None or ep.recheck.done():
            ep.recheck = asyncio.get_running_loop().create_task(self._recheck(ep))

    async def _recheck(self, ep: _Endpoint) -> None:
        while not ep.removed and ep.strikes:
            await asyncio.sleep(max(0.0, ep.retry_at - time.monotonic()))
            if ep.removed or not ep.strikes or time.monotonic() < ep.retry_at:
                continue  # a request meanwhile succeeded there, or failed and pushed the backoff on
            try:
                async with session(min(self.timeout, 10.0), 2) as client:
                    await self._probe_one(client, ep.spec, ep.api_key)
            except Exception as exc:  # noqa: BLE001 - any failed check is a strike (unreachable, bad answer)
                self._failed(ep, exc)
            else:
                ep.strikes, ep.retry_at = 0, 0.0
            self._wake(every=True)

    async def _call(self, ep: _Endpoint, request: Request, field: str | None = None) -> Completion:
        body = request_body(request, self.dialect, self.model, self.strict_roles, self.engine_name, field)
        async with ep.client.post(ep.chat_url, data=wire_json(body), headers=JSON_HEADERS, proxy=ep.proxy) as resp:
            status, raw = resp.status, await resp.read()
        if status != 200:
            raise HTTPStatusError(status, raw.decode("utf-8", "replace"))
        try:
            out = json.loads(raw)
            choice = out["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            text = raw.decode("utf-8", "replace")
            raise LLMError(f"LLM endpoint {ep.url} answered without a choice: {text[:200]!r}") from None
        usage = out.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        return Completion(
            text=(choice.get("message") or {}).get("content") or "",
            prompt_tokens=prompt_tokens,
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
            endpoint=ep.url,
            prompt_tokens_evaluated=_evaluated(usage, prompt_tokens),
        )

    def canary_of(self) -> Callable[[], Awaitable[list[dict[str, Any]]]] | None:
        return self.canary

    async def canary(self) -> list[dict[str, Any]]:
        """The constraint canary (socsim.llm.canary), once per client, before its first constrained call: one
        request per field this backend's constraints can go in (a grammar engine's grammar field, then
        response_format, which carries the schemas its grammar cannot say). An engine that ignores its grammar
        field but applies response_format (a vLLM older than `structured_outputs`) gets every constraint in
        response_format from then on (recorded); one that ignores the field its constraints would go in stops
        the stage (ConstraintIgnoredError). Not counted as a call."""
        from socsim.llm import canary

        if self.canaried is not None:
            return self.canaried
        req = canary.request()
        first = constraint_field(req, self.dialect, self.engine_name)
        fields = [first, *(["response_format"] if first != "response_format" else [])]
        engine = self.identity()["runtime"]
        if self.engine is not None:  # as it names itself (owned_by: llama-cpp-python's server says "me")
            engine += f", owned_by {self.engine['name']!r}" + (
                f" version {self.engine['version']}" if self.engine.get("version") else ""
            )
        records: list[dict[str, Any]] = []
        ignored: canary.ConstraintIgnoredError | None = None
        for field in fields:
            done = await self._complete(req, field, count=False)
            try:
                records.append(
                    canary.check(
                        done.text, done.finish_reason, str(field), engine, str(self.name), done.endpoint or "?"
                    )
                )
            except canary.ConstraintIgnoredError as exc:
                if field == "response_format" or ignored is not None:
                    raise
                ignored = exc  # the grammar field: response_format may still carry the constraint
                records.append({"field": str(field), "ignored": done.text[:160], "then": "response_format"})
        if ignored is not None:
            self.grammar_ignored = True
            print(f"socsim: warning: {ignored}; its constraints go in response_format instead", file=sys.stderr)
        self.canaried = records
        return self.canaried

    async def complete(self, request: Request) -> Completion:
        return await self._complete(request)

    async def _complete(self, request: Request, field: str | None = None, count: bool = True) -> Completion:
        """One request: sent to the least-busy live endpoint; a retryable failure sends it to the next
        ready endpoint (or, with none ready, after the backoff). It fails when every endpoint is out,
        after `max_tries` tries per endpoint of the pool (endpoints that answer their health checks
        but refuse every request), or, constrained, on a second HTTP 500 with the same body (_same_500); a constrained
        request in the `openai` dialect that fails on HTTP 500 says what fixes it for a llama.cpp server."""
        if self._endpoints is None:
            await self.probe()
        errors: list[str] = []
        before: BaseException | None = None  # the try before the last one's error
        last: BaseException | None = None
        while True:
            ep = await self._acquire()
            try:
                completion = await self._call(ep, request, field)
            except Exception as exc:  # noqa: BLE001 - classified below
                if _status(exc) in AUTH_STATUS:
                    raise _auth_error(ep.spec, _status(exc)) from None
                if not _retryable(exc):
                    raise LLMError(f"LLM request to {ep.url} failed: {_describe(exc)}") from exc
                errors.append(f"{ep.url}: {_describe(exc)}")
                self._failed(ep, exc)
                before, last = last, exc
            else:
                ep.calls += count
                if ep.strikes or ep.retry_at:  # it was backing off: every waiting request may use it again
                    ep.strikes, ep.retry_at = 0, 0.0
                    self._wake(every=True)
                return completion
            finally:
                ep.active -= 1
                self._wake()
            if not self._live():
                raise self._all_down(self._hint(request, last))
            if request.constraint is not None and _same_500(before, last):  # (an unconstrained one: an outage's
                # generic "Internal Server Error" page looks the same each time, and is retried)
                raise LLMError(
                    f"LLM request to {ep.url} failed twice with the same HTTP 500 answer, so it is not retried: a "
                    f"request the server cannot take, not an outage ({_describe(last)}){self._hint(request, last)}"
                )
            if len(errors) >= self.retry.max_tries * len(self._endpoints or [1]):
                raise EndpointUnavailableError(
                    f"LLM request failed after {len(errors)} tries; last errors: "
                    + " | ".join(errors[-3:])
                    + self._hint(request, last)
                )
            ep.retries += 1
            self.retries += 1

    async def aclose(self) -> None:
        for ep in self._endpoints or []:
            if ep.recheck is not None:
                ep.recheck.cancel()
            await ep.client.close()
