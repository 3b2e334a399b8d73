"""The one request and response type every backend speaks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from socsim.llm.constraints import Constraint


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 256

    def as_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class Request:
    """One chat request. `seed` must come from socsim.seeds.derive_seed."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    seed: int
    sampling: Sampling = field(default_factory=Sampling)
    constraint: Constraint | None = None
    label: str = field(default="", compare=False)  # what it belongs to, for people (plans); not in the cache key

    @staticmethod
    def chat(
        messages: list[dict[str, str]] | list[tuple[str, str]],
        seed: int,
        sampling: Sampling | None = None,
        constraint: Constraint | None = None,
        label: str = "",
    ) -> Request:
        pairs = tuple((m["role"], m["content"]) if isinstance(m, dict) else (m[0], m[1]) for m in messages)
        return Request(
            messages=pairs, seed=int(seed), sampling=sampling or Sampling(), constraint=constraint, label=label
        )

    def message_dicts(self, strict_roles: bool = False) -> list[dict[str, str]]:
        """The messages as chat dicts; `strict_roles` for a chat template that takes no system message and
        needs user and assistant turns to alternate from a user turn (see `alternating`)."""
        pairs = alternating(self.messages) if strict_roles else self.messages
        return [{"role": r, "content": c} for r, c in pairs]

    def key_material(self) -> dict[str, Any]:
        """Everything that determines the answer, apart from the model identity."""
        return {
            "messages": [list(m) for m in self.messages],
            "sampling": self.sampling.as_dict(),
            "constraint": self.constraint.spec() if self.constraint else None,
            "seed": self.seed,
        }


@dataclass
class Completion:
    """What a backend returns for one request (before validation)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    endpoint: str | None = None
    # Where the backend says (None: it does not): the prompt tokens it actually evaluated after
    # re-using a cached prefix, and the seconds it spent evaluating the prompt and generating.
    prompt_tokens_evaluated: int | None = None
    prompt_eval_s: float | None = None
    generation_s: float | None = None
    # Where the backend counts them (the embedded one, one request at a time; not the batched engine nor a
    # server, whose every completion token Accounting takes as decoded): the tokens decoded one at a time
    # after the prompt, and the sum of their context positions (a call cut off by max_tokens or a stop
    # string never decodes its last token). socsim.limits prices them at one sequence's costs.
    decodes: int | None = None
    decode_positions: int | None = None


@dataclass
class Response:
    """A validated answer: raw text always kept, parsed value when it parses."""

    text: str
    value: Any
    parse_ok: bool
    parse_error: str | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    cached: bool


OPENING = "(The conversation begins.)"  # the user turn put before a conversation that opens with the assistant


def alternating(messages: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The same conversation for a model whose chat template takes no system message and needs user and
    assistant turns to alternate from a user turn (Gemma 2, Mistral v0.3: registry `strict_roles`):
    the system text opens the first user turn (as a user turn of its own where the assistant speaks
    first), and consecutive turns of one role are joined with a blank line."""
    system = "\n\n".join(c for r, c in messages if r == "system")
    turns: list[tuple[str, str]] = []
    for role, content in ((r, c) for r, c in messages if r != "system"):
        if turns and turns[-1][0] == role:
            turns[-1] = (role, turns[-1][1] + "\n\n" + content)
        else:
            turns.append((role, content))
    if not turns or turns[0][0] != "user":
        turns.insert(0, ("user", system or OPENING))
    elif system:
        turns[0] = ("user", system + "\n\n" + turns[0][1])
    return tuple(turns)


class Capabilities:
    """The optional capabilities of a backend that has none of them (an embedded model, a scripted one)."""

    name: str | None = None
    engine: dict[str, Any] | None = None
    canaried: list[dict[str, Any]] | None = None
    replayed_from: str | None = None

    @property
    def in_flight(self) -> int | None:  # no bound on its requests at once known (its client runs them all)
        return None

    def endpoint_stats(self) -> dict[str, dict[str, int | bool]] | None:
        return None

    def canary_of(self) -> Callable[[], Awaitable[list[dict[str, Any]]]] | None:
        return None
