"""Per-stage accounting of model calls, written as DVC metrics JSON."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Accounting:
    requests: int = 0
    calls: int = 0  # requests that reached a model (requests - cache_hits)
    cache_hits: int = 0
    parse_failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    endpoint_calls: dict[str, int] = field(default_factory=dict)  # calls answered per endpoint
    endpoints: dict[str, dict[str, int | bool]] = field(
        default_factory=dict
    )  # server pools: {url: calls, failures, retries, removed}
    _start: float = field(default_factory=time.perf_counter, repr=False)
    _gen_first: float | None = field(default=None, repr=False)
    _gen_last: float | None = field(default=None, repr=False)

    def call_started(self) -> None:
        if self._gen_first is None:
            self._gen_first = time.perf_counter()

    def call_finished(self, prompt_tokens: int, completion_tokens: int, endpoint: str | None = None) -> None:
        self.calls += 1
        if endpoint:
            self.endpoint_calls[endpoint] = self.endpoint_calls.get(endpoint, 0) + 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self._gen_last = time.perf_counter()

    @property
    def generation_wall_s(self) -> float:
        """Time from the first model call's start to the last one's end (concurrent calls overlap)."""
        if self._gen_first is None or self._gen_last is None:
            return 0.0
        return self._gen_last - self._gen_first

    def as_metrics(self) -> dict[str, Any]:
        gen = self.generation_wall_s
        return {
            "requests": self.requests,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "parse_failures": self.parse_failures,
            "parse_failure_rate": round(self.parse_failures / self.requests, 4) if self.requests else 0.0,
            "retries": self.retries,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "endpoint_calls": dict(sorted(self.endpoint_calls.items())),
            **({"endpoints": dict(sorted(self.endpoints.items()))} if self.endpoints else {}),
            "wall_s": round(time.perf_counter() - self._start, 3),
            "generation_wall_s": round(gen, 3),
            "tokens_per_s": round(self.completion_tokens / gen, 2) if gen > 0 else 0.0,
        }
