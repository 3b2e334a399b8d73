"""The counting backend of `socsim plan`: it answers every request at once with a valid made-up answer
(free text at its full max_tokens) and counts prompt tokens (the GGUF's tokenizer and chat template where
the model is one, else an estimate), completion tokens and the largest prompt against the context."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from socsim.llm.constraints import Choice, Constraint, IntRange, JsonSchema
from socsim.llm.types import Capabilities, Completion, Request

CHARS_PER_TOKEN = 4  # the estimate where no tokenizer is at hand
MESSAGE_OVERHEAD = 4  # tokens a chat template adds per message (estimate)
FILLER = " ok"  # one token in common vocabularies


# -- counting tokens ------------------------------------------------------------------------------


class TokenCounter:
    """Prompt tokens of chat messages: the GGUF's tokenizer and chat template (exact), or an estimate."""

    def __init__(self, gguf: str | None = None, embedded: bool = False):
        """`embedded`: the model is a GGUF (`gguf`; None = the shipped one) whose tokenizer can be read."""
        self.exact = False
        self.how = f"estimate ({CHARS_PER_TOKEN} characters per token)"
        self._llm: Any = None
        self._format: Any = None
        if embedded:
            with contextlib.suppress(Exception):  # any failure: fall back to the estimate, marked so
                self._load(gguf)

    def _load(self, gguf: str | None) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from socsim.llm import hub
        from socsim.llm.embedded import default_model_path

        path = hub.resolve(gguf, local_only=True)[0] if hub.is_hub_path(gguf) else Path(gguf or default_model_path())
        llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            return

        def token(key: str) -> str:
            ident = int(llm.metadata.get(key, -1))
            return llm.detokenize([ident], special=True).decode("utf-8", "replace") if ident >= 0 else ""

        self._format = Jinja2ChatFormatter(
            template, eos_token=token("tokenizer.ggml.eos_token_id"), bos_token=token("tokenizer.ggml.bos_token_id")
        )
        self._llm = llm
        self.exact = True
        self.how = f"tokenizer and chat template of {path.name}"

    def prompt(self, messages: list[dict[str, str]]) -> int:
        if self._llm is None:
            return sum(len(m["content"]) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD for m in messages)
        text = self._format(messages=messages).prompt
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))


# -- the planning backend -------------------------------------------------------------------------


@dataclass
class Tally:
    """What one (stage, shard, model) asked for."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0  # an upper bound: every answer at its full max_tokens
    largest_prompt: int = 0
    largest_label: str = ""
    overflows: list[tuple[str, int]] = field(default_factory=list)  # (label, prompt tokens) beyond n_ctx

    def add(self, other: Tally) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        if other.largest_prompt > self.largest_prompt:
            self.largest_prompt, self.largest_label = other.largest_prompt, other.largest_label
        self.overflows += other.overflows


def _instance(schema: Mapping[str, Any], rng: random.Random, filler: str) -> Any:
    """A value valid under a (simple) JSON schema: enums drawn, strings filled, numbers in range."""
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _instance(props[k], rng, filler) for k in props}
    if kind == "array":
        return [_instance(schema.get("items", {}), rng, filler) for _ in range(schema.get("minItems", 1))]
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", schema.get("minimum", 0) + 4)))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return rng.random() < 0.5
    return filler.strip()


def answer(constraint: Constraint | None, seed: int, max_tokens: int) -> tuple[str, bool]:
    """The planning backend's answer and whether it is free text (counted at its full max_tokens)."""
    rng = random.Random(seed)
    if isinstance(constraint, Choice):
        return rng.choice(list(constraint.options)), False
    if isinstance(constraint, IntRange):
        return str(rng.randint(constraint.low, constraint.high)), False
    if isinstance(constraint, JsonSchema):
        return json.dumps(_instance(constraint.json_schema(), rng, FILLER * 8)), False
    return FILLER * max_tokens, True


class PlanBackend(Capabilities):
    """A backend that answers instantly and counts: the Backend protocol of socsim.llm.client."""

    kind = "plan"

    def __init__(self, name: str, n_ctx: int, counter: TokenCounter, tally: Tally):
        self.name, self.n_ctx, self.counter, self.tally = name, n_ctx, counter, tally
        self.retries = 0

    async def probe(self) -> dict[str, Any]:
        return self.identity()

    def identity(self) -> dict[str, Any]:
        return {"backend": "plan", "model_id": self.name}

    async def complete(self, request: Request) -> Completion:
        n = self.counter.prompt(request.message_dicts())
        text, _ = answer(request.constraint, request.seed, request.sampling.max_tokens)
        out = request.sampling.max_tokens  # the bound: a grammar's answer also runs up to max_tokens
        t = self.tally
        t.calls += 1
        t.prompt_tokens += n
        t.completion_tokens += out
        label = request.label or f"seed {request.seed}"
        if n > t.largest_prompt:
            t.largest_prompt, t.largest_label = n, label
        # a server is asked for the wire's budget (its keys and punctuation on top: Constraint.wire_max_tokens)
        asked = out if request.constraint is None else request.constraint.wire_max_tokens(out, "openai")
        if n + asked > self.n_ctx:
            t.overflows.append((label, n + asked))
        return Completion(text=text, prompt_tokens=n, completion_tokens=out, finish_reason="plan", endpoint="plan")

    async def aclose(self) -> None:
        return None
