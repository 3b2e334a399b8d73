"""What the revised study's figures draw (socsim.io.report.Panel): rows, notes (flags and n, worded here)
and why a panel has no data. socsim.facilitation.revision.figures draws them and decides nothing.

- `toxicity_over_turns`: mean toxicity at each user turn (1..15) by strategy, and by model, with a 95 %
  t interval over discussions (each discussion's comment at that turn);
- `interventions`: the mean per-discussion intervention rate by model and strategy, with its interval;
- `model_effects`: one panel per claim: each part's effect with its 95 % interval, per model and on all
  models, coloured by its verdict (claims_by_model).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.facilitation.revision.data import MODEL_LABELS
from socsim.facilitation.revision.places import MODEL_EFFECTS, TOXICITY_OVER_TURNS
from socsim.io.report import Panel, Report, n_range

# The claims judged on toxicity: their panels carry the toxicity's flags.
TOXICITY_CLAIMS = (
    "strategies_lower_toxicity",
    "toxicity_rises_with_turn",
    "strategy_turn_interactions",
    "trolls_raise_toxicity",
)


def _mean_ci(g: pd.Series) -> pd.Series:
    x = g.dropna().to_numpy(dtype=float)
    m = float(x.mean()) if len(x) else float("nan")
    half = float(sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
    return pd.Series({"mean": m, "ci_low": m - half, "ci_high": m + half, "n": len(x)})


def _over_turns(uc: pd.DataFrame, by: str) -> pd.DataFrame:
    per = uc.groupby([by, "discussion_id", "user_turn"], as_index=False)["toxicity"].mean()
    out = per.groupby([by, "user_turn"])["toxicity"].apply(_mean_ci).unstack().reset_index()
    out = out.rename(columns={by: "group"})
    if by == "model":
        out["group"] = out["group"].map(lambda m: MODEL_LABELS.get(m, m))
    return out


def toxicity_over_turns(uc: pd.DataFrame, rep: Report) -> list[Panel]:
    flags = rep.flags_on(TOXICITY_OVER_TURNS)
    panels = []
    for by in ("strategy", "model"):
        if not len(uc):
            panels.append(Panel(f"by {by}", pd.DataFrame(), flags, "no scored user comment"))
            continue
        data = _over_turns(uc, by)
        counts = uc.groupby(by)["discussion_id"].nunique().tolist()
        panels.append(Panel(f"by {by}", data, [n_range(counts, f"discussions per {by}"), *flags]))
    return panels


def interventions(interv: pd.DataFrame) -> list[Panel]:
    if not len(interv):
        return [Panel("by model and strategy", pd.DataFrame(), (), "no facilitator turns in the main study")]
    data = interv.groupby(["model", "strategy"])["rate"].apply(_mean_ci).unstack().reset_index()
    order = {m: k for k, m in enumerate(MODEL_LABELS)}
    data = data.sort_values(["model", "strategy"], key=lambda c: c.map(order) if c.name == "model" else c)
    data["label"] = data["model"].map(lambda m: MODEL_LABELS.get(m, m))
    counts = interv.groupby(["model", "strategy"]).size().tolist()
    note = n_range(counts, "discussions per model and strategy") + "; a silence: a text of only quotes or space"
    return [Panel("by model and strategy", data, [note])]


def model_effects(grid: pd.DataFrame, rep: Report) -> list[Panel]:
    panels = []
    for claim in dict.fromkeys(grid["claim"]):
        g = grid[(grid["claim"] == claim) & (grid["part"] != "all parts")]
        cols = ["part", "scope", "estimate", "ci_low", "ci_high", "n", "verdict", "holds"]
        data = g[cols].assign(word=g["verdict"].str.split(" ").str[0]).reset_index(drop=True)
        data["scope"] = data["scope"].map(lambda m: MODEL_LABELS.get(m, m))
        flags = rep.flags_on(MODEL_EFFECTS) if claim in TOXICITY_CLAIMS else []
        empty = not len(data) or not data["estimate"].notna().any()
        panels.append(Panel(claim, data, flags, "no estimate" if empty else ""))
    return panels


def plots(rep: Report, uc: pd.DataFrame, interv: pd.DataFrame, grid: pd.DataFrame) -> dict[str, list[Panel]]:
    return {
        "toxicity_over_turns": toxicity_over_turns(uc, rep),
        "interventions": interventions(interv),
        "model_effects": model_effects(grid, rep),
    }
