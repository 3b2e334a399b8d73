"""What the facilitation study measures (paper 000), on Parquet files of the documented schemas
(setups, comments, annotations), so released data can be re-analysed without simulating:

- diversity per discussion = 1 - mean ROUGE-L F1 over all pairs of its comments;
- the rating rows of user comments with their time (below), each comment's mean over its
  annotators, each discussion's mean toxicity and slope over time;
- facilitator interventions per discussion; non-troll toxicity with and without trolls (Fig. 6:
  the basic-prompt ablation beside the main cell of the same model and strategy);
- the observed reply rate of respond turn taking; Krippendorff's alpha (ordinal) between
  annotators; parse-failure rates;
- degeneracy flags (socsim.stats.degeneracy) of the toxicity ratings: one value (>= 90 %) or
  constant ratings.

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

from collections.abc import Iterable
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

from socsim.stats import degeneracy as dg
from socsim.stats.text import diversity

MAIN = "main"
BASIC = "basic_instructions"
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


def diversity_table(
    comments: pd.DataFrame, setups: pd.DataFrame, human: pd.DataFrame | None = None, humans: str = ""
) -> pd.DataFrame:
    """Diversity per discussion: the generated ones (source "synthetic") and `human`'s (source "human", their data
    set's name `humans` in the column of that name; their ids prefixed "human.")."""
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
        h["humans"] = humans
        out = pd.concat([out, h], ignore_index=True)
    return out.sort_values("discussion_id", ignore_index=True)


def ablation_cell(synth: pd.DataFrame) -> tuple[str, str] | None:
    """The model and strategy the ablations ran on (their first row's), or None without ablations:
    the main-study cell they are compared with (Figs. 5 and 6), not the alphabetically first model."""
    abl = synth[synth["condition"] != MAIN]
    return (abl["model"].iloc[0], abl["strategy"].iloc[0]) if len(abl) else None


def ablation_baseline(div: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The main-study discussions the ablations are compared with (ablation_cell) and a label naming them."""
    synth = div[div["source"] == "synthetic"]
    main = synth[synth["condition"] == MAIN]
    cell = ablation_cell(synth)
    if cell is None:
        return main.iloc[:0], "no ablation discussions"
    model, strategy = cell
    return main[(main["model"] == model) & (main["strategy"] == strategy)], f"main study ({model}, {strategy})"


def human_note(div: pd.DataFrame) -> str:
    """Whether the diversity figure has human discussions beside the generated ones, and which."""
    human = div[div["source"] == "human"]
    if len(human):
        return f"Human: {human['humans'].iloc[0]} (facilitation.analysis.human_reference)"
    return (
        "No human reference: facilitation.analysis.human_reference is not set, so no human discussions "
        "are drawn for comparison."
    )


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


def main_users(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the main study's user comments (no facilitator)."""
    return df[(df["condition"] == MAIN) & ~df["is_facilitator"].astype(bool)]


def discussion_units(rated: pd.DataFrame) -> pd.DataFrame:
    """One row per main-study discussion: its strategy, its mean user-comment toxicity and the slope
    of its toxicity on time (OLS over its ratings; NaN with fewer than 2 distinct times)."""
    users = main_users(rated).dropna(subset=["toxicity", "time"])
    rows = []
    for (did, strategy), g in users.groupby(["discussion_id", "strategy"]):
        t, y = g["time"].to_numpy(dtype=float), g["toxicity"].to_numpy(dtype=float)
        slope = float(np.polyfit(t, y, 1)[0]) if len(np.unique(t)) >= 2 else np.nan
        rows.append({"discussion_id": did, "strategy": strategy, "mean": float(y.mean()), "slope": slope})
    return pd.DataFrame(rows, columns=["discussion_id", "strategy", "mean", "slope"])


def toxicity_flags(rated: pd.DataFrame) -> list[dg.Flag]:
    """Flags on the toxicity ratings of the main study's user comments (the input of Table 2, the
    ANOVA and Fig. 3): one value for >= 90 % of them, or no variance at all."""
    tox = main_users(rated)["toxicity"].to_numpy(dtype=float)
    return dg.collect(dg.one_value(tox, TOXICITY_SCOPE), dg.near_constant(tox, TOXICITY_SCOPE))


def missing_strategies(expected: list[str] | None, present: Iterable[str]) -> list[str]:
    present = set(present)
    return [s for s in (expected or []) if s not in present]


def toxicity_distribution(rated: pd.DataFrame) -> dict[str, float]:
    tox = main_users(rated)["toxicity"].dropna()
    if tox.empty:
        return {}
    shares = tox.round().astype(int).value_counts(normalize=True).sort_index()
    return {str(k): float(v) for k, v in shares.items()}


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


def intervention_rates(main: pd.DataFrame) -> dict[str, float]:
    """Interventions per opportunity of each strategy's facilitators, highest first."""
    sums = main.groupby("strategy")[["interventions", "opportunities"]].sum()
    rates = {str(s): float(r["interventions"] / r["opportunities"]) for s, r in sums.iterrows()}
    return dict(sorted(rates.items(), key=lambda kv: -kv[1]))


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
    """Raise when no rating is usable (the analysis keeps agreement.json, which holds the rates)."""
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
