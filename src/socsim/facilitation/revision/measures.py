"""What the re-analysis of the revised study measures, once (setups, comments and scores as imported).

- `user_comments`: one row per generated, non-silent user comment of the main study with its released
  toxicity and its user turn (the claims aggregate them: each discussion's mean and slope over its turns);
- `discussions`: one row per main discussion: model, strategy, mean toxicity, its OLS slope per user turn,
  active trolls, non-troll users' mean toxicity;
- `interventions`: one row per facilitated main discussion: facilitator turns and how many spoke;
- `participation`: the authors' participation table (participation.tex), by model;
- `authors_frame`: the rows of the authors' regression exactly as their join gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from socsim.facilitation.revision.data import MAIN, MODEL_LABELS, NO_FACILITATOR, authors_rows

POOLED = "all models"  # the scope of a claim judged on every model's discussions together
# The turn. The authors' regressor is SynDisco's message order, centred: it counts facilitator messages too,
# so the k-th user comment is message ~k + 2 without a facilitator and ~2k + 2 with one, and a facilitated
# discussion's slope per message is half its slope per user comment: the strategy x turn terms then read
# a facilitator's mere presence as a slower rise. socsim's claims and fit use the user turn (1..15, the
# comment's place among the discussion's user turns), the same clock in every condition (as the paper-era
# Table 2's time = message_order // 2 + 1 did).
TURN = "message_order_c"  # the authors' centred turn
USER_TURN = "user_turn_c"  # socsim's: the centred user turn


def formula(turn: str) -> str:
    return f"Toxicity ~ C(strategy, Treatment(reference='{NO_FACILITATOR}')) * {turn}"


def scopes(setups: pd.DataFrame) -> list[str]:
    """The pooled scope, then every model of the main study, in the paper's order where it names them."""
    models = set(setups.loc[setups["condition"] == MAIN, "model"])
    known = [m for m in MODEL_LABELS if m in models]
    return [POOLED, *known, *sorted(models - set(known))]


def in_scope(df: pd.DataFrame, scope: str) -> pd.DataFrame:
    return df if scope == POOLED else df[df["model"] == scope]


def _main(comments: pd.DataFrame) -> pd.DataFrame:
    return comments[comments["condition"] == MAIN]


def user_comments(comments: pd.DataFrame, scores: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Generated, non-silent user comments of the main study with their toxicity, and what was left out
    (silent user turns, comments without a score)."""
    c = _main(comments)
    users = c[~c["is_seed"] & ~c["is_facilitator"]].sort_values(["discussion_id", "turn"])
    users = users.assign(user_turn=users.groupby("discussion_id").cumcount() + 1)
    merged = users.merge(
        scores[["discussion_id", "turn", "message_order", "toxicity"]], on=["discussion_id", "turn"], how="left"
    )
    spoke = merged[~merged["is_silent"]]
    kept = spoke.dropna(subset=["toxicity"]).sort_values(["discussion_id", "turn"]).reset_index(drop=True)
    left = {"silent_user_turns": int(merged["is_silent"].sum()), "comments_without_score": len(spoke) - len(kept)}
    return kept, left


def _slope(g: pd.DataFrame) -> float:
    x, y = g["user_turn"].to_numpy(dtype=float), g["toxicity"].to_numpy(dtype=float)
    if len(x) < 3 or np.ptp(x) == 0:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def discussions(uc: pd.DataFrame, setups: pd.DataFrame) -> pd.DataFrame:
    """One row per main discussion (those without a scored comment keep NaN means)."""
    main = setups[setups["condition"] == MAIN][["discussion_id", "model", "strategy"]]
    rows: list[dict[str, Any]] = []
    by = dict(tuple(uc.groupby("discussion_id")))
    for d in main.itertuples(index=False):
        g = by.get(d.discussion_id, uc.iloc[0:0])
        troll = g["role"] == "troll"
        rows.append(
            {
                "discussion_id": d.discussion_id,
                "model": d.model,
                "strategy": d.strategy,
                "comments": len(g),
                "mean_toxicity": float(g["toxicity"].mean()) if len(g) else float("nan"),
                "slope": _slope(g),
                "active_trolls": int(g.loc[troll, "speaker_id"].nunique()),
                "nontroll_toxicity": float(g.loc[~troll, "toxicity"].mean()) if (~troll).any() else float("nan"),
            }
        )
    return pd.DataFrame(rows).sort_values(["model", "strategy", "discussion_id"]).reset_index(drop=True)


def interventions(comments: pd.DataFrame) -> pd.DataFrame:
    """Per facilitated main discussion: facilitator turns, interventions (turns not silent) and their rate."""
    fac = _main(comments)
    fac = fac[fac["is_facilitator"]]
    g = fac.groupby(["discussion_id", "model", "strategy"], as_index=False).agg(
        opportunities=("turn", "size"), silent=("is_silent", "sum")
    )
    g["interventions"] = g["opportunities"] - g["silent"]
    g["rate"] = g["interventions"] / g["opportunities"]
    return g.drop(columns="silent").sort_values(["model", "strategy", "discussion_id"]).reset_index(drop=True)


def participation(comments: pd.DataFrame, paper: Mapping[str, Any]) -> pd.DataFrame:
    """participation.tex: per model, 1 - the share of generated user messages that are silent (only quotes
    and white space), every main condition; and overall; beside the printed values."""
    c = _main(comments)
    users = c[~c["is_seed"] & ~c["is_facilitator"]]
    rates = {m: 1 - float(g["is_silent"].mean()) for m, g in users.groupby("model")}
    rates["Overall"] = 1 - float(users["is_silent"].mean()) if len(users) else float("nan")
    n = {**users.groupby("model").size().to_dict(), "Overall": len(users)}
    printed = paper.get("participation") or {}
    out = pd.DataFrame(
        [
            {
                "model": m,
                "label": MODEL_LABELS.get(m, m),
                "user_messages": int(n[m]),
                "participation": r,
                "printed": printed.get(m),
            }
            for m, r in rates.items()
        ]
    )
    out["equal_to_print"] = [
        p is not None and round(r, 3) == round(float(p), 3) for r, p in zip(out["participation"], out["printed"])
    ]
    return out


def authors_frame(comments: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The authors' regression rows (data.authors_rows on the main study) with their centred turn."""
    main_ids = set(comments.loc[comments["condition"] == MAIN, "discussion_id"])
    c = comments[comments["discussion_id"].isin(main_ids)].to_dict("records")
    s = scores[scores["discussion_id"].isin(main_ids)].to_dict("records")
    df = pd.DataFrame(authors_rows(c, s), columns=[*comments.columns, "message_order", "toxicity"])
    df[TURN] = df["message_order"] - df["message_order"].mean()
    return df.rename(columns={"toxicity": "Toxicity"})


def own_frame(uc: pd.DataFrame) -> pd.DataFrame:
    """socsim's regression rows: one per non-silent comment (no repeats), the user turn centred."""
    df = uc.rename(columns={"toxicity": "Toxicity"}).copy()
    df[USER_TURN] = df["user_turn"] - df["user_turn"].mean()
    return df
