"""The constraint canary: before a served model's first real call in a stage, one request per constraint field
the backend sends, whose constraint an unconstrained answer breaks.

Engines ignore constraint fields they do not know and answer HTTP 200 (reported for the old `guided_*` fields
and `json_object` on several engines): every answer of such a run would be free text, found only by
llm.parse_fail_fast after twenty answers, or never where some happen to parse. The canary asks for a
greeting under a constraint allowing only two strings no model writes unasked: an engine that applies the
field answers one of them; one that ignores it greets, and the stage stops with `ConstraintIgnoredError` naming
the engine, the field and what came back. It is sent once per client before its first constrained call to the
model (none for free text only, for answers from the call cache, in a replay or in process). Canaries are not
cached and not counted as the stage's calls; each one answered is recorded in the stage's metrics (per model:
`canary`).
"""

from __future__ import annotations

from typing import Any

from socsim.llm.constraints import Choice
from socsim.llm.errors import LLMError
from socsim.llm.types import Request, Sampling

OPTIONS = ("zqx-canary-7", "vjk-canary-3")  # what a model never writes unasked (ScriptedServer knows them)
PROMPT = "Greet the reader in one short sentence."
CONSTRAINT = Choice(OPTIONS)


class ConstraintIgnoredError(LLMError):
    """An engine answered the constraint canary as if the request held no constraint."""


# Tokens for the answer: room for an allowed string a token per byte (a small model under a grammar spends about
# that: SmolLM2 on llama-cpp-python's server was cut at 8 in `"vjk-canary`), and a short greeting's worth.
MAX_TOKENS = 32


def request() -> Request:
    """The canary: a greeting asked for, two strings allowed (greedy)."""
    sampling = Sampling(0.0, 1.0, MAX_TOKENS)
    return Request.chat([{"role": "user", "content": PROMPT}], 0, sampling, CONSTRAINT, "canary")


def is_canary(body: dict[str, Any]) -> bool:
    """Whether a request body on the wire is a canary (its allowed strings appear in it)."""
    return OPTIONS[0] in str(body)


def check(answer: str, finish: str | None, field: str, engine: str, name: str, url: str) -> dict[str, str]:
    """The canary's answer (and its finish_reason) held against its constraint: its record, or
    ConstraintIgnoredError."""
    value, ok, _ = CONSTRAINT.parse(answer)
    if (
        not ok
        and finish == "length"
        and any(
            rendered.startswith(answer.strip()) for o in OPTIONS for rendered in (o, f'"{o}"', f'{{"answer":"{o}"}}')
        )
    ):
        raise LLMError(
            f"models.{name}: the constraint canary's answer from {url} ({engine}) was cut at max_tokens "
            f"({MAX_TOKENS} and the wrapper's) inside an allowed string: {answer!r}. The engine applies the "
            f"constraint in `{field}` but spends more tokens on it than a token per byte; report this to socsim."
        )
    if not ok:
        raise ConstraintIgnoredError(
            f"models.{name}: the engine at {url} ({engine}) ignored the output constraint sent in `{field}`: asked "
            f"to answer one of {list(OPTIONS)}, it answered {answer[:160]!r} (finish_reason {finish!r}, "
            f"max_tokens {MAX_TOKENS} and the wrapper's). Its answers would be free text, not "
            f"the constrained answers the stage asks for. Set the registry entry's `dialect` to the engine's "
            f"structured-output dialect (docs/servers.md), or serve the model with an engine that applies `{field}`."
        )
    return {"field": field, "answer": str(value)}
