"""Per-stage accounting of model calls, written as DVC metrics JSON.

Answers: `parse_failures` of the `constrained` ones (requests with an output constraint, cache hits
included; free text always parses) and their ratio `parse_failure_rate` (None: no constrained answer).
Tokens: `prompt_tokens` is what the stage submitted; `prompt_tokens_evaluated` what the backend
actually evaluated after re-using a cached prefix (the embedded backend counts it; a server where its
usage reports `prompt_tokens_details.cached_tokens`), over the calls where that is known.
Time: `wall_s` splits into prompt evaluation, generation without and with a grammar, and everything
else (`time_s`), where the backend times its calls (the embedded one; a server's calls overlap and
are not split).
Shapes (`shapes`, where the backend says what it evaluated): the calls' prompt evaluations binned by
tokens evaluated (powers of two) and tokens re-used before them (256-token bins), the tokens decoded
one at a time after the prompt and their context positions summed: what socsim.limits needs to
price every call at its own shape (a prompt evaluation's cost per token depends on both, steeply for
short suffixes after long prefixes)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from socsim.llm.types import Completion


def shape_bin(evaluated: int, reused: int) -> tuple[int, int]:
    """A call's bin: tokens evaluated rounded down to a power of two (0 for none), tokens re-used
    before them rounded down to a multiple of 256."""
    return (1 << (evaluated.bit_length() - 1) if evaluated > 0 else 0), reused // 256 * 256


@dataclass
class Accounting:
    requests: int = 0
    calls: int = 0  # requests that reached a model (requests - cache_hits)
    cache_hits: int = 0
    constrained: int = 0  # answers to requests under an output constraint, cache hits included
    parse_failures: int = 0  # of those, the answers that did not parse (free text always does)
    parse_failures_cut: int = 0  # of those, the answers cut at max_tokens (finish_reason "length")
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_evaluated: int = 0  # over the calls whose backend says (evaluated_known)
    prompt_tokens_known: int = 0  # the submitted prompt tokens of those calls
    evaluated_known: int = 0  # calls whose backend reported the prompt tokens it evaluated
    completion_tokens_grammar: int = 0  # completion tokens of calls under a grammar (constrained output)
    prompt_eval_s: float = 0.0
    generation_s: float = 0.0  # without a grammar
    generation_grammar_s: float = 0.0
    timed: int = 0  # calls whose backend timed prompt evaluation and generation
    # (tokens evaluated bin, tokens re-used bin) -> [calls, tokens evaluated, tokens re-used], see shape_bin
    prompt_shapes: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    decodes: int = 0  # tokens those calls decoded one at a time after the prompt
    decode_positions: int = 0  # and the sum of their context positions
    endpoint_calls: dict[str, int] = field(default_factory=dict)  # calls answered per endpoint
    # sampling as applied: (temperature, top_p, max_tokens) of each request (cache hits included) -> requests
    sampled: dict[tuple[float, float, int], int] = field(default_factory=dict)
    endpoints: dict[str, dict[str, int | bool]] = field(
        default_factory=dict
    )  # server pools: {url: calls, failures, retries, removed}
    _start: float = field(default_factory=time.perf_counter, repr=False)
    _gen_first: float | None = field(default=None, repr=False)
    _gen_last: float | None = field(default=None, repr=False)

    def request(self, temperature: float, top_p: float, max_tokens: int) -> None:
        """One request, with the sampling it was sent (or looked up in the call cache) with."""
        self.requests += 1
        key = (temperature, top_p, max_tokens)
        self.sampled[key] = self.sampled.get(key, 0) + 1

    def sampling(self) -> list[dict[str, Any]]:
        """Sampling as applied: each distinct (temperature, top_p, max_tokens) the requests had, and how many."""
        return [
            {"temperature": t, "top_p": p, "max_tokens": m, "requests": n}
            for (t, p, m), n in sorted(self.sampled.items())
        ]

    def constrained_answer(self, ok: bool, cut: bool = False) -> None:
        """One answer under an output constraint (a model call's or a cache hit's): parsed or not, and if
        not, whether it was cut at max_tokens."""
        self.constrained += 1
        if not ok:
            self.parse_failures += 1
            self.parse_failures_cut += cut

    def none_parsed(self, first: int | None) -> bool:
        """Whether at least `first` constrained answers came back and not one of them parsed (the rule of
        llm.parse_fail_fast; `first` 0 or None: never)."""
        if not first:
            return False
        return self.constrained >= first and self.parse_failures == self.constrained

    @property
    def parse_failure_rate(self) -> float | None:
        """Parse failures per constrained answer (None: no constrained answer)."""
        return round(self.parse_failures / self.constrained, 4) if self.constrained else None

    def call_started(self) -> None:
        if self._gen_first is None:
            self._gen_first = time.perf_counter()

    def call_finished(self, c: Completion, grammar: bool = False) -> None:
        self.calls += 1
        if c.endpoint:
            self.endpoint_calls[c.endpoint] = self.endpoint_calls.get(c.endpoint, 0) + 1
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        if grammar:
            self.completion_tokens_grammar += c.completion_tokens
        if c.prompt_tokens_evaluated is not None:
            self.evaluated_known += 1
            self.prompt_tokens_evaluated += c.prompt_tokens_evaluated
            self.prompt_tokens_known += c.prompt_tokens
            reused = c.prompt_tokens - c.prompt_tokens_evaluated
            b = self.prompt_shapes.setdefault(shape_bin(c.prompt_tokens_evaluated, reused), [0, 0, 0])
            b[0] += 1
            b[1] += c.prompt_tokens_evaluated
            b[2] += reused
            if c.decodes is not None and c.decode_positions is not None:
                self.decodes += c.decodes
                self.decode_positions += c.decode_positions
            else:  # every completion token taken as decoded, at positions prompt_tokens, prompt_tokens + 1, ...
                n = c.completion_tokens
                self.decodes += n
                self.decode_positions += n * c.prompt_tokens + n * (n - 1) // 2
        if c.prompt_eval_s is not None and c.generation_s is not None:
            self.timed += 1
            self.prompt_eval_s += c.prompt_eval_s
            if grammar:
                self.generation_grammar_s += c.generation_s
            else:
                self.generation_s += c.generation_s
        self._gen_last = time.perf_counter()

    @property
    def generation_wall_s(self) -> float:
        """Time from the first model call's start to the last one's end (concurrent calls overlap)."""
        if self._gen_first is None or self._gen_last is None:
            return 0.0
        return self._gen_last - self._gen_first

    def tokens(self) -> dict[str, Any]:
        """Prompt tokens evaluated and re-used from a cached prefix (None: no backend said)."""
        if not self.evaluated_known:
            return {"prompt_tokens_evaluated": None, "prefix_reuse": None}
        reused = self.prompt_tokens_known - self.prompt_tokens_evaluated
        return {
            "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
            "prompt_tokens_reused": reused,
            "prefix_reuse": round(reused / self.prompt_tokens_known, 4) if self.prompt_tokens_known else 0.0,
            **({"evaluated_known_calls": self.evaluated_known} if self.evaluated_known < self.calls else {}),
        }

    def shapes(self) -> dict[str, Any] | None:
        """The calls' shapes (None: no backend said what it evaluated)."""
        if not self.evaluated_known:
            return None
        return {
            "prompt": [[e, r, *v] for (e, r), v in sorted(self.prompt_shapes.items())],
            "decodes": self.decodes,
            "decode_positions": self.decode_positions,
        }

    def time_split(self, wall: float) -> dict[str, Any] | None:
        """wall = prompt evaluation + generation (without, with a grammar) + other; None: not timed."""
        if not self.timed:
            return None
        spent = self.prompt_eval_s + self.generation_s + self.generation_grammar_s
        return {
            "prompt_eval": round(self.prompt_eval_s, 3),
            "generation": round(self.generation_s, 3),
            "generation_grammar": round(self.generation_grammar_s, 3),
            "other": round(wall - spent, 3),
            **({"timed_calls": self.timed} if self.timed < self.calls else {}),
        }

    def as_metrics(self) -> dict[str, Any]:
        gen = self.generation_wall_s
        wall = time.perf_counter() - self._start
        return {
            "requests": self.requests,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "constrained": self.constrained,
            "parse_failures": self.parse_failures,
            "parse_failure_rate": self.parse_failure_rate,
            "parse_failures_cut": self.parse_failures_cut,
            "retries": self.retries,
            "prompt_tokens": self.prompt_tokens,
            **self.tokens(),
            "completion_tokens": self.completion_tokens,
            "completion_tokens_grammar": self.completion_tokens_grammar,
            "endpoint_calls": dict(sorted(self.endpoint_calls.items())),
            "sampling": self.sampling(),
            **({"endpoints": dict(sorted(self.endpoints.items()))} if self.endpoints else {}),
            "wall_s": round(wall, 3),
            "time_s": self.time_split(wall),
            "shapes": self.shapes(),
            "generation_wall_s": round(gen, 3),
            "tokens_per_s": round(self.completion_tokens / gen, 2) if gen > 0 else 0.0,
        }
