"""Statistics of the facilitation study (paper 000). Runs on any Parquet files of the
documented schemas (setups, comments, annotations), so released data can be re-analysed
without simulating.

- diversity per discussion = 1 - mean ROUGE-L F1 over all pairs of its comments;
- OLS toxicity ~ C(strategy, Treatment("No Moderator")) * time over user comments (one row per
  annotator rating, as the paper), plain and cluster-robust (by discussion) errors (Table 2);
- one-way ANOVA across strategies; pairwise t-tests of comment toxicity, raw and Holm p;
- facilitator interventions per discussion; non-troll toxicity with and without trolls;
- Krippendorff's alpha (ordinal) between annotators; parse-failure rates.

"time" is a comment's position in its discussion (its index among non-silent comments).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.facilitation.setups import NO_MODERATOR
from socsim.stats.multitest import holm
from socsim.stats.regression import OLSResult, ols_plain_and_clustered, stars
from socsim.stats.text import diversity

MAIN = "main"


def diversity_table(comments: pd.DataFrame, setups: pd.DataFrame, human: pd.DataFrame | None = None) -> pd.DataFrame:
    spoken = comments[~comments["is_silent"]]
    div = (spoken.sort_values(["discussion_id", "turn"]).groupby("discussion_id")["text"]
           .apply(lambda s: diversity(list(s))).rename("diversity").reset_index())
    meta = setups[["discussion_id", "condition", "model", "strategy", "turn_taking", "instructions", "with_sdb",
                   "with_roles"]]
    out = div.merge(meta, on="discussion_id", how="left", validate="one_to_one")
    out["source"] = "synthetic"
    if human is not None and len(human):
        h = (human.groupby("discussion_id")["text"].apply(lambda s: diversity(list(s.astype(str))))
             .rename("diversity").reset_index())
        h["discussion_id"] = "human." + h["discussion_id"].astype(str)
        h["source"] = "human"
        out = pd.concat([out, h], ignore_index=True)
    return out.sort_values("discussion_id", ignore_index=True)


def rated_comments(comments: pd.DataFrame, annotations: pd.DataFrame, setups: pd.DataFrame) -> pd.DataFrame:
    """Annotation rows joined to their comment and discussion on ids (never on text)."""
    ann = annotations[annotations["parse_ok"]]
    cols = ["discussion_id", "turn", "position", "speaker_id", "role", "is_facilitator", "is_silent", "strategy",
            "model", "condition"]
    out = ann.merge(comments[cols], on=["discussion_id", "turn"], how="inner", validate="many_to_one")
    out = out.merge(setups[["discussion_id", "instructions", "with_roles"]], on="discussion_id", how="left",
                    validate="many_to_one")
    return out.rename(columns={"position": "time"})


def comment_means(rated: pd.DataFrame) -> pd.DataFrame:
    """Mean rating per comment over its annotators."""
    keys = ["discussion_id", "turn", "strategy", "model", "condition", "role", "is_facilitator", "time",
            "instructions", "with_roles"]
    return rated.groupby(keys, as_index=False)[["toxicity", "argument_quality"]].mean()


def toxicity_ols(rated: pd.DataFrame) -> OLSResult:
    users = rated[(rated["condition"] == MAIN) & ~rated["is_facilitator"]].copy()
    strategies = users["strategy"].unique()
    if NO_MODERATOR not in strategies or len(strategies) < 2:
        raise ValueError("the OLS needs 'No Moderator' and at least one other strategy in the main condition")
    formula = f'toxicity ~ C(strategy, Treatment("{NO_MODERATOR}")) * time'
    res = ols_plain_and_clustered(users, formula, cluster="discussion_id")
    per_strategy = users.groupby("strategy")["discussion_id"].nunique()
    if (per_strategy < 2).any():
        # With one discussion per strategy the strategy terms absorb whole clusters and the
        # cluster-robust errors collapse to zero: they are not identified, so not reported.
        res.table[["se_cluster", "p_cluster"]] = np.nan
        res.note = ("clustered errors need at least 2 discussions per strategy "
                    f"(fewest here: {int(per_strategy.min())}); not reported")
    return res


def _term_label(term: str) -> str:
    label = term.replace(f'C(strategy, Treatment("{NO_MODERATOR}"))[T.', "").replace("]", "")
    return label.replace(":time", "×time")


def ols_tables(res: OLSResult) -> tuple[pd.DataFrame, str, str]:
    """Table 2 as a data frame (CSV), Markdown and LaTeX."""
    t = res.table.reset_index()
    t.insert(0, "variable", [_term_label(x) for x in t["term"]])
    t["stars"] = [stars(p) for p in t["p"]]
    t["stars_cluster"] = [stars(p) for p in t["p_cluster"]]
    md = ["| Variable | Toxicity | SE | SE (clustered by discussion) |", "| --- | --- | --- | --- |"]
    tex = [r"\begin{tabular}{lrrr}", r"\hline", r"Variable & Toxicity & SE & SE (cluster) \\", r"\hline"]
    for _, r in t.iterrows():
        se_c = "n/a" if np.isnan(r["se_cluster"]) else f"{r['se_cluster']:.3f}{r['stars_cluster']}"
        md.append(f"| {r['variable']} | {r['coef']:.3f}{r['stars']} | {r['se']:.3f} | {se_c} |")
        name = r["variable"].replace("×", r"$\times$").replace("_", r"\_")
        tex.append(f"{name} & {r['coef']:.3f}{r['stars']} & {r['se']:.3f} & {se_c} \\\\")
    note = (f"Adj. R² = {res.adj_r2:.3f}; N = {res.nobs} ratings; {res.n_clusters} discussions. "
            "Stars: . p<0.1, * p<0.05, ** p<0.01, *** p<0.001 (plain errors / clustered errors)."
            + (f" Note: {res.note}." if res.note else ""))
    md += ["", note]
    tex += [r"\hline", r"\end{tabular}", "% " + note]
    return t, "\n".join(md) + "\n", "\n".join(tex) + "\n"


def anova_and_pairwise(means: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    users = means[(means["condition"] == MAIN) & ~means["is_facilitator"]]
    groups = {s: g["toxicity"].to_numpy() for s, g in users.groupby("strategy")}
    usable = {s: v for s, v in groups.items() if len(v) >= 2}
    anova = {"strategies": sorted(groups), "n": {s: int(len(v)) for s, v in sorted(groups.items())}}
    if len(usable) >= 2:
        f, p = sps.f_oneway(*usable.values())
        anova.update(F=float(f), p=float(p))
    else:
        anova.update(F=None, p=None)
    rows = []
    for a, b in itertools.combinations(sorted(groups), 2):
        va, vb = groups[a], groups[b]
        t, p = sps.ttest_ind(va, vb) if len(va) >= 2 and len(vb) >= 2 else (np.nan, np.nan)
        rows.append({"strategy_a": a, "strategy_b": b, "mean_a": float(np.mean(va)), "mean_b": float(np.mean(vb)),
                     "diff": float(np.mean(va) - np.mean(vb)), "t": float(t), "p": float(p)})
    pairwise = pd.DataFrame(rows, columns=["strategy_a", "strategy_b", "mean_a", "mean_b", "diff", "t", "p"])
    ok = pairwise["p"].notna()
    pairwise["p_holm"] = np.nan
    pairwise.loc[ok, "p_holm"] = holm(pairwise.loc[ok, "p"].to_numpy())
    return anova, pairwise


def interventions(comments: pd.DataFrame) -> pd.DataFrame:
    fac = comments[comments["is_facilitator"]]
    out = (fac.groupby(["discussion_id", "condition", "model", "strategy"], as_index=False)
           .agg(opportunities=("turn", "size"), interventions=("is_silent", lambda s: int((~s).sum()))))
    out["rate"] = out["interventions"] / out["opportunities"]
    return out.sort_values("discussion_id", ignore_index=True)


def troll_toxicity(means: pd.DataFrame) -> pd.DataFrame:
    """Toxicity of non-troll users' comments, by whether the discussion has trolls and by prompt."""
    users = means[~means["is_facilitator"]]
    has_troll = users.groupby("discussion_id")["role"].apply(lambda r: bool((r == "troll").any()))
    users = users.assign(trolls=users["discussion_id"].map(has_troll).map({True: "with trolls",
                                                                            False: "without trolls"}))
    non_troll = users[users["role"] != "troll"]
    return non_troll[["discussion_id", "turn", "condition", "instructions", "trolls", "toxicity"]].sort_values(
        ["discussion_id", "turn"], ignore_index=True)


def agreement(annotations: pd.DataFrame) -> dict:
    out = {"ratings": int(len(annotations)), "parse_failures": int((~annotations["parse_ok"]).sum())}
    out["parse_failure_rate"] = out["parse_failures"] / out["ratings"] if out["ratings"] else 0.0
    out["parse_failure_rate_by_annotator"] = {
        a: float((~g["parse_ok"]).mean()) for a, g in annotations.groupby("annotator_id")}
    ok = annotations[annotations["parse_ok"]]
    for dim in ("toxicity", "argument_quality"):
        table = ok.pivot_table(index="annotator_id", columns=["discussion_id", "turn"], values=dim)
        values = table.to_numpy(dtype=float)
        if values.shape[0] >= 2 and np.isfinite(values).sum() >= 2 and len(np.unique(values[np.isfinite(values)])) > 1:
            out[f"krippendorff_alpha_{dim}"] = float(krippendorff.alpha(reliability_data=values,
                                                                       level_of_measurement="ordinal"))
        else:
            out[f"krippendorff_alpha_{dim}"] = None
    return out


def read_human_reference(path: str | Path | None) -> pd.DataFrame | None:
    if not path:
        return None
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"facilitation.analysis.human_reference not found: {path}")
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    missing = {"discussion_id", "text"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: human reference lacks column(s) {sorted(missing)}")
    return df
