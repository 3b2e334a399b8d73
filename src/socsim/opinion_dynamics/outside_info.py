"""Outside information in the agents' outputs (paper 002, section 3.3; v4 App. L).

The paper reports that about 15 % of outputs carry information from outside the simulation in the
open world (v4: 6 of 40 outputs, 20 tweets and 20 reports, three annotators) and none in the closed
world. Here an LLM judge labels each output of a seeded sample: per world setting that ran,
`outside_info.sample` tweets and as many reviewer reports of the main simulations (null = all),
drawn with seeds.rng(seed, "opinion_dynamics", "outside_info", world, kind). The judge is
`outside_info.model` (null = the classifier's model), temperature 0, its answer constrained to
yes / no (prompts.yaml `outside_info`). Raw answers and a parse flag are kept; a failed parse is
never a crash (counted, left out of the rate).

`table` gives the rate per (agent model, world setting) and says which worlds ran and were judged;
`finding` judges "outside information is more common in the open world" only where both worlds ran:
the per-simulation share of judged outputs with outside information (the unit: a simulation's
outputs share its memory), Welch t open vs closed over simulations, direction +, by the one verdict rule (at least
socsim.stats.verdict.MIN_UNITS simulations per world; fewer: its "too few" words).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from socsim import seeds
from socsim.llm import Choice, LLMClient, Request, Response
from socsim.seeds import derive_seed
from socsim.sim import judge as sim_judge
from socsim.sim import runner
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd

ANSWER = Choice(("yes", "no"))
WORLDS = ("closed", "open")
KINDS = ("tweet", "report")


def outputs(events: Sequence[Mapping[str, Any]], setups: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every tweet and reviewer report of the main simulations, with its world, in (sim_id, t, kind) order."""
    info = {s["sim_id"]: s for s in setups if s["condition"] == "main"}
    out = []
    for e in sorted(events, key=lambda e: (e["sim_id"], e["t"])):
        s = info.get(e["sim_id"])
        if s is None:
            continue
        for kind, text, agent in (("tweet", e.get("tweet"), e["writer"]), ("report", e.get("report"), e["reviewer"])):
            if text is not None:
                out.append(
                    {
                        "sim_id": e["sim_id"],
                        "t": int(e["t"]),
                        "kind": kind,
                        "agent": int(agent),
                        "model": e["model"],
                        "topic": e["topic"],
                        "world": s["world"],
                        "claim": s["claim"],
                        "text": text,
                    }
                )
    return out


def sample(items: Sequence[dict[str, Any]], n: int | None, seed: int) -> list[dict[str, Any]]:
    """Per (agent model, world, kind): `n` outputs drawn without replacement (all where n is None or
    larger), so each model's rate rests on a sample of its own."""
    chosen = []
    for model in sorted({x["model"] for x in items}):
        for world in WORLDS:
            for kind in KINDS:
                pool = [x for x in items if x["model"] == model and x["world"] == world and x["kind"] == kind]
                if n is not None and n < len(pool):
                    pool = seeds.rng(seed, "opinion_dynamics", "outside_info", model, world, kind).sample(pool, n)
                chosen += pool
    return sorted(chosen, key=lambda x: (x["sim_id"], x["t"], x["kind"]))


def request(
    prompts: Mapping[str, Any], item: Mapping[str, Any], client: LLMClient, cfg: Mapping[str, Any], seed: int, name: str
) -> Request:
    text = prompts["outside_info"].format(kind=item["kind"], claim=item["claim"], text=str(item["text"]).strip())
    sampling = client.sampling(max_tokens=cfg["max_tokens"], temperature=cfg["temperature"])
    s = derive_seed(seed, "opinion_dynamics", "outside_info", name, item["sim_id"], item["t"], item["kind"])
    label = f"{item['sim_id']} t={item['t']} {item['kind']}"
    return Request.chat([{"role": "user", "content": text}], s, sampling, ANSWER, label=label)


def label(item: Mapping[str, Any], resp: Response, name: str) -> dict[str, Any]:
    ans = sim_judge.answer(resp, outside=None)
    keep = ("sim_id", "t", "kind", "agent", "model", "topic", "world")
    return {
        **{k: item[k] for k in keep},
        "outside": None if ans["outside"] is None else ans["outside"] == "yes",
        "raw_answer": ans["raw_answer"],
        "parse_ok": ans["parse_ok"],
        "judge_model": name,
    }


async def judge(
    items: Sequence[dict[str, Any]],
    prompts: Mapping[str, Any],
    cfg: Mapping[str, Any],
    client: LLMClient,
    name: str,
    seed: int,
) -> list[dict[str, Any]]:
    """One label per output, all concurrently, started claim by claim and kind by kind (the prompts
    that share a prefix); rows in the items' order."""

    async def one(x: dict[str, Any]) -> list[dict[str, Any]]:
        return [label(x, await client.generate(request(prompts, x, client, cfg, seed, name)), name)]

    def group(x: dict[str, Any]) -> tuple[str, ...]:
        return (str(x["claim"]), str(x["kind"]))

    return await runner.run_grouped({name: client}, items, one, group, f"outside information ({name})", unit="output")


# -- analysis ----------------------------------------------------------------------------------------


def judge_flags(labels: pd.DataFrame) -> dict[str, list[dg.Flag]]:
    """Per agent model: a judge that gave one answer to every output it judged (over every world).
    Outside information is rare (the paper: 15 % open, 0 % closed), so a mostly-"no" judge is
    expected; only a single answer for everything carries no information (threshold 100 %)."""
    out = {}
    for model, g in labels.groupby("model", sort=True):
        vals = g.outside.dropna().astype(int).tolist()
        out[str(model)] = dg.collect(dg.one_value(vals, f"outside-information judge on {model}'s outputs", 1.0))
    return out


def table(labels: pd.DataFrame, setups: pd.DataFrame, sample_n: int | None) -> pd.DataFrame:
    """The outside-information rate per (agent model, world setting), tweets, reports and both; each
    world of WORLDS has a row, which says whether it ran and was judged."""
    main = setups[setups.condition == "main"]
    models = sorted(set(main.model))
    flags = judge_flags(labels) if len(labels) else {}
    rows = []
    for model in models:
        ran = set(main[main.model == model].world)
        for world in WORLDS:
            g = labels[(labels.model == model) & (labels.world == world)] if len(labels) else labels
            ok = g[g.parse_ok] if len(g) else g
            row: dict[str, Any] = {"model": model, "world": world}
            for kind in ("tweet", "report", "all"):
                k = ok if kind == "all" else ok[ok.kind == kind]
                row[f"{kind}_judged"] = int(len(k))
                row[f"{kind}_outside"] = int(k.outside.astype(bool).sum()) if len(k) else 0
                row[f"{kind}_rate"] = float(k.outside.astype(bool).mean()) if len(k) else None
            row["parse_failed"] = int((~g.parse_ok).sum()) if len(g) else 0
            row["simulations"] = int(g.sim_id.nunique()) if len(g) else 0
            if world not in ran:
                status = "did not run (opinion_dynamics.world)"
            elif sample_n == 0:
                status = "ran, not judged (opinion_dynamics.outside_info.sample = 0)"
            elif not len(g):
                status = "ran, no outputs judged"
            else:
                status = f"judged {len(g)} outputs of {row['simulations']} simulation(s)"
            row["status"] = status
            row["flags"] = "; ".join(f.message for f in flags.get(model, [])) if world in ran and len(g) else ""
            rows.append(row)
    return pd.DataFrame(rows)


def per_sim_rates(labels: pd.DataFrame) -> pd.DataFrame:
    """Per simulation: the share of its judged (parsed) outputs with outside information."""
    ok = labels[labels.parse_ok]
    return (
        ok.assign(outside=ok.outside.astype(float))
        .groupby(["model", "world", "sim_id"], sort=True)
        .outside.mean()
        .rename("rate")
        .reset_index()
    )


def finding(
    labels: pd.DataFrame, model: str, flags: Sequence[dg.Flag], alpha: float
) -> tuple[float | None, int, vd.Verdict]:
    """(open - closed difference of the mean per-simulation rate, smaller n of simulations, verdict)
    of "outside information is more common in the open world": Welch t over simulations, direction +."""
    r = per_sim_rates(labels[labels.model == model]) if len(labels) else pd.DataFrame(columns=["world", "rate"])
    a, b = r[r.world == "open"].rate.to_numpy(float), r[r.world == "closed"].rate.to_numpy(float)
    n = int(min(len(a), len(b)))
    diff, p = vd.welch(a, b)
    return diff, n, vd.effect(p, diff, n, vd.MIN_UNITS, "simulations per world", +1, flags, alpha)
