"""Every LLM stage of a finished run beside this machine's limit for its token counts.

Measures, in this run, the raw prompt-evaluation and decoding rates of each embedded model the run
used (socsim.limits.measure_rates: at the run's mean evaluated prompt length per call), then
prints per stage: calls, prompt tokens submitted and evaluated (the share re-used from the prefix
cache), completion tokens, the actual time and its split, the limit time at the measured rates and
the ratio limit / actual (target >= 0.8), and names the stage with the biggest gap. Beside it, per
stage: its mean call (prompt tokens re-used from the prefix cache, tokens evaluated), the prompt and
decoding rates measured at that shape (both change with the context's length: measured on this
machine, a suffix after 650-800 cached tokens evaluates about a quarter slower per token than a fresh
prompt, and decoding slows likewise), the ratio at them (ratio_shape), and
the share of its limit that is decoding (decode_share: where batched decoding would pay). Then, the
limit with every call priced at its own shape (limit_calls_s, ratio_calls): the machine's time for one
prompt evaluation is measured on a grid of (tokens in the KV cache, tokens evaluated) and decoding's
time per token against its position (socsim.limits.measure_costs), and each bin of the stage's
calls (its metrics' `shapes`) is priced at its mean call. This is the limit the target is about: a
suffix of 16 tokens after 600 cached ones evaluates at about 200 tokens/s where one of 500 runs at
300, so neither a fresh prompt's rates nor the mean call's stand for a stage of mixed calls. Last, the
run's total: its model seconds beside the sum of the stages' limits measured in the same run (the ratio
factors the shared machine's speed of the moment out).

    python benchmarks/stage_limits.py [--results results] [--params params.yaml] [--out limits.json]

Run it on a fresh run (`make run` without .socsim-cache): stages answered from the call cache have no
model time to compare.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from socsim import config, models
from socsim.limits import (
    best_limit,
    biggest_gap,
    limit_row,
    measure_costs,
    measure_rates,
    measure_shape,
    run_total,
    shape,
    stage_uses,
)

COLUMNS = [
    ("study", "{}"),
    ("stage", "{}"),
    ("calls", "{}"),
    ("prompt_tokens", "{}"),
    ("prefix_reuse", "{:.0%}"),
    ("completion_tokens", "{}"),
    ("actual_s", "{:.1f}"),
    ("limit_s", "{:.1f}"),
    ("ratio", "{:.2f}"),
    ("mean_reused", "{}"),
    ("mean_evaluated", "{}"),
    ("shape_prompt_rate", "{:.0f}"),
    ("shape_decode_rate", "{:.0f}"),
    ("ratio_shape", "{:.2f}"),
    ("limit_calls_s", "{:.1f}"),
    ("ratio_calls", "{:.2f}"),
    ("decode_share", "{:.0%}"),
    ("biggest_excess", "{}"),
]


def fmt(row: dict, key: str, spec: str) -> str:
    v = row.get(key)
    return "-" if v is None else spec.format(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--out", type=Path, default=None, help="write the rows and rates as JSON")
    a = ap.parse_args()
    params = config.load(a.params)
    uses = stage_uses(a.results)
    if not uses:
        raise SystemExit(f"no LLM stage metrics under {a.results}/*/metrics/: run the workflow first")
    rows, rates_out = [], {}
    for model in sorted({u.model for u in uses}):
        spec = params["models"].get(model)
        if spec is None or spec["backend"] != "embedded":
            print(f"{model}: not an embedded model of {a.params}; its raw rates are the server's (left out)")
            continue
        mine = [u for u in uses if u.model == model]
        calls = sum(u.calls for u in mine)
        mean_len = sum(u.evaluated for u in mine) // calls if calls else 256
        client = models.named_client(params, model)
        rates = measure_rates(client.backend, prompt_len=max(32, min(mean_len, spec["n_ctx"] - 64)))
        costs = measure_costs(client.backend)
        rates_out[model] = {**vars(rates), "costs": vars(costs)}
        print(
            f"{model}: raw prompt evaluation {rates.prompt_eval:.0f} tokens/s at {rates.prompt_len} tokens, "
            f"decoding {rates.decode:.1f} tokens/s (best of 3, measured now)"
        )
        print(f"  one prompt evaluation, ms (rows: tokens cached; columns: tokens evaluated {costs.evaluated})")
        for r, secs in zip(costs.reused, costs.seconds):
            print(f"  {r:>6}: " + " ".join(f"{1000 * t:8.1f}" for t in secs))
        print(
            f"  decoding: {1000 * costs.decode_base_s:.2f} ms per token + {1e6 * costs.decode_position_s:.2f} us "
            "per position of context"
        )
        for u in mine:  # the rates at the stage's own mean call: its suffix after its cached prefix, then decoding
            reused, evaluated = shape(u)
            fits = u.calls and reused + evaluated + 32 <= spec["n_ctx"]
            at_shape = measure_shape(client.backend, reused, evaluated) if fits else None
            rows.append(limit_row(u, rates, at_shape, costs))
    print("\n" + " | ".join(k for k, _ in COLUMNS))
    for r in rows:
        print(" | ".join(fmt(r, k, s) for k, s in COLUMNS) + (f"  ({r['note']})" if r.get("note") else ""))
    gap = biggest_gap(rows)
    if gap is not None:
        print(
            f"\nbiggest gap: {gap['study']} {gap['stage']} ({gap['actual_s'] - best_limit(gap):.1f} s over its "
            f"limit of {best_limit(gap):.1f} s; most of it in {gap.get('biggest_excess', 'untimed calls')})"
        )
    total = run_total(rows)
    if total is not None:
        print(
            f"\nrun: {total['stages']} LLM stages, {total['actual_s']:.1f} s of model time, {total['limit_s']:.1f} s "
            f"at this machine's limit measured now: ratio {total['ratio']:.2f} (limit / actual)"
        )
    if a.out:
        a.out.write_text(json.dumps({"rates": rates_out, "stages": rows, "run": total}, indent=2))


if __name__ == "__main__":
    main()
