"""Statistics of the coherence study (paper 001, sections 3.3 and 4). Runs on any Parquet files of
the documented schemas (agents, profiles, pairs, judgments; utterances optional for Self-BLEU).

The six tests of section 4.3, with their exact pass rules (alpha = coherence.alpha, .01 by default):

1. Pearson r between preference gap and final agreement: pass if r < 0 and p < alpha.
2. Kolmogorov-Smirnov between the scores at gap 4 and the inverted (6 - s) scores at gap 0: the
   agents are coherent if the two are the same distribution, so pass if p >= alpha.
3. (1-1) pairs against each mixed pair (2-5, 3-5, 4-5), one-sided Mann-Whitney U ((1-1) greater),
   Bonferroni over the three: pass if every corrected p < alpha.
4. For every preference pair and every pair of contentiousness levels, two-sided Mann-Whitney U,
   Bonferroni over all of them: contentiousness should not matter once preferences are fixed, so
   pass if no corrected p < alpha.
5. Pearson r between O1 + O2 and final agreement: pass if r > 0 and p < alpha.
6. Among (1-5) preference pairs, the lowest openness pairing against every other openness pairing,
   one-sided Mann-Whitney U (lowest smaller), Bonferroni: pass if every corrected p < alpha.

A test without the data it needs (fewer than 2 values in a group) is "n/a", not a pass or a fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.multitest import bonferroni
from socsim.stats.text import self_bleu

SCORES = np.arange(1, 6)


def conversation_table(agents: pd.DataFrame, profiles: pd.DataFrame, pairs: pd.DataFrame,
                       judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per conversation: both agents' profiles and the final agreement score (joins on ids)."""
    last = judgments.sort_values(["conversation_id", "turn"]).groupby("conversation_id").tail(1)
    last = last[last["parse_ok"] & (last["score"] >= 1)][["conversation_id", "score"]]
    df = pairs.merge(last, on="conversation_id", how="inner", validate="one_to_one")
    prof = profiles[profiles["preference_ok"] & profiles["openness_ok"]][["agent_id", "model", "preference",
                                                                          "openness"]]
    meta = agents[["agent_id", "contentiousness", "bias_level"]]
    for i in (1, 2):
        p = prof.rename(columns={"agent_id": f"agent{i}_id", "preference": f"P{i}", "openness": f"O{i}"})
        df = df.merge(p, on=[f"agent{i}_id", "model"], how="inner", validate="many_to_one")
        m = meta.rename(columns={"agent_id": f"agent{i}_id", "bias_level": f"B{i}", "contentiousness": f"C{i}"})
        df = df.merge(m, on=f"agent{i}_id", how="inner", validate="many_to_one")
    df = df.rename(columns={"score": "agreement", "C1": "contentiousness"}).drop(columns=["C2"])
    return finish_table(df)


def finish_table(df: pd.DataFrame) -> pd.DataFrame:
    """Derived columns from P1, P2, O1, O2, B1, B2, agreement."""
    df = df.copy()
    lo, hi = np.minimum(df["P1"], df["P2"]), np.maximum(df["P1"], df["P2"])
    df["gap"] = hi - lo
    df["pref_pair"] = lo.astype(str) + "-" + hi.astype(str)
    olo, ohi = np.minimum(df["O1"], df["O2"]), np.maximum(df["O1"], df["O2"])
    df["open_sum"] = df["O1"] + df["O2"]
    df["open_pair"] = olo.astype(str) + "-" + ohi.astype(str)
    df["both_b2"] = (df["B1"] == 2) & (df["B2"] == 2)
    return df.sort_values("conversation_id", ignore_index=True)


def distribution(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=int)
    counts = np.array([(s == k).sum() for k in SCORES], dtype=float)
    return counts / counts.sum() if counts.sum() else np.full(5, np.nan)


def shift_weight(gap: int, shift: str, steepness: float = 2.0) -> float:
    """How far the expected distribution has moved from gap 0 (weight 0) to gap 4 (weight 1)."""
    if shift == "linear":
        return gap / 4
    if shift == "sigmoid":
        s = lambda x: 1 / (1 + np.exp(-steepness * (x - 2)))  # noqa: E731
        return float((s(gap) - s(0)) / (s(4) - s(0)))
    raise ValueError(f"unknown shift {shift!r}")


def expected_distributions(p0: np.ndarray, shift: str) -> dict[int, np.ndarray]:
    """Expected agreement distribution per gap: gap 0 as observed, gap 4 its inverse (score s at gap 0
    has the probability of 6 - s at gap 4), in between a linear or sigmoidal mix of the two."""
    p4 = p0[::-1]
    return {g: (1 - shift_weight(g, shift)) * p0 + shift_weight(g, shift) * p4 for g in range(5)}


def suppression(df: pd.DataFrame, shift: str, boot: dict, seed: int) -> pd.DataFrame:
    """Observed vs expected mean agreement per gap (Table 3 / Fig. 5): difference and ratio, with
    bootstrap intervals for both (expected ones drawn from the expected distribution)."""
    gap0 = df.loc[df["gap"] == 0, "agreement"]
    if len(gap0) == 0:
        return pd.DataFrame(columns=["gap", "shift", "n", "observed", "expected", "difference", "suppression"])
    exp = expected_distributions(distribution(gap0), shift)
    rows = []
    for g in range(5):
        obs = df.loc[df["gap"] == g, "agreement"].to_numpy(dtype=float)
        rng = np.random.default_rng([seed, g])
        e_mean = float((SCORES * exp[g]).sum())
        e_draws = rng.choice(SCORES, size=(boot["repeats"], boot["draw"]), p=exp[g]).mean(axis=1)
        o_draws = bootstrap_means(obs, boot["draw"], boot["repeats"], rng)
        o_mean = float(obs.mean()) if obs.size else float("nan")
        (elo, ehi), (olo, ohi) = interval(e_draws, boot["level"]), interval(o_draws, boot["level"])
        rows.append({"gap": g, "shift": shift, "n": int(obs.size), "observed": o_mean, "observed_lo": olo,
                     "observed_hi": ohi, "expected": e_mean, "expected_lo": elo, "expected_hi": ehi,
                     "difference": o_mean - e_mean, "suppression": o_mean / e_mean,
                     **{f"expected_p{k}": float(exp[g][k - 1]) for k in SCORES},
                     **{f"observed_p{k}": float(v) for k, v in zip(SCORES, distribution(obs))}})
    return pd.DataFrame(rows)


def _mwu(a, b, alternative: str) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    return float(sps.mannwhitneyu(a, b, alternative=alternative).pvalue)


def six_tests(df: pd.DataFrame, alpha: float) -> pd.DataFrame:
    rows = []

    def add(test, name, statistic, p, passed, detail=""):
        rows.append({"test": test, "name": name, "statistic": statistic, "p": p,
                     "result": "n/a" if passed is None else ("pass" if passed else "fail"), "detail": detail})

    # 1. preference gap vs agreement
    if len(df) >= 3 and df["gap"].nunique() > 1 and df["agreement"].nunique() > 1:
        r, p = sps.pearsonr(df["gap"], df["agreement"])
        add(1, "Increasing preference gap decreases agreement", r, p, bool(r < 0 and p < alpha))
    else:
        add(1, "Increasing preference gap decreases agreement", np.nan, np.nan, None, "needs varied gaps and scores")
    # 2. gap-4 scores vs inverted gap-0 scores
    g4, g0 = df.loc[df["gap"] == 4, "agreement"], df.loc[df["gap"] == 0, "agreement"]
    if len(g4) >= 2 and len(g0) >= 2:
        ks = sps.ks_2samp(g4, 6 - g0)
        add(2, "Agreement amplifies, disagreement dampens", ks.statistic, ks.pvalue, bool(ks.pvalue >= alpha))
    else:
        add(2, "Agreement amplifies, disagreement dampens", np.nan, np.nan, None, "needs gap-0 and gap-4 pairs")
    # 3. (1-1) against mixed pairs
    one = df.loc[df["pref_pair"] == "1-1", "agreement"]
    ps = [_mwu(one, df.loc[df["pref_pair"] == m, "agreement"], "greater") for m in ("2-5", "3-5", "4-5")]
    if not np.isnan(ps).any():
        adj = bonferroni(ps)
        add(3, "Shared sentiment, divergent speech destinations", np.nan, float(adj.max()), bool((adj < alpha).all()),
            "corrected p: " + ", ".join(f"{m} {q:.3g}" for m, q in zip(("2-5", "3-5", "4-5"), adj)))
    else:
        add(3, "Shared sentiment, divergent speech destinations", np.nan, np.nan, None, "needs 1-1, 2-5, 3-5, 4-5 pairs")
    # 4. contentiousness within preference pairs
    ps, labels = [], []
    for pair, g in df.groupby("pref_pair"):
        for c1, c2 in itertools.combinations(sorted(g["contentiousness"].unique()), 2):
            p = _mwu(g.loc[g["contentiousness"] == c1, "agreement"], g.loc[g["contentiousness"] == c2, "agreement"],
                     "two-sided")
            if not np.isnan(p):
                ps.append(p)
                labels.append(f"{pair} C{c1}-C{c2}")
    if ps:
        adj = bonferroni(ps)
        add(4, "Topic contentiousness trumps preference", np.nan, float(adj.min()), bool((adj >= alpha).all()),
            f"{int((adj < alpha).sum())} of {len(ps)} comparisons significant")
    else:
        add(4, "Topic contentiousness trumps preference", np.nan, np.nan, None, "needs a preference pair at two levels")
    # 5. openness vs agreement
    if len(df) >= 3 and df["open_sum"].nunique() > 1 and df["agreement"].nunique() > 1:
        r, p = sps.pearsonr(df["open_sum"], df["agreement"])
        add(5, "Increasing openness, increasing agreement", r, p, bool(r > 0 and p < alpha))
    else:
        add(5, "Increasing openness, increasing agreement", np.nan, np.nan, None, "needs varied openness and scores")
    # 6. lowest openness among (1-5) pairs
    far = df[df["pref_pair"] == "1-5"]
    ps = []
    if len(far):
        lowest = far.loc[far["open_sum"] == far["open_sum"].min(), "open_pair"].min()
        base = far.loc[far["open_pair"] == lowest, "agreement"]
        ps = [_mwu(base, g["agreement"], "less") for pair, g in far.groupby("open_pair") if pair != lowest]
        ps = [p for p in ps if not np.isnan(p)]
    if ps:
        adj = bonferroni(ps)
        add(6, "High preference gap and low openness, too strong agreement", np.nan, float(adj.max()),
            bool((adj < alpha).all()), f"{int((adj < alpha).sum())} of {len(ps)} comparisons significant")
    else:
        add(6, "High preference gap and low openness, too strong agreement", np.nan, np.nan, None,
            "needs (1-5) pairs at two openness pairings")
    return pd.DataFrame(rows)


def self_bleu_table(utterances: pd.DataFrame) -> pd.DataFrame:
    """Self-BLEU of each agent's statements within each conversation, averaged per agent."""
    own = utterances[utterances["turn"] > 0]  # the opening question is the topic's, not the agent's
    per_conv = (own.groupby(["conversation_id", "agent_id"])["text"].apply(lambda s: self_bleu(list(s)))
                .rename("self_bleu").reset_index())
    return per_conv.groupby("agent_id", as_index=False)["self_bleu"].mean()


def filter_repetitive(df: pd.DataFrame, agent_bleu: pd.DataFrame, threshold: float | None) -> tuple[pd.DataFrame, int]:
    if threshold is None or agent_bleu.empty:
        return df, 0
    bad = set(agent_bleu.loc[agent_bleu["self_bleu"] > threshold, "agent_id"])
    keep = ~(df["agent1_id"].isin(bad) | df["agent2_id"].isin(bad))
    return df[keep].reset_index(drop=True), int((~keep).sum())


def groupings(df: pd.DataFrame, boot: dict, seed: int) -> dict[str, pd.DataFrame]:
    """Bootstrap means for every grouping the figures use."""
    args = (boot["draw"], boot["repeats"], boot["level"], seed)
    return {
        "by_gap": grouped(df, ["model", "gap"], "agreement", *args),  # Fig. 4
        "by_gap_b2": grouped(df[df["both_b2"]], ["model", "gap"], "agreement", *args),
        "by_pref_pair": grouped(df, ["model", "pref_pair", "gap"], "agreement", *args),  # Fig. 6
        "by_pref_pair_contentiousness": grouped(df, ["model", "pref_pair", "contentiousness"], "agreement", *args),
        "by_pref_pair_contentiousness_b2": grouped(df[df["both_b2"]], ["model", "pref_pair", "contentiousness"],
                                                   "agreement", *args),  # Fig. 7
        "by_open_sum": grouped(df, ["model", "open_sum"], "agreement", *args),  # Fig. 8a
        "by_open_pair_1_5": grouped(df[df["pref_pair"] == "1-5"], ["model", "open_pair"], "agreement", *args),
    }


def openness_vs_baseline(by_open_pair: pd.DataFrame) -> pd.DataFrame:
    """Fig. 8b: mean agreement of each openness pairing minus that of the (0, 0) baseline."""
    out = []
    for model, g in by_open_pair.groupby("model"):
        base = g.loc[g["open_pair"] == "0-0", "mean"]
        if len(base):
            out.append(g.assign(diff_from_0_0=g["mean"] - float(base.iloc[0])))
    return pd.concat(out, ignore_index=True) if out else by_open_pair.assign(diff_from_0_0=np.nan)
