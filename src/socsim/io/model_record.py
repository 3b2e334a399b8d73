"""One model's record in an LLM stage's metrics (`models.<registry name>` of results/<study>/metrics/...json):
written by socsim.runtime, read by the RO-Crate, the scorecard, `socsim plan --compare` and the limits benchmark,
each through `ModelRecord` and never key by key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The record's parts besides the accounting, in the order they are written (after it).
PARTS = ("identity", "server", "engine", "canary", "replayed_from")


@dataclass(frozen=True)
class ModelRecord:
    """What one model did in one stage's job: the identity that answered; its accounting (socsim.llm.accounting:
    requests, calls, cache hits, parse failures and cuts, tokens, the sampling as applied, time); the run's own
    server that answered (socsim.serving), or what an external server named itself as (`engine`); the constraint
    canaries it answered (socsim.llm.canary); the recording a replay answered from."""

    identity: Mapping[str, Any]
    accounting: Mapping[str, Any] = field(default_factory=dict)
    server: Mapping[str, Any] | None = None
    engine: Mapping[str, Any] | None = None
    canary: list[Any] | None = None
    replayed_from: str | None = None

    def count(self, key: str) -> int:
        """An accounting count (calls, cache_hits, prompt_tokens, ...): 0 where the record has none."""
        return int(self.accounting.get(key) or 0)

    @property
    def calls(self) -> int:
        return self.count("calls")

    @property
    def cache_hits(self) -> int:
        return self.count("cache_hits")

    @property
    def sampling(self) -> Any:
        """The sampling as the stage applied it (None where the record has none)."""
        return self.accounting.get("sampling")

    def as_json(self) -> dict[str, Any]:
        """The record as the metrics file holds it: the accounting's keys, then each part it has."""
        parts = {k: getattr(self, k) for k in PARTS}
        return {**self.accounting, "identity": dict(self.identity), **{k: v for k, v in parts.items() if v}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelRecord:
        accounting = {k: v for k, v in data.items() if k not in PARTS}
        return cls(
            identity=dict(data.get("identity") or {}),
            accounting=accounting,
            server=data.get("server") or None,
            engine=data.get("engine") or None,
            canary=data.get("canary") or None,
            replayed_from=data.get("replayed_from") or None,
        )


def records(metrics: Any) -> dict[str, ModelRecord]:
    """The model records of one stage's metrics (registry name -> record; {} for metrics without models)."""
    models = metrics.get("models") if isinstance(metrics, Mapping) else None
    if not isinstance(models, Mapping):
        return {}
    return {str(n): ModelRecord.from_json(m) for n, m in models.items() if isinstance(m, Mapping)}
