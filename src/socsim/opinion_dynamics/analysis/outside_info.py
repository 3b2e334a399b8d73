"""The analysis of outside information in the agents' outputs (paper 002, section 3.3; v4 App. L; the judging is
socsim.opinion_dynamics.outside_info).

`table` gives the rate per (agent model, world setting) and says which worlds ran and were judged;
`finding` judges "outside information is more common in the open world" only where both worlds ran:
the per-simulation share of judged outputs with outside information (the unit: a simulation's
outputs share its memory), Welch t open vs closed over simulations, direction +, by the one verdict rule (at least
socsim.stats.verdict.MIN_UNITS simulations per world; fewer: its "too few" words).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from socsim.opinion_dynamics.outside_info import WORLDS
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd


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
