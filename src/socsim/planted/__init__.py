"""A model with planted effects (a positive control) and its null twin.

Its answers follow a declared generative model instead of a language model, served over the same
OpenAI-compatible HTTP wire as vLLM (`python -m socsim.planted.server`, the registry's engine `planted`):
socsim's real client, constraints, call cache and server life carry every request. For each study a small
set of effects with declared sizes (`socsim.planted.<study>.EFFECTS`) reaches the analysis only through
what the model writes and how the study's own prompts, parsers and annotators read it:

- as a study's agent, it reads its conditions from its prompt (a strategy, a preference, a bias, a
  framing, a partner's words) and writes text whose latent level (toxicity, stance, opinion) follows the
  declared effects, worded so that a reader of the text can tell it;
- as the study's annotator, judge or classifier, it reads that level back from the text it is shown: a
  faithful reader, which plants nothing itself.

The null twin (`--effects null`) writes the same kind of text with levels drawn independently of every
condition: whatever "holds" on it is a false positive, at most at the claims' alpha.

Which model reads a control's outputs: the control itself, as no other model reads its levels, and a control
never reads a language model's outputs: the registry's rule (socsim.models.reader_of: a model served on this
package's ENGINE reads itself), so that the studies need not import this package.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ENGINE = "planted"
VARIANTS = ("planted", "null")
MODEL_IDS = {"planted": "socsim/planted-effects", "null": "socsim/planted-null"}  # what the server serves
CONTROL_LABELS = {  # how a control's column is labelled (socsim.scorecard): never as a language model
    "planted": "control (planted effects, not a language model)",
    "null": "control (the null twin: no effects planted, not a language model)",
}


def control_label(model_id: str | None) -> str | None:
    """The label of a control's column by the model id it served; None for any other model."""
    return next((CONTROL_LABELS[v] for v, mid in MODEL_IDS.items() if mid == model_id), None)


def is_control_id(model_id: str | None) -> bool:
    """Whether a served model id (as provenance records it) is a planted model's."""
    return model_id in MODEL_IDS.values()


@dataclass
class Ask:
    """One chat completion as the planted server received it: what a policy answers."""

    messages: list[dict[str, str]]
    schema: dict[str, Any] | None  # the response_format's JSON schema (None: free text)
    seed: int
    max_tokens: int
    variant: str  # planted | null
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(json.dumps([self.messages, self.schema], sort_keys=True).encode()).digest()
        self.rng = np.random.default_rng([self.seed & 0xFFFFFFFF, int.from_bytes(digest[:8], "little")])

    @property
    def planted(self) -> bool:
        return self.variant == "planted"

    @property
    def system(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m.get("role") == "system")

    @property
    def text(self) -> str:
        """Every message's content, in order (what a policy searches for its cues)."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)

    @property
    def last(self) -> str:
        return str(self.messages[-1].get("content") or "") if self.messages else ""

    @property
    def wrapped(self) -> dict[str, Any] | None:
        """The answer's own schema when the request wraps it as {"answer": ...} (a choice or an integer
        range: socsim.llm.constraints.WRAP), else None."""
        props = (self.schema or {}).get("properties") or {}
        return props["answer"] if set(props) == {"answer"} else None

    @property
    def choices(self) -> list[Any] | None:
        inner = self.wrapped or {}
        return list(inner["enum"]) if "enum" in inner else None

    @property
    def int_range(self) -> tuple[int, int] | None:
        inner = self.wrapped or {}
        if inner.get("type") == "integer" and "minimum" in inner and "maximum" in inner:
            return int(inner["minimum"]), int(inner["maximum"])
        return None

    def pick(self, options: Sequence[Any], weights: Sequence[float] | None = None) -> Any:
        p = None if weights is None else np.asarray(weights, dtype=float) / float(np.sum(weights))
        return options[int(self.rng.choice(len(options), p=p))]


Policy = Callable[[Ask], Any]  # an answer (a value the constraint allows, a dict, or text), or None: not mine


def encode(ask: Ask, value: Any) -> str:
    """The answer's text as it goes back on the wire: a wrapped choice or integer as {"answer": value}, an
    object as compact JSON, free text as it is."""
    if ask.wrapped is not None:
        return json.dumps({"answer": value}, ensure_ascii=False, separators=(",", ":"))
    if ask.schema is not None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def fill(ask: Ask, schema: Mapping[str, Any]) -> Any:
    """A value of `schema` drawn at random (what a request no policy claims gets): no effect in it."""
    if "enum" in schema:
        return ask.pick(list(schema["enum"]))
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        return {k: fill(ask, v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "integer":
        lo, hi = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
        return int(ask.rng.integers(lo, hi + 1))
    if kind == "number":
        return float(ask.rng.uniform(float(schema.get("minimum", 0)), float(schema.get("maximum", 1))))
    if kind == "boolean":
        return bool(ask.rng.integers(2))
    if kind == "array":
        n = int(schema.get("minItems", 1))
        return [fill(ask, schema.get("items") or {"type": "string"}) for _ in range(n)]
    return "no view"


WORDS = re.compile(r"\S+")


# The data/ folder of the project a control serves, as declared to it (the server's --materials, which the launcher
# sets to the run's project: socsim.serving.engines): what the model knows of the questions it is asked. Never the
# working directory or socsim's source tree. Set once, before the first answer (`use_materials`).
_MATERIALS: list[Path | None] = [None]


def use_materials(root: str | Path | None) -> None:
    """Where this process's control reads the studies' materials (a project's data/ folder; None: nowhere, and the
    model knows nothing of its questions). Call it before the first answer: the policies read them once."""
    _MATERIALS[0] = Path(root) if root is not None else None


def study_data(folder: str, *names: str) -> list[Any] | None:
    """The YAML files `names` of <materials>/<folder>/ (`use_materials`), all of them; None when the materials are
    not declared or do not hold them all."""
    import yaml

    root = _MATERIALS[0]
    if root is None:
        return None
    paths = [root / folder / n for n in names]
    if not all(p.is_file() for p in paths):
        return None
    return [yaml.safe_load(p.read_text()) for p in paths]


def tokens(text: str) -> int:
    """A token count for usage (whitespace words: the planted model has no tokenizer)."""
    return len(WORDS.findall(text))
