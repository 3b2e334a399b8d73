"""How close each LLM stage of a finished run came to the machine's limit.

The limit of a stage is the time its token counts need at the raw rates of the model on this
machine: prompt tokens actually evaluated (after prefix reuse) at the prompt-evaluation rate, plus
completion tokens at the decoding rate. `ratio` = limit time / the stage's actual model time: 1.0
means the stage did nothing but evaluate and decode at full speed. The rates are measured in the
same run as the report (`measure_rates`), since they differ twofold between days on a shared machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEXT = (
    "The committee met on a rainy Tuesday to discuss the new bicycle lanes, the bus timetable and the "
    "library's opening hours, and every member had an opinion about each of them. "
)


@dataclass(frozen=True)
class Rates:
    """Raw tokens per second of one model on this machine."""

    prompt_eval: float  # prompt tokens evaluated per second (batched), at `prompt_len`
    decode: float  # tokens decoded per second, one sequence, after a prompt of `prompt_len`
    prompt_len: int


@dataclass(frozen=True)
class StageUse:
    """One model's calls in one stage (shard) of a finished run, from its metrics JSON."""

    study: str
    stage: str
    model: str
    calls: int
    cache_hits: int
    prompt_tokens: int
    prompt_tokens_evaluated: int | None
    completion_tokens: int
    wall_s: float
    time_s: dict[str, float] | None

    @property
    def evaluated(self) -> int:
        """Prompt tokens evaluated; the submitted ones where the backend did not say."""
        return self.prompt_tokens if self.prompt_tokens_evaluated is None else self.prompt_tokens_evaluated


def stage_uses(results: Path) -> list[StageUse]:
    """Every model's use in every LLM stage under results/<study>/metrics/ (shards included)."""
    out = []
    for path in sorted(results.glob("*/metrics/**/*.json")):
        metrics = json.loads(path.read_text())
        if not isinstance(metrics, dict) or not isinstance(metrics.get("models"), dict):
            continue
        study = path.relative_to(results).parts[0]
        stage = str(path.relative_to(results / study / "metrics").with_suffix(""))
        for name, m in sorted(metrics["models"].items()):
            out.append(
                StageUse(
                    study=study,
                    stage=stage,
                    model=name,
                    calls=int(m.get("calls", 0)),
                    cache_hits=int(m.get("cache_hits", 0)),
                    prompt_tokens=int(m.get("prompt_tokens", 0)),
                    prompt_tokens_evaluated=m.get("prompt_tokens_evaluated"),
                    completion_tokens=int(m.get("completion_tokens", 0)),
                    wall_s=float(m.get("wall_s", 0.0)),
                    time_s=m.get("time_s"),
                )
            )
    return out


def limit_row(use: StageUse, rates: Rates) -> dict[str, Any]:
    """The stage's limit time at `rates` beside its actual time, and where the rest went."""
    row: dict[str, Any] = {
        "study": use.study,
        "stage": use.stage,
        "model": use.model,
        "calls": use.calls,
        "cache_hits": use.cache_hits,
        "prompt_tokens": use.prompt_tokens,
        "prompt_tokens_evaluated": use.prompt_tokens_evaluated,
        "prefix_reuse": round(1 - use.evaluated / use.prompt_tokens, 3) if use.prompt_tokens else None,
        "completion_tokens": use.completion_tokens,
        "actual_s": round(use.wall_s, 2),
    }
    if not use.calls:
        return {**row, "limit_s": None, "ratio": None, "note": "every call answered from the call cache: run fresh"}
    prompt_s = use.evaluated / rates.prompt_eval
    decode_s = use.completion_tokens / rates.decode
    limit = prompt_s + decode_s
    row.update(
        limit_prompt_s=round(prompt_s, 2),
        limit_decode_s=round(decode_s, 2),
        limit_s=round(limit, 2),
        ratio=round(limit / use.wall_s, 3) if use.wall_s > 0 else None,
        note="" if use.prompt_tokens_evaluated is not None else "evaluated prompt tokens unknown: submitted counted",
    )
    if use.time_s:  # the backend's own split: where the time above the limit went
        spent = {
            "prompt evaluation": use.time_s["prompt_eval"] - prompt_s,
            "generation": use.time_s["generation"] + use.time_s["generation_grammar"] - decode_s,
            "everything else": use.time_s["other"],
        }
        row["biggest_excess"] = max(spent, key=lambda k: spent[k])
        row.update({f"actual_{k}_s": round(v, 2) for k, v in use.time_s.items()})
    return row


def biggest_gap(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The stage that lost the most seconds against its limit."""
    timed = [r for r in rows if r.get("limit_s") is not None]
    return max(timed, key=lambda r: r["actual_s"] - r["limit_s"]) if timed else None


def _tokens(llm: Any, n: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < n:
        ids += llm.tokenize(TEXT.encode(), add_bos=False)
    return ids[:n]


def measure_rates(backend: Any, prompt_len: int = 256, decode_tokens: int = 48, repeats: int = 3) -> Rates:
    """Raw llama.cpp rates of an embedded backend's model on this machine: a fresh prompt of
    `prompt_len` tokens evaluated in one batch, then `decode_tokens` sampled and decoded one at a
    time (no grammar); the best of `repeats` (the machine's limit, not its average)."""

    def once() -> tuple[float, float]:
        llm = backend.llm
        llm.reset()  # nothing cached: the whole prompt is evaluated
        llm.begin()
        for i, _ in enumerate(llm.generate(_tokens(llm, prompt_len), temp=0.7, top_p=0.95, reset=True)):
            if i + 1 == decode_tokens:
                break
        c = llm.socsim_counts
        return c["prompt_tokens"] / c["prompt_s"], decode_tokens / c["generation_s"]

    backend.on_model_thread(once)  # warm-up
    runs = [backend.on_model_thread(once) for _ in range(repeats)]
    return Rates(prompt_eval=max(r[0] for r in runs), decode=max(r[1] for r in runs), prompt_len=prompt_len)
