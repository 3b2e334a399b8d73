"""Statistics of the facilitation study (paper 000). Runs on any Parquet files of the
documented schemas (setups, comments, annotations), so released data can be re-analysed
without simulating.

- diversity per discussion = 1 - mean ROUGE-L F1 over all pairs of its comments;
- OLS toxicity ~ C(strategy, Treatment("No Moderator")) * time over user comments (one row per
  annotator rating, as the paper), plain and cluster-robust (by discussion) errors (Table 2);
- one-way ANOVA across strategies and pairwise Student t-tests (raw and Holm p) at three levels,
  each naming its unit (UNITS): "rating" (every rating row a unit: the paper's ANOVA and Fig. 3,
  pseudo-replicated, since a comment's ratings and a discussion's comments are not independent),
  "comment" (each comment's mean over its annotators) and "discussion" (each discussion's mean
  toxicity: the honest test of a strategy effect, the only level that carries a verdict);
- facilitator interventions per discussion; non-troll toxicity with and without trolls (Fig. 6:
  the basic-prompt ablation beside the main cell of the same model and strategy);
- Krippendorff's alpha (ordinal) between annotators; parse-failure rates;
- degeneracy flags (socsim.stats.degeneracy): toxicity ratings of one value (>= 90 %), constant
  ratings, too few units for a test. A flagged input makes the tables print
  "degenerate input: <why>" instead of stars, F/p verdicts or coefficients.

Time (facilitation.analysis.time):
- "user_index" (default, the paper's): the index of a comment among its discussion's user
  comments, 1, 2, ...; the seed opinion (posted by a user) is user comment 1, so the first
  generated user comment has time 2. Facilitator turns and silent turns do not advance it.
- "position": the comment's index among all non-silent comments, facilitator comments included
  (the seed is 0), so moderated discussions' clocks run about twice as fast.

Ratings of the seed opinion (a comment with is_seed) are excluded by rule (rated_and_seeds): the seed
opens the discussion and is not generated, socsim's annotate stage never rates it, and the paper's
analysis drops it; a release that rates it (SynDisco's does) would otherwise shift Table 2 and the tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.facilitation.setups import NO_MODERATOR
from socsim.stats import degeneracy as dg
from socsim.stats.multitest import holm
from socsim.stats.regression import OLSResult, ols_plain_and_clustered, stars, unavailable
from socsim.stats.text import diversity

MAIN = "main"
TIME_RULES = ("user_index", "position")
LEVELS = ("rating", "comment", "discussion")
# The unit of each level's test (anova.json's "unit", the pairwise table, vs_paper and Fig. 3 name it).
UNITS = {"rating": "rating rows", "comment": "comments", "discussion": "discussions"}
UNIT_WORDS = {
    "rating": "rating rows as units, one per comment and annotator: the paper's test, pseudo-replicated",
    "comment": "comments as units, each its mean over its annotators",
    "discussion": "discussions as units, each its mean toxicity",
}
TOXICITY_SCOPE = "facilitation toxicity ratings"
BASIC = "basic_instructions"
# A comment-level test's p treats the comments of one discussion as independent: no verdict rests on it.
NESTED = "no verdict: comments of one discussion are not independent (see the discussion level)"
# A rating-level test's p treats the ratings of one comment, and the comments of one discussion, as
# independent observations (pseudo-replication): no verdict rests on it either.
PSEUDO = (
    "no verdict: the ratings of one comment and the comments of one discussion are not independent "
    "(pseudo-replication; see the discussion level)"
)
NO_VERDICT = {"rating": PSEUDO, "comment": NESTED, "discussion": ""}
MIN_DISCUSSIONS = 3  # per strategy (or group) before a discussion-level or clustered test gives a verdict


def diversity_table(comments: pd.DataFrame, setups: pd.DataFrame, human: pd.DataFrame | None = None) -> pd.DataFrame:
    spoken = comments[~comments["is_silent"]]
    div = (
        spoken.sort_values(["discussion_id", "turn"])
        .groupby("discussion_id")["text"]
        .apply(lambda s: diversity(list(s)))
        .rename("diversity")
        .reset_index()
    )
    meta = setups[
        ["discussion_id", "condition", "model", "strategy", "turn_taking", "instructions", "with_sdb", "with_roles"]
    ]
    out = div.merge(meta, on="discussion_id", how="left", validate="one_to_one")
    out["source"] = "synthetic"
    if human is not None and len(human):
        h = (
            human.groupby("discussion_id")["text"]
            .apply(lambda s: diversity(list(s.astype(str))))
            .rename("diversity")
            .reset_index()
        )
        h["discussion_id"] = "human." + h["discussion_id"].astype(str)
        h["source"] = "human"
        out = pd.concat([out, h], ignore_index=True)
    return out.sort_values("discussion_id", ignore_index=True)


def user_index(comments: pd.DataFrame) -> pd.Series:
    """Per comment row: its index (1, 2, ...) among its discussion's non-silent user comments, the
    seed opinion being 1; NaN for facilitator and silent turns (they do not advance it)."""
    spoken_user = comments[~comments["is_facilitator"] & ~comments["is_silent"]]
    idx = spoken_user.sort_values(["discussion_id", "turn"]).groupby("discussion_id").cumcount() + 1
    return idx.reindex(comments.index).astype("float64")


def seed_note(n: int) -> str:
    """What the report says about the seed ratings it excluded (rated_and_seeds)."""
    return (
        f"{n} ratings of seed opinions excluded by rule: the seed opens the discussion and is not a generated "
        "comment (socsim never rates it; the paper's analysis drops it)"
    )


def rated_comments(
    comments: pd.DataFrame, annotations: pd.DataFrame, setups: pd.DataFrame, time: str = "user_index"
) -> pd.DataFrame:
    """rated_and_seeds without the count of excluded seed ratings."""
    return rated_and_seeds(comments, annotations, setups, time)[0]


def rated_and_seeds(
    comments: pd.DataFrame, annotations: pd.DataFrame, setups: pd.DataFrame, time: str = "user_index"
) -> tuple[pd.DataFrame, int]:
    """Annotation rows joined to their comment and discussion on ids (never on text), with
    `time` by the chosen rule (module docstring), and how many usable ratings of seed opinions were
    excluded (the one place of that rule)."""
    if time not in TIME_RULES:
        raise ValueError(f"facilitation.analysis.time must be one of {TIME_RULES}, got {time!r}")
    ann = annotations[annotations["parse_ok"]]
    comments = comments.assign(user_index=user_index(comments))
    cols = [
        "discussion_id",
        "turn",
        "position",
        "user_index",
        "speaker_id",
        "role",
        "is_facilitator",
        "is_silent",
        "is_seed",
        "strategy",
        "model",
        "condition",
    ]
    out = ann.merge(comments[cols], on=["discussion_id", "turn"], how="inner", validate="many_to_one")
    seed = out["is_seed"].astype(bool)
    out = out[~seed].drop(columns="is_seed").reset_index(drop=True)
    out = out.merge(
        setups[["discussion_id", "instructions", "with_roles"]], on="discussion_id", how="left", validate="many_to_one"
    )
    out["time"] = out[time]
    return out, int(seed.sum())


def comment_means(rated: pd.DataFrame) -> pd.DataFrame:
    """Mean rating per comment over its annotators."""
    keys = [
        "discussion_id",
        "turn",
        "strategy",
        "model",
        "condition",
        "role",
        "is_facilitator",
        "time",
        "instructions",
        "with_roles",
    ]
    return rated.groupby(keys, as_index=False, dropna=False)[["toxicity", "argument_quality"]].mean()


def _main_users(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["condition"] == MAIN) & ~df["is_facilitator"].astype(bool)]


def toxicity_flags(rated: pd.DataFrame) -> list[dg.Flag]:
    """Flags on the toxicity ratings of the main study's user comments (the input of Table 2, the
    ANOVA and Fig. 3): one value for >= 90 % of them, or no variance at all."""
    tox = _main_users(rated)["toxicity"].to_numpy(dtype=float)
    return dg.collect(dg.one_value(tox, TOXICITY_SCOPE), dg.near_constant(tox, TOXICITY_SCOPE))


def missing_strategies(expected: list[str] | None, present: Iterable[str]) -> list[str]:
    present = set(present)
    return [s for s in (expected or []) if s not in present]


def _missing_note(missing: list[str]) -> str:
    return ("no usable ratings for " + ", ".join(missing) + " (not in the model)") if missing else ""


def toxicity_ols(
    rated: pd.DataFrame, expected_strategies: list[str] | None = None, flags: list[dg.Flag] | None = None
) -> OLSResult:
    """Table 2. n/a with the reason when the ratings are constant, the reference strategy has no
    ratings, or there are no more ratings than terms; stars withheld (flags) when one rating value
    makes up >= 90 %. `expected_strategies` (the main study's strategies in the setups) names the
    strategies without any usable rating in the note. `flags`: toxicity_flags(rated), if already known."""
    users = _main_users(rated).dropna(subset=["toxicity", "time"]).copy()
    formula = f'toxicity ~ C(strategy, Treatment("{NO_MODERATOR}")) * time'
    flags = toxicity_flags(rated) if flags is None else flags
    strategies = users["strategy"].unique()
    note = _missing_note(missing_strategies(expected_strategies, strategies))
    if NO_MODERATOR not in strategies or len(strategies) < 2:
        reason = (
            f"needs ratings of '{NO_MODERATOR}' (the reference) and of at least one other strategy in "
            f"the main study; have: {sorted(strategies) or 'none'}"
        )
        return unavailable(users.iloc[:0], formula, "discussion_id", reason, flags, note)
    constant = dg.near_constant(users["toxicity"], TOXICITY_SCOPE)
    if constant is not None:
        return unavailable(users, formula, "discussion_id", constant.message, flags, note)
    few = dg.too_few(len(users), 2 * len(strategies) + 1, "Table 2 OLS", "ratings")
    if few is not None:
        return unavailable(users, formula, "discussion_id", few.message, dg.collect(flags, few), note)
    res = ols_plain_and_clustered(users, formula, cluster="discussion_id")
    perfect = None
    if res.resid_ss <= dg.VARIANCE_TOL * max(1, res.nobs):
        perfect = dg.Flag(
            "Table 2 OLS", "perfect fit: the residuals are zero, so standard errors and p-values carry no information"
        )
    res.flags = dg.collect(flags, perfect)
    notes = [note] if note else []
    per_strategy = users.groupby("strategy")["discussion_id"].nunique()
    if (per_strategy < MIN_DISCUSSIONS).any():
        # With one discussion per strategy the strategy terms absorb whole clusters and the
        # cluster-robust errors collapse to zero: they are not identified; with two they rest on
        # two clusters per term. Not reported below MIN_DISCUSSIONS.
        res.table[["se_cluster", "p_cluster"]] = np.nan
        notes.append(
            f"clustered errors need at least {MIN_DISCUSSIONS} discussions per strategy "
            f"(fewest here: {int(per_strategy.min())}); not reported"
        )
    res.note = "; ".join(notes)
    return res


def _term_label(term: str) -> str:
    label = term.replace(f'C(strategy, Treatment("{NO_MODERATOR}"))[T.', "").replace("]", "")
    return label.replace(":time", "×time")


def _num(x: float, fmt: str = ".3f") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(x, fmt)


def ols_tables(res: OLSResult, time: str = "user_index", notes: Sequence[str] = ()) -> tuple[pd.DataFrame, str, str]:
    """Table 2 as a data frame (CSV), Markdown and LaTeX. Unavailable: every cell n/a with the
    reason; degenerate inputs: coefficients without stars and the flag in place of the stars.
    `notes`: further sentences below the table (e.g. the seed ratings excluded)."""
    t = res.table.reset_index()
    t.insert(0, "variable", [_term_label(x) for x in t["term"]])
    withheld = f"n/a: {res.unavailable}" if res.unavailable else dg.verdict(res.flags, "")
    # Stars only from the discussion-clustered p: ratings of one discussion are not independent,
    # and the plain p rejects a null strategy effect in about half of all runs (issue 20).
    t["stars"] = "" if withheld else [stars(p) if np.isfinite(p) else "" for p in t["p_cluster"]]
    t["verdict"] = withheld
    md = ["| Variable | Toxicity | SE | SE (clustered by discussion) |", "| --- | --- | --- | --- |"]
    tex = [r"\begin{tabular}{lrrr}", r"\hline", r"Variable & Toxicity & SE & SE (cluster) \\", r"\hline"]
    for _, r in t.iterrows():
        coef = _num(r["coef"]) + r["stars"]
        se = _num(r["se"])
        se_c = _num(r["se_cluster"])
        md.append(f"| {r['variable']} | {coef} | {se} | {se_c} |")
        name = r["variable"].replace("×", r"$\times$").replace("_", r"\_")
        tex.append(f"{name} & {coef} & {se} & {se_c} \\\\")
    time_words = (
        "time = index of the comment among its discussion's user comments (seed opinion = 1)"
        if time == "user_index"
        else "time = position among all non-silent comments (seed = 0)"
    )
    head = [withheld if res.unavailable else f"Stars withheld: {withheld}"] if withheld else []
    legend = (
        ""
        if head
        else " Stars: . p<0.1, * p<0.05, ** p<0.01, *** p<0.001, from the discussion-clustered errors only"
        " (none where they are not identified)."
    )
    note = (
        f"Adj. R² = {_num(res.adj_r2)}; N = {res.nobs} ratings; {res.n_clusters} discussions; {time_words}."
        + legend
        + (f" Note: {res.note}." if res.note else "")
        + "".join(f" {n}." for n in notes)
    )
    md += ["", *head, note]
    tex += [r"\hline", r"\end{tabular}", *("% " + h for h in head), "% " + note]
    return t, "\n".join(md) + "\n", "\n".join(tex) + "\n"


def unit_values(frame: pd.DataFrame, level: str) -> pd.DataFrame:
    """The units of a test over the main study's user comments: rating rows (rating level; `frame`:
    rated_comments), comments (comment level; `frame`: comment_means, each comment's mean over its
    annotators) or discussions (discussion level; `frame`: comment_means, one mean per discussion)."""
    users = _main_users(frame).dropna(subset=["toxicity"])
    if level in ("rating", "comment"):
        return users[["discussion_id", "strategy", "toxicity"]].reset_index(drop=True)
    if level == "discussion":
        return users.groupby(["discussion_id", "strategy"], as_index=False)["toxicity"].mean()
    raise ValueError(f"level must be one of {LEVELS}")


PAIRWISE_COLUMNS = [
    "level",
    "strategy_a",
    "strategy_b",
    "n_a",
    "n_b",
    "mean_a",
    "mean_b",
    "diff",
    "t",
    "p",
    "p_holm",
    "verdict",
]


def group_tests(
    units: pd.DataFrame, level: str, flags: Sequence[dg.Flag] = (), expected_strategies: list[str] | None = None
) -> tuple[dict[str, Any], pd.DataFrame]:
    """ANOVA and pairwise Student t-tests (raw and Holm p) of toxicity across strategies, one unit
    per row of `units`. `verdict` is "" for a usable test; else "degenerate input: <why>",
    "inconclusive (...)" (too few units), or NO_VERDICT[level] at the rating and comment levels (no
    verdict rests on them)."""
    unit = UNITS[level]
    groups = {s: g["toxicity"].to_numpy(dtype=float) for s, g in units.groupby("strategy")}
    missing = missing_strategies(expected_strategies, groups)
    anova: dict[str, Any] = {
        "level": level,
        "unit": unit,
        "unit_description": UNIT_WORDS[level],
        "strategies": sorted(groups),
        "n": {s: int(len(v)) for s, v in sorted(groups.items())},
        "no_ratings": missing,
        "F": None,
        "p": None,
    }
    usable = {s: v for s, v in groups.items() if len(v) >= 2}
    # Too few units is no degeneracy: the test is inconclusive, with the n (socsim.stats.verdict).
    few = f"inconclusive (n = {len(usable)} strategies with at least 2 {unit}, needs 2)" if len(usable) < 2 else None
    constant = dg.near_constant(units["toxicity"], f"toxicity per {unit[:-1]}")
    anova_flags = dg.collect(list(flags), constant)
    excluded = sorted(s for s, v in groups.items() if len(v) < 2)
    if excluded:
        anova["excluded"] = {"strategies": excluded, "reason": f"fewer than 2 {unit}"}
    if few is None and constant is None:
        within = np.concatenate([v - v.mean() for v in usable.values()])
        no_within = dg.near_constant(within, f"toxicity per {unit[:-1]} within strategies")
        if no_within is not None:
            anova_flags = dg.collect(
                anova_flags, dg.Flag(no_within.scope, "no variance within any strategy: F is infinite")
            )
        else:
            f, p = sps.f_oneway(*usable.values())
            anova.update(F=float(f), p=float(p))
    anova["verdict"] = dg.verdict(anova_flags, few or NO_VERDICT[level])
    anova["flags"] = dg.as_json(anova_flags)
    rows = []
    for a, b in itertools.combinations(sorted(groups), 2):
        va, vb = groups[a], groups[b]
        n_pair = min(len(va), len(vb))
        pair_few = f"inconclusive (n = {n_pair} {unit}, needs 2)" if n_pair < 2 else None
        pair_const = dg.near_constant(np.concatenate([va, vb]), f"toxicity per {unit[:-1]} of {a} and {b}")
        t = p = np.nan
        pair_flags = dg.collect(list(flags), pair_const)
        if pair_few is None and pair_const is None:
            t, p = sps.ttest_ind(va, vb)
            if not np.isfinite(t):
                t = p = np.nan
                pair_flags = dg.collect(
                    pair_flags,
                    dg.Flag(f"t-test {a} vs {b} at {level} level", "no variance within either strategy: t is infinite"),
                )
        rows.append(
            {
                "level": level,
                "strategy_a": a,
                "strategy_b": b,
                "n_a": len(va),
                "n_b": len(vb),
                "mean_a": float(np.mean(va)),
                "mean_b": float(np.mean(vb)),
                "diff": float(np.mean(va) - np.mean(vb)),
                "t": float(t),
                "p": float(p),
                "verdict": dg.verdict(pair_flags, pair_few or NO_VERDICT[level]),
            }
        )
    pairwise = pd.DataFrame(rows, columns=[c for c in PAIRWISE_COLUMNS if c != "p_holm"])
    ok = pairwise["p"].notna()
    pairwise["p_holm"] = np.nan
    pairwise.loc[ok, "p_holm"] = holm(pairwise.loc[ok, "p"].to_numpy())
    return anova, pairwise[PAIRWISE_COLUMNS]


def anova_and_pairwise(
    means: pd.DataFrame,
    flags: Sequence[dg.Flag] = (),
    expected_strategies: list[str] | None = None,
    rated: pd.DataFrame | None = None,
) -> tuple[dict[str, dict[str, Any]], pd.DataFrame]:
    """Every level: {"rating": anova, "comment": anova, "discussion": anova} and one pairwise table
    with a `level` column (Holm within each level). `means`: comment_means; `rated`: the rating rows
    (rated_comments), without which the rating level is left out."""
    frames = {"rating": rated, "comment": means, "discussion": means}
    anovas: dict[str, dict[str, Any]] = {}
    tables: list[pd.DataFrame] = []
    for level in LEVELS:
        frame = frames[level]
        if frame is None:
            continue
        anovas[level], table = group_tests(unit_values(frame, level), level, flags, expected_strategies)
        tables.append(table)
    return anovas, pd.concat(tables, ignore_index=True)


def interventions(comments: pd.DataFrame) -> pd.DataFrame:
    """Per discussion: the facilitator's turns (opportunities), its replies that echo an earlier comment
    (socsim.stats.text.echoes), and its interventions: replies neither silent nor an echo."""
    from socsim.stats.text import echoes

    comments = comments.reset_index(drop=True)  # one label per row: the echoes are aligned by it
    ordered = comments.sort_values(["discussion_id", "turn"])
    echo = (
        pd.concat(
            [
                pd.Series(echoes(g["text"].tolist(), g["is_silent"].tolist()), index=g.index)
                for _, g in ordered.groupby("discussion_id", sort=False)
            ]
        )
        if len(ordered)
        else pd.Series(dtype=bool)
    )
    fac = comments[comments["is_facilitator"]].assign(echo=echo, intervened=lambda f: ~f["is_silent"] & ~f["echo"])
    out = fac.groupby(["discussion_id", "condition", "model", "strategy"], as_index=False).agg(
        opportunities=("turn", "size"),
        echoes=("echo", lambda s: int(s.sum())),
        interventions=("intervened", lambda s: int(s.sum())),
    )
    out["rate"] = out["interventions"] / out["opportunities"]
    return out.sort_values("discussion_id", ignore_index=True)


def troll_toxicity(means: pd.DataFrame) -> pd.DataFrame:
    """Toxicity of non-troll users' comments, by whether the discussion has trolls and by prompt."""
    users = means[~means["is_facilitator"]]
    has_troll = users.groupby("discussion_id")["role"].apply(lambda r: bool((r == "troll").any()))
    users = users.assign(
        trolls=users["discussion_id"].map(has_troll).map({True: "with trolls", False: "without trolls"})
    )
    non_troll = users[users["role"] != "troll"]
    return non_troll[
        ["discussion_id", "turn", "condition", "model", "strategy", "instructions", "trolls", "toxicity"]
    ].sort_values(["discussion_id", "turn"], ignore_index=True)


def toxicity_level(x: pd.Series) -> pd.Series:
    """A comment's mean rating rounded to a level 1-5, halves up."""
    return np.floor(x.astype(float) + 0.5).astype("Int64")


def troll_groups(tt: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6's data: the basic-prompt ablation beside the main-study cell of the same model and
    strategy, split by whether the discussion has trolls; per group the proportion of non-troll
    comments at each toxicity level and the group's n. Empty when there is no basic-prompt
    ablation (nothing comparable)."""
    cols = ["model", "strategy", "prompt", "trolls", "toxicity_level", "count", "n", "proportion"]
    tt = tt.dropna(subset=["toxicity"])
    basic = tt[tt["condition"] == BASIC]
    parts = []
    for (model, strategy), b in basic.groupby(["model", "strategy"]):
        m = tt[(tt["condition"] == MAIN) & (tt["model"] == model) & (tt["strategy"] == strategy)]
        parts += [m.assign(prompt="instruction prompt"), b.assign(prompt="basic prompt")]
    if not parts:
        return pd.DataFrame(columns=cols)
    data = pd.concat(parts, ignore_index=True).assign(toxicity_level=lambda d: toxicity_level(d["toxicity"]))
    keys = ["model", "strategy", "prompt", "trolls"]
    rows = []
    for key, g in data.groupby(keys):
        counts = g["toxicity_level"].value_counts()
        for level in range(1, 6):
            c = int(counts.get(level, 0))
            rows.append(
                {**dict(zip(keys, key)), "toxicity_level": level, "count": c, "n": len(g), "proportion": c / len(g)}
            )
    return pd.DataFrame(rows, columns=cols)


def observed_reply_rate(comments: pd.DataFrame, setups: pd.DataFrame) -> dict[str, Any]:
    """P(speaker_t = speaker_t-2) over the user turns of discussions with `respond` turn taking
    (the paper's 40 %), the number of turns it is measured on, and what a uniform pick among the
    other users would give over the same turns (`uniform_rate`: 1 / (users - 1) per discussion;
    `users`: the counts of users per discussion: its setup's participants, or where the setups do
    not list them, the distinct user speakers of its comments)."""
    respond = setups.loc[setups["turn_taking"].isin(["respond", "respond_uniform"]), "discussion_id"]
    users = comments[~comments["is_facilitator"] & comments["discussion_id"].isin(respond)]
    listed = setups.set_index("discussion_id")["participants"].map(len) if "participants" in setups else None
    hits = trials = 0
    uniform = 0.0
    counts: set[int] = set()
    for did, g in users.sort_values(["discussion_id", "turn"]).groupby("discussion_id"):
        s = g["speaker_id"].to_list()
        n = max(0, len(s) - 2)
        hits += sum(s[t] == s[t - 2] for t in range(2, len(s)))
        trials += n
        k = int(listed[did]) if listed is not None and did in listed.index else len(set(s))
        counts.add(k)
        uniform += n / (k - 1) if k > 1 else n  # one user only: always the same speaker
    return {
        "rate": hits / trials if trials else None,
        "turns": trials,
        "uniform_rate": uniform / trials if trials else None,
        "users": sorted(counts),
    }


def parse_failures(annotations: pd.DataFrame) -> dict[str, Any]:
    """How many ratings failed to parse, overall and per annotator (null rate without ratings)."""
    out: dict[str, Any] = {"ratings": int(len(annotations)), "parse_failures": int((~annotations["parse_ok"]).sum())}
    out["parse_failure_rate"] = out["parse_failures"] / out["ratings"] if out["ratings"] else None
    out["parse_failure_rate_by_annotator"] = {
        a: float((~g["parse_ok"]).mean()) for a, g in annotations.groupby("annotator_id")
    }
    return out


def agreement(annotations: pd.DataFrame) -> dict[str, Any]:
    """Parse-failure rates and Krippendorff's alpha (ordinal) of each rated dimension."""
    out = parse_failures(annotations)
    ok = annotations[annotations["parse_ok"]]
    for dim in ("toxicity", "argument_quality"):
        out[f"krippendorff_alpha_{dim}"] = None
        if ok.empty:
            continue
        table = ok.pivot_table(index="annotator_id", columns=["discussion_id", "turn"], values=dim)
        values = table.to_numpy(dtype=float)
        if values.shape[0] >= 2 and np.isfinite(values).sum() >= 2 and len(np.unique(values[np.isfinite(values)])) > 1:
            out[f"krippendorff_alpha_{dim}"] = float(
                krippendorff.alpha(reliability_data=values, level_of_measurement="ordinal")
            )
    return out


def check_ratings(annotations: pd.DataFrame) -> None:
    """Raise when no rating is usable (call after writing agreement.json, which holds the rates)."""
    n = len(annotations)
    ok = int(annotations["parse_ok"].sum()) if n else 0
    if n == 0:
        raise ValueError("no ratings at all: the annotations file is empty (no non-silent comment was annotated)")
    if ok == 0:
        raise ValueError(
            f"every rating failed to parse ({n - ok} of {n}): no toxicity to analyse; "
            "agreement.json (CLI, DVC) and the annotate stage's metrics hold the parse-failure rates per "
            "annotator"
        )


def toxicity_distribution(rated: pd.DataFrame) -> dict[str, float]:
    tox = _main_users(rated)["toxicity"].dropna()
    if tox.empty:
        return {}
    shares = tox.round().astype(int).value_counts(normalize=True).sort_index()
    return {str(k): float(v) for k, v in shares.items()}


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
