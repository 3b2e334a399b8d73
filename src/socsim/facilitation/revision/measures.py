"""What the re-analysis of the revised study measures, once (setups, comments and scores as imported).

- `user_comments`: one row per generated, non-silent user comment of the main study with its released
  toxicity and its user turn (the claims aggregate them: each discussion's mean and slope over its turns);
- `discussions`: one row per main discussion: model, strategy, mean toxicity, its OLS slope per user turn,
  active trolls, non-troll users' mean toxicity;
- `interventions`: one row per facilitated main discussion: facilitator turns, the turns it spoke (not
  silent: the authors' rule) and its echoes, and `intervention_rates` by model and strategy;
- `participation`: the authors' participation table (participation.tex), by model;
- `authors_frame`: the rows of the authors' regression exactly as their join gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from socsim.facilitation.analysis.measures import discussion_units
from socsim.facilitation.analysis.measures import interventions as interventions_of
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


def discussions(uc: pd.DataFrame, setups: pd.DataFrame) -> pd.DataFrame:
    """One row per main discussion: its mean toxicity and OLS slope per user turn (the study's
    discussion_units), active trolls and non-troll users' mean toxicity (NaN where nothing was scored)."""
    main = setups.loc[setups["condition"] == MAIN, ["discussion_id", "model", "strategy"]]
    units = discussion_units(uc.assign(time=uc["user_turn"])).rename(columns={"mean": "mean_toxicity"})
    troll = uc["role"] == "troll"
    extra = pd.DataFrame(
        {
            "comments": uc.groupby("discussion_id").size(),
            "active_trolls": uc[troll].groupby("discussion_id")["speaker_id"].nunique(),
            "nontroll_toxicity": uc[~troll].groupby("discussion_id")["toxicity"].mean(),
        }
    )
    out = main.merge(units.drop(columns="strategy"), on="discussion_id", how="left")
    out = out.merge(extra, left_on="discussion_id", right_index=True, how="left")
    out[["comments", "active_trolls"]] = out[["comments", "active_trolls"]].fillna(0).astype(int)
    cols = [
        "discussion_id",
        "model",
        "strategy",
        "comments",
        "mean_toxicity",
        "slope",
        "active_trolls",
        "nontroll_toxicity",
    ]
    return out[cols].sort_values(["model", "strategy", "discussion_id"]).reset_index(drop=True)


def interventions(comments: pd.DataFrame) -> pd.DataFrame:
    """Per facilitated main discussion: facilitator turns (opportunities), the turns the facilitator spoke
    (`interventions`: not silent, the authors' rule; the claim is about keeping silent), of which `echoes`
    repeat an earlier comment (the study's echo rule, measures.interventions, which does not count those),
    and the rate of speaking."""
    out = interventions_of(_main(comments)).drop(columns="condition")
    out["interventions"] = out["interventions"] + out["echoes"]
    out["rate"] = out["interventions"] / out["opportunities"]
    return out.sort_values(["model", "strategy", "discussion_id"]).reset_index(drop=True)


def intervention_rates(interv: pd.DataFrame) -> pd.DataFrame:
    """By model and strategy: discussions, mean and median per-discussion rate, interventions per turn."""
    g = interv.groupby(["model", "strategy"])
    out = g.agg(discussions=("rate", "size"), mean_rate=("rate", "mean"), median_rate=("rate", "median"))
    sums = g[["interventions", "opportunities", "echoes"]].sum()
    out["pooled_rate"] = sums["interventions"] / sums["opportunities"]
    out["echoes"] = sums["echoes"]
    return out.reset_index()


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
    """The authors' regression rows (data.authors_rows on the main study), toxicity as `Toxicity`."""
    main_ids = set(comments.loc[comments["condition"] == MAIN, "discussion_id"])
    c = comments[comments["discussion_id"].isin(main_ids)].to_dict("records")
    s = scores[scores["discussion_id"].isin(main_ids)].to_dict("records")
    df = pd.DataFrame(authors_rows(c, s), columns=[*comments.columns, "message_order", "toxicity"])
    return df.rename(columns={"toxicity": "Toxicity"})


def own_frame(uc: pd.DataFrame) -> pd.DataFrame:
    """socsim's regression rows: one per non-silent comment (no repeats), toxicity as `Toxicity`."""
    return uc.rename(columns={"toxicity": "Toxicity"})
