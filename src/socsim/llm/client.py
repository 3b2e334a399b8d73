"""LLMClient: the one async interface the studies use, whatever backend answers.

cache lookup -> backend call (retries, pool, concurrency) -> cache store -> validation ->
accounting. A request's answer depends only on (model identity, request), so re-runs cost
no calls and a crashed stage resumes from the calls that finished.

An answer that does not parse is kept and counted, except where it shows that the constraint is not
applied at all: when the first `parse_fail_fast` constrained answers of a client (its model), cache hits
included, all fail to parse, generate() raises UnparsedAnswersError (naming the model, the constraint,
the engine and what came back), so a run stops within minutes instead of recording days of answers
that never parse. Once one constrained answer has parsed, the rule no longer applies to the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol

from socsim.canonical import canonical_json
from socsim.llm.accounting import Accounting
from socsim.llm.cache import CallCache, request_key
from socsim.llm.constraints import Constraint
from socsim.llm.errors import UnparsedAnswersError
from socsim.llm.types import Completion, Request, Response, Sampling
from socsim.progress import gather_with_progress

SAMPLES = 3  # unparsed answers (and constraints) quoted when the first parse_fail_fast all failed


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _short(spec: dict[str, Any]) -> str:
    """A constraint's spec in one short line."""
    return _clip(json.dumps(spec, ensure_ascii=False, separators=(",", ":")), 160)


class Backend(Protocol):
    """What every backend (embedded, tgi, openai, a replay, the plan's counter) provides; only LLMClient talks to
    it. Besides the four calls, the optional capabilities, declared by every backend (`Capabilities` gives their
    absence) and forwarded whole by every wrapper: what the stage's model record and its messages say."""

    @property
    def retries(self) -> int: ...  # retries so far (timeouts, connection errors, 429, 5xx)

    @property
    def name(self) -> str | None: ...  # the registry name, where the backend knows it (messages)

    @property
    def engine(self) -> dict[str, Any] | None: ...  # the engine as a server names itself at the probe

    @property
    def canaried(self) -> list[dict[str, Any]] | None: ...  # the constraint canaries its server answered

    @property
    def replayed_from(self) -> str | None: ...  # the recording a replay answers from

    @property
    def in_flight(self) -> int | None: ...  # at most this many requests at once (its pool's slots); None: no bound

    async def probe(self) -> dict[str, Any]: ...  # load the model / check every endpoint; returns identity()

    def identity(self) -> dict[str, Any]: ...  # backend, model id, revision/sha: part of every cache key

    async def complete(self, request: Request) -> Completion: ...

    async def aclose(self) -> None: ...  # release the model / connections (a later call reopens)

    def endpoint_stats(self) -> dict[str, dict[str, int | bool]] | None: ...  # per endpoint (server pools)

    def canary_of(self) -> Callable[[], Awaitable[list[dict[str, Any]]]] | None: ...  # its constraint canary


class LLMClient:
    """Use as `async with client:` (or call `aclose()`) to probe and then release the backend;
    `run()` does so for a synchronous stage. `close()` closes the call cache (a stage's context
    closes the caches it opened).

    `parse_fail_fast` (llm.parse_fail_fast; 0 or None: off): stop when this many constrained answers
    came back and none parsed. `name`: the model's registry name, for messages."""

    def __init__(
        self,
        backend: Backend,
        cache: CallCache | None,
        default_sampling: Sampling | None = None,
        parse_fail_fast: int | None = 20,
        name: str | None = None,
    ):
        self.backend = backend
        self.cache = cache
        self.default_sampling = default_sampling or Sampling()
        self.parse_fail_fast = parse_fail_fast
        self.name = name
        self.accounting = Accounting()
        # while no constrained answer has parsed: the first few that did not (text, error, from the call
        # cache), the constraints they were under, and how many of them came from the call cache
        self._unparsed: list[tuple[str, str | None, bool]] = []
        self._unparsed_constraints: dict[str, None] = {}
        self._unparsed_cached = 0
        self._probed = False
        self._canary_task: asyncio.Future[Any] | Literal[False] | None = None  # the canary (False: none applies)
        self.verified: dict[str, Any] | None = None  # the identity the backend reported when it was probed
        self._identity_json: str | None = None

    @property
    def answered(self) -> bool:
        """Whether the model was reached (probed: loaded, or its server checked) under this client."""
        return self.verified is not None

    async def probe(self) -> dict[str, Any]:
        """Health-check the backend (load the model / probe every endpoint) and return its identity."""
        identity = await self.backend.probe()
        self._probed = True
        self.verified = identity
        self._identity_json = canonical_json(identity)  # once per probe: every cache key and row carries it
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
        s = request.sampling
        acc.request(s.temperature, s.top_p, s.max_tokens)
        identity = self.identity()
        same = identity is self.verified  # (a backend that answers with another identity is keyed by that one)
        ident_json = self._identity_json if same else None
        key = request_key(identity, request, ident_json) if self.cache is not None else ""
        completion = self.cache.get(key) if self.cache is not None else None
        cached = completion is not None
        if completion is not None:  # cached
            acc.cache_hits += 1
        else:
            if request.constraint is not None:
                await self._canary()
            acc.call_started()
            try:
                completion = await self.backend.complete(request)
            finally:
                acc.retries = self.backend.retries  # the backend's total: concurrent requests share it
                stats = self.backend.endpoint_stats()  # server pools: calls, failures, retries per endpoint
                if stats is not None:
                    acc.endpoints = stats
            acc.call_finished(completion, grammar=request.constraint is not None)
            if self.cache is not None:
                self.cache.put(key, completion, identity, ident_json)
        if request.constraint is not None:
            value, ok, err = request.constraint.parse(completion.text)
            cut = not ok and completion.finish_reason == "length"
            if cut:  # the budget ran out, not the model's format: said as such
                err = f"cut at max_tokens ({request.sampling.max_tokens} tokens for the answer): {err}"
            acc.constrained_answer(ok, cut)
            if not ok:
                self._unparsed_answer(request.constraint, completion.text, err, cached)
        else:
            value, ok, err = completion.text, True, None
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

    async def _canary(self) -> None:
        """A server backend's constraint canary (socsim.llm.canary), once, before the client's first constrained
        call to the model (none for free text, cache hits, a replay or the embedded model): an engine that
        ignores the constraint field stops the stage before any real constrained call."""
        task = self._canary_task
        if task is False:
            return
        if task is None or (task.done() and task.cancelled()):
            canary = self.backend.canary_of()  # servers (through a lease); not a replay, not in process
            if canary is None:
                self._canary_task = False
                return
            task = self._canary_task = asyncio.ensure_future(canary())
        try:
            if task.done():
                task.result()  # its error, if it found one
                return
            # Concurrent requests wait for the one canary and all go on together when it has answered (behind a
            # lock they went on one per turn of the event loop); one of them cancelled does not cancel it.
            await asyncio.shield(task)
        except Exception:
            if self._canary_task is task:  # a canary that failed is asked again by the next constrained call
                self._canary_task = None
            raise

    def _unparsed_answer(self, constraint: Constraint, text: str, error: str | None, cached: bool) -> None:
        """Note a constrained answer that did not parse; raise when the first parse_fail_fast all did not."""
        acc = self.accounting
        if acc.parse_failures != acc.constrained:  # one has parsed: the rule no longer applies
            return
        if len(self._unparsed) < SAMPLES:
            self._unparsed.append((text, error, cached))
        if len(self._unparsed_constraints) < SAMPLES:
            self._unparsed_constraints[_short(constraint.spec())] = None
        self._unparsed_cached += cached
        if acc.none_parsed(self.parse_fail_fast):
            raise UnparsedAnswersError(self._unparsed_message())

    def _unparsed_message(self) -> str:
        identity = self.identity()
        registry = self.name or self.backend.name  # the registry name, where known
        name = f"{registry!r} (models.{registry})" if registry else repr(identity.get("model_id", "?"))
        engine = ", ".join(
            f"{k} {identity[k]}" for k in ("backend", "dialect", "runtime", "model_id") if identity.get(k) is not None
        )
        n = self.accounting.constrained
        answers = "\n".join(
            f"    {i}. {_clip(text, 160)!r} ({'call cache' if from_cache else 'model'}): {_clip(error or '?', 200)}"
            for i, (text, error, from_cache) in enumerate(self._unparsed, 1)
        )
        cache_note = (
            f"\n{self._unparsed_cached} of these answers came from the call cache (llm.cache_path), which gives them "
            "again on every re-run: after fixing the cause, delete that cache file (or point llm.cache_path "
            "elsewhere) so that the model is asked again."
            if self._unparsed_cached
            else ""
        )
        return (
            f"model {name}: the first {n} constrained answers all failed to parse, so the stage "
            f"stops here rather than record answers that never parse (llm.parse_fail_fast: {self.parse_fail_fast}).\n"
            f"  engine: {engine}\n"
            f"  constraint: {'; '.join(self._unparsed_constraints)}\n"
            f"  what came back (the first {len(self._unparsed)}):\n{answers}\n"
            "Check that the server applies the output constraint (the structured-output dialect of the models "
            "entry must be the engine's), that the model serves chat requests, and that max_tokens leaves room "
            "for a whole answer; llm.parse_fail_fast: 0 turns this check off." + cache_note
        )

    async def generate_all(self, requests: Sequence[Request], desc: str = "LLM calls") -> list[Response]:
        """Answer all requests concurrently (bounded by the backend); results in input order."""
        if not self._probed:
            await self.probe()
        # As many workers as the backend has slots, each taking the next request when its call ends: no task, no
        # slot wait and no held request per request beyond them (docs/benchmarks.md: a lower peak RSS).
        calls = (self.generate(r) for r in requests)
        return await gather_with_progress(calls, desc, unit="call", limit=self.backend.in_flight)

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
        """Release the backend (model memory, connections); the cache stays open for later calls, with every answer
        so far committed."""
        try:
            await self.backend.aclose()
        finally:
            self._probed = False
            if self.cache is not None:
                self.cache.flush()

    def close(self) -> None:
        """Close the call cache (at the end of the stage)."""
        if self.cache is not None:
            self.cache.close()
