"""How close each LLM stage of a finished run came to the machine's limit.

The limit of a stage is the time its token counts need at the raw rates of the model on this
machine: prompt tokens actually evaluated (after prefix reuse) at the prompt-evaluation rate, plus
completion tokens at the decoding rate. `ratio` = limit time / the stage's actual model time: 1.0
means the stage did nothing but evaluate and decode at full speed. The rates are measured in the
same run as the report (`measure_rates`), since they differ twofold between days on a shared machine.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from socsim.io.model_record import records

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
    shapes: dict[str, Any] | None = None  # Accounting.shapes: the calls' shapes, to price each at its own

    @property
    def evaluated(self) -> int:
        """Prompt tokens evaluated; the submitted ones where the backend did not say."""
        return self.prompt_tokens if self.prompt_tokens_evaluated is None else self.prompt_tokens_evaluated


def stage_uses(results: Path) -> list[StageUse]:
    """Every model's use in every LLM stage under results/<study>/metrics/ (shards included)."""
    out = []
    for path in sorted(results.glob("*/metrics/**/*.json")):
        found = records(json.loads(path.read_text()))
        if not found:
            continue
        study = path.relative_to(results).parts[0]
        stage = str(path.relative_to(results / study / "metrics").with_suffix(""))
        for name, m in sorted(found.items()):
            a = m.accounting
            out.append(
                StageUse(
                    study=study,
                    stage=stage,
                    model=name,
                    calls=m.calls,
                    cache_hits=m.cache_hits,
                    prompt_tokens=m.count("prompt_tokens"),
                    prompt_tokens_evaluated=a.get("prompt_tokens_evaluated"),
                    completion_tokens=m.count("completion_tokens"),
                    wall_s=float(a.get("wall_s", 0.0)),
                    time_s=a.get("time_s"),
                    shapes=a.get("shapes"),
                )
            )
    return out


def shape(use: StageUse) -> tuple[int, int]:
    """The stage's mean call: (prompt tokens re-used from the prefix cache, prompt tokens evaluated)."""
    if not use.calls:
        return 0, 0
    return (use.prompt_tokens - use.evaluated) // use.calls, max(1, use.evaluated // use.calls)


def limit_row(
    use: StageUse, rates: Rates, at_shape: Rates | None = None, costs: CostGrid | None = None
) -> dict[str, Any]:
    """The stage's limit time at `rates` beside its actual time, and where the rest went.

    `at_shape`: the rates measured at the stage's own mean call (`shape`: its evaluated tokens after
    its re-used prefix, then decoding at that depth; both rates change with the context's length); the row
    then also gives the limit and ratio at them (`limit_shape_s`, `ratio_shape`).
    `costs`: the machine's cost of a call at each shape; where the stage's metrics hold its calls' shapes,
    the row also gives the limit with every call priced at its own shape (`limit_calls_s`, `ratio_calls`),
    and the excess is counted against it."""
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
    row["decode_share"] = round(decode_s / limit, 3) if limit > 0 else None
    if at_shape is not None:
        reused, evaluated = shape(use)
        limit_shape = use.evaluated / at_shape.prompt_eval + use.completion_tokens / at_shape.decode
        row.update(
            mean_reused=reused,
            mean_evaluated=evaluated,
            shape_prompt_rate=round(at_shape.prompt_eval, 1),
            shape_decode_rate=round(at_shape.decode, 1),
            limit_shape_s=round(limit_shape, 2),
            ratio_shape=round(limit_shape / use.wall_s, 3) if use.wall_s > 0 else None,
        )
    ref_prompt_s, ref_decode_s = prompt_s, decode_s  # the limit the excess is counted against
    if costs is not None and use.shapes is not None:
        ref_prompt_s, ref_decode_s = calls_limit(use.shapes, use.completion_tokens, costs)
        calls = ref_prompt_s + ref_decode_s
        row.update(
            limit_calls_prompt_s=round(ref_prompt_s, 2),
            limit_calls_decode_s=round(ref_decode_s, 2),
            limit_calls_s=round(calls, 2),
            ratio_calls=round(calls / use.wall_s, 3) if use.wall_s > 0 else None,
        )
    if use.time_s:  # the backend's own split: where the time above the limit went
        spent = {
            "prompt evaluation": use.time_s["prompt_eval"] - ref_prompt_s,
            "generation": use.time_s["generation"] + use.time_s["generation_grammar"] - ref_decode_s,
            "everything else": use.time_s["other"],
        }
        row["biggest_excess"] = max(spent, key=lambda k: spent[k])
        row.update({f"actual_{k}_s": round(v, 2) for k, v in use.time_s.items()})
    return row


def biggest_gap(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The stage that lost the most seconds against its limit (best_limit)."""
    timed = [r for r in rows if r.get("limit_s") is not None]
    return max(timed, key=lambda r: r["actual_s"] - best_limit(r)) if timed else None


def run_total(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's model time beside this machine's limit for it: the timed stages' actual seconds summed,
    their limits (best_limit) summed, and limit / actual (1 = the machine's raw rates; the machine's own
    speed factored out, so two runs on a shared machine compare by it). None without a timed stage."""
    timed = [r for r in rows if r.get("limit_s") is not None and r.get("actual_s")]
    if not timed:
        return None
    actual = float(sum(r["actual_s"] for r in timed))
    limit = float(sum(best_limit(r) for r in timed))
    return {"stages": len(timed), "actual_s": actual, "limit_s": limit, "ratio": limit / actual}


def best_limit(row: dict[str, Any]) -> float:
    """A row's limit with every call priced at its own shape where known, else at the fresh rates."""
    return float(row["limit_calls_s"] if row.get("limit_calls_s") is not None else row["limit_s"])


def _tokens(llm: Any, n: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < n:
        ids += llm.tokenize(TEXT.encode(), add_bos=False)
    return ids[:n]


def _decode_s(llm: Any, n: int) -> float:
    """Seconds to sample and decode `n` tokens one at a time after what the model holds."""
    t0 = time.perf_counter()
    for _ in range(n):
        llm.eval([llm.sample(temp=0.7, top_p=0.95)])
    return time.perf_counter() - t0


def measure_rates(backend: Any, prompt_len: int = 256, decode_tokens: int = 48, repeats: int = 3) -> Rates:
    """Raw llama.cpp rates of an embedded backend's model on this machine: a fresh prompt of
    `prompt_len` tokens evaluated in one batch, then `decode_tokens` sampled and decoded one at a
    time (no grammar); the best of `repeats` (the machine's limit, not its average)."""
    return measure_shape(backend, 0, prompt_len, decode_tokens, repeats)


def measure_shape(backend: Any, reused: int, evaluated: int, decode_tokens: int = 32, repeats: int = 3) -> Rates:
    """Raw rates of an embedded backend's model at one call's shape: `evaluated` prompt tokens in one
    batch after `reused` tokens already in its KV cache (a call whose prefix the cache served), then
    `decode_tokens` sampled and decoded one at a time after them; the best of `repeats` each."""
    if reused + evaluated + decode_tokens > backend.llm.n_ctx():
        raise ValueError(
            f"{reused} + {evaluated} + {decode_tokens} tokens do not fit the model's context of {backend.llm.n_ctx()}"
        )

    def once() -> tuple[float, float]:
        llm = backend.llm
        ids = _tokens(llm, reused + evaluated)
        llm.reset()
        llm.begin()
        if reused:
            llm.eval(ids[:reused])  # the cached prefix: not timed
        t0 = time.perf_counter()
        llm.eval(ids[reused:])
        t1 = time.perf_counter()
        return evaluated / (t1 - t0), decode_tokens / _decode_s(llm, decode_tokens)

    backend.on_model_thread(once)  # warm-up
    runs = [backend.on_model_thread(once) for _ in range(repeats)]
    return Rates(prompt_eval=max(r[0] for r in runs), decode=max(r[1] for r in runs), prompt_len=reused + evaluated)


# The grid a prompt evaluation is timed on (measure_costs): tokens already in the KV cache, tokens evaluated.
GRID_REUSED = (0, 600, 1400)
GRID_EVALUATED = (1, 4, 16, 64, 200, 500)
DECODE_DEPTHS = (64, 700, 1500)


@dataclass(frozen=True)
class CostGrid:
    """What llama.cpp needs on this machine for one call at its own shape: the seconds of one prompt
    evaluation of `evaluated[j]` tokens after `reused[i]` tokens in the KV cache (`seconds[i][j]`, the
    best of a few), and decoding's seconds per token, linear in the context position.

    A short suffix costs far more per token than a long one (a batch of a few rows runs the vector
    kernels, and each row reads the whole context): each call is priced at its own shape, not at the
    stage's mean call."""

    reused: tuple[int, ...]
    evaluated: tuple[int, ...]
    seconds: tuple[tuple[float, ...], ...]
    decode_base_s: float  # seconds per decoded token at position 0
    decode_position_s: float  # and per position of context

    def prompt_s(self, reused: float, evaluated: float) -> float:
        """Seconds to evaluate `evaluated` tokens after `reused`: piecewise linear in each (in the
        tokens evaluated through 0 at 0, proportional beyond the grid; in the re-used tokens
        extrapolated from the last two rows beyond the grid)."""
        import numpy as np

        if evaluated <= 0:
            return 0.0
        e = np.array(self.evaluated, dtype=float)

        def row(i: int) -> float:
            t = np.array(self.seconds[i])
            if evaluated > e[-1]:
                return float(t[-1] * evaluated / e[-1])
            return float(np.interp(evaluated, np.r_[0.0, e], np.r_[0.0, t]))

        r = self.reused
        i = max(0, min(len(r) - 2, int(np.searchsorted(r, reused, side="right")) - 1))
        if len(r) == 1:
            return row(0)
        lo, hi = row(i), row(i + 1)
        return max(0.0, lo + (hi - lo) * (reused - r[i]) / (r[i + 1] - r[i]))

    def decode_s(self, tokens: int, positions: int) -> float:
        """Seconds to decode `tokens` tokens whose context positions sum to `positions`."""
        return tokens * self.decode_base_s + positions * self.decode_position_s


def calls_limit(shapes: dict[str, Any], completion_tokens: int, costs: CostGrid) -> tuple[float, float]:
    """(prompt, decode) seconds a stage's calls need at `costs`, each bin of calls (Accounting.shapes)
    priced at its mean call; the tokens decoded as the backend counted them (`completion_tokens` where
    the shapes predate that count)."""
    prompt = sum(
        calls * costs.prompt_s(reused / calls, evaluated / calls)
        for _e, _r, calls, evaluated, reused in shapes["prompt"]
        if calls
    )
    decodes = int(shapes.get("decodes", completion_tokens))
    return prompt, costs.decode_s(decodes, int(shapes["decode_positions"]))


def measure_costs(backend: Any, repeats: int = 3) -> CostGrid:
    """Time this machine's prompt evaluation on the grid (GRID_REUSED x GRID_EVALUATED, the best of
    `repeats`) and decoding at DECODE_DEPTHS (the best of `repeats` at each; a line through seconds per
    token against position). A small context keeps the points that fit, and at least two rows of
    re-used tokens (the last one as deep as the context allows)."""
    import numpy as np

    n_ctx = backend.llm.n_ctx()
    if n_ctx < 128:
        raise ValueError(f"a context of {n_ctx} tokens is too small to measure costs on")
    evaluated = tuple(e for e in GRID_EVALUATED if e <= n_ctx // 2)
    reused = tuple(r for r in GRID_REUSED if r + evaluated[-1] <= n_ctx)
    if len(reused) < 2:
        reused = (0, n_ctx - evaluated[-1])
    depths = [d for d in DECODE_DEPTHS if d + 32 <= n_ctx] or [n_ctx // 2]

    def run() -> tuple[list[list[float]], list[tuple[float, float]]]:
        llm = backend.llm
        rows = []
        for r in reused:
            ids = _tokens(llm, r + evaluated[-1])
            llm.reset()
            llm.begin()
            if r:
                llm.eval(ids[:r])
            row = []
            for e in evaluated:
                best = float("inf")
                for _ in range(repeats):
                    llm.n_tokens = r  # the next eval drops everything after the prefix from the KV cache
                    t0 = time.perf_counter()
                    llm.eval(ids[r : r + e])
                    best = min(best, time.perf_counter() - t0)
                row.append(best)
            rows.append(row)
        decode = []
        for d in depths:
            ids = _tokens(llm, d)
            llm.reset()
            llm.eval(ids)
            best = float("inf")
            for _ in range(repeats):
                llm.n_tokens = d  # decode again from the same prompt
                best = min(best, _decode_s(llm, 32) / 32)
            decode.append((d + 15.5, best))
        return rows, decode

    def warm_up() -> None:
        backend.llm.reset()
        backend.llm.begin()
        backend.llm.eval(_tokens(backend.llm, 8))

    backend.on_model_thread(warm_up)
    rows, decode = backend.on_model_thread(run)
    slope, base = np.polyfit([p for p, _ in decode], [t for _, t in decode], 1) if len(decode) > 1 else (0.0, 0.0)
    if slope <= 0:  # no measurable growth with the context: the fastest token's time throughout
        slope, base = 0.0, min(t for _, t in decode)
    return CostGrid(reused, evaluated, tuple(tuple(r) for r in rows), float(base), float(slope))


@dataclass(frozen=True)
class BatchedDecode:
    """One sequence decoded greedily alone and then in one batch with `sequences` - 1 others."""

    sequences: int
    same_tokens: bool  # the first sequence's greedy tokens are those it decodes alone
    max_logit_diff: float  # the largest |logit difference| over every step and token
    rate: float  # tokens decoded per second, all sequences together
    rate_alone: float


def batched_decode(
    gguf: Path, sequences: Sequence[int] = (2, 4), steps: int = 32, threads: int = 2
) -> list[BatchedDecode]:
    """Does llama.cpp decode several sequences in one batch (one llama_decode per step, a token per
    sequence, a unified KV cache) faster than one, and does a sequence get the same logits either way?
    The question batched decoding in the embedded backend rests on (same seed, same text whatever the
    schedule). Greedy decoding of chat prompts that differ per sequence, on a context of its own."""
    import ctypes

    import llama_cpp as lc
    import numpy as np

    with contextlib.ExitStack() as stack:  # freed in reverse: batch, context, model
        lc.llama_backend_init()  # idempotent; what llama_cpp.Llama calls before loading
        model = lc.llama_model_load_from_file(str(gguf).encode(), lc.llama_model_default_params())
        if not model:
            raise RuntimeError(f"llama.cpp could not load {gguf}")
        stack.callback(lc.llama_model_free, model)
        vocab = lc.llama_model_get_vocab(model)
        n_vocab = lc.llama_vocab_n_tokens(vocab)
        most = max(sequences)
        cp = lc.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max, cp.kv_unified = 512 * most, 512, 512, most, True
        cp.n_threads = cp.n_threads_batch = threads
        ctx = lc.llama_init_from_model(model, cp)
        if not ctx:
            raise RuntimeError(f"llama.cpp could not create a context of {most} sequences for {gguf}")
        stack.callback(lc.llama_free, ctx)
        batch = lc.llama_batch_init(512, 0, most)
        stack.callback(lc.llama_batch_free, batch)

        def tokens(i: int) -> list[int]:  # ChatML-shaped text (SmolLM2's template), one per sequence
            ask = f"Write tweet number {i} about {TEXT[: 40 + 7 * i]}"
            text = f"<|im_start|>user\n{ask}<|im_end|>\n<|im_start|>assistant\n"
            buf = (lc.llama_token * 512)()
            n = lc.llama_tokenize(vocab, text.encode(), len(text.encode()), buf, 512, True, True)
            if n < 0:
                raise RuntimeError(f"llama_tokenize needs {-n} tokens, more than 512")
            return list(buf[:n])

        prompts = [tokens(i) for i in range(most)]

        def decode(items: list[tuple[int, int, int, bool]]) -> list[Any]:  # (token, position, sequence, logits?)
            batch.n_tokens = len(items)
            for i, (tok, pos, seq, want) in enumerate(items):
                batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = tok, pos, 1, want
                batch.seq_id[i][0] = seq
            if lc.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
            ptrs = [lc.llama_get_logits_ith(ctx, i) for i, it in enumerate(items) if it[3]]
            return [
                np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,)).copy()
                for p in ptrs
            ]

        def run(n: int) -> tuple[list[int], list[Any], float]:
            lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
            last = [
                decode([(t, i, s, i == len(prompts[s]) - 1) for i, t in enumerate(prompts[s])])[0] for s in range(n)
            ]
            first_tokens, first_logits = [], []
            t0 = time.perf_counter()
            for k in range(steps):
                nxt = [int(np.argmax(lg)) for lg in last]
                first_tokens.append(nxt[0])
                first_logits.append(last[0])
                last = decode([(nxt[s], len(prompts[s]) + k, s, True) for s in range(n)])
            return first_tokens, first_logits, steps * n / (time.perf_counter() - t0)

        run(1)  # warm-up
        alone, alone_logits, rate_alone = run(1)
        out = []
        for n in sequences:
            toks, logits, rate = run(n)
            diff = max(float(np.max(np.abs(a - b))) for a, b in zip(alone_logits, logits, strict=True))
            out.append(BatchedDecode(n, toks == alone, diff, rate, rate_alone))
        return out
