"""What the coherence study measures (paper 001, sections 3.3 and 4): the conversation table (one
row per judged conversation with both agents' profiles), the Self-BLEU filter, the bootstrap
groupings of the figures, observed against expected agreement per gap (Table 3 / Fig. 5, with the
per-gap suppression test's statistics), and the paper's distributions for Test 2's power."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from socsim.coherence.analysis import descriptive
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.permutation import permutation_p
from socsim.stats.text import self_bleu

FloatArray = npt.NDArray[np.float64]

SCORES = np.arange(1, 6)
SUPPRESSION_NULL_REPEATS = 4999  # data sets simulated under "no suppression" per gap
DEFAULT_STEEPNESS = 2.0
# The pairing columns of pairs.parquet (the rest is the episode: question, system prompts, seed).
PAIRING = ["conversation_id", "model", "topic", "agent1_id", "agent2_id", "profile1", "profile2", "opener"]


def conversation_table(
    agents: pd.DataFrame, profiles: pd.DataFrame, pairs: pd.DataFrame, judgments: pd.DataFrame
) -> pd.DataFrame:
    """One row per conversation: both agents' profiles and the final agreement score (joins on ids)."""
    last = judgments.sort_values(["conversation_id", "turn"]).groupby("conversation_id").tail(1)
    last = last[last["parse_ok"] & (last["score"] >= 1)][["conversation_id", "score", "judge_model"]]
    df = pairs[PAIRING].merge(last, on="conversation_id", how="inner", validate="one_to_one")
    prof = usable_profiles(profiles)[["agent_id", "model", "preference", "openness"]]
    meta = agents[["agent_id", "contentiousness", "bias_level"]]
    for i in (1, 2):
        p = prof.rename(columns={"agent_id": f"agent{i}_id", "preference": f"P{i}", "openness": f"O{i}"})
        df = df.merge(p, on=[f"agent{i}_id", "model"], how="inner", validate="many_to_one")
        m = meta.rename(columns={"agent_id": f"agent{i}_id", "bias_level": f"B{i}", "contentiousness": f"C{i}"})
        df = df.merge(m, on=f"agent{i}_id", how="inner", validate="many_to_one")
    df = df.rename(columns={"score": "agreement", "C1": "contentiousness"}).drop(columns=["C2"])
    return finish_table(df)


def usable_profiles(profiles: pd.DataFrame) -> pd.DataFrame:
    """Profiles whose preference and openness both parsed, with both as integers (a single null in
    the Parquet column makes pandas read it as float, which would turn "1-5" labels into "1.0-5.0")."""
    ok = profiles[profiles["preference_ok"].astype(bool) & profiles["openness_ok"].astype(bool)]
    ok = ok[ok["preference"].notna() & ok["openness"].notna()]
    return ok.astype({"preference": "int64", "openness": "int64"})


def finish_table(df: pd.DataFrame) -> pd.DataFrame:
    """Derived columns from P1, P2, O1, O2, B1, B2, agreement (P and O as integers)."""
    df = df.copy()
    for c in ("P1", "P2", "O1", "O2", "B1", "B2", "agreement"):
        df[c] = df[c].astype("int64")
    lo, hi = np.minimum(df["P1"], df["P2"]), np.maximum(df["P1"], df["P2"])
    df["gap"] = hi - lo
    df["pref_pair"] = lo.astype(str) + "-" + hi.astype(str)
    olo, ohi = np.minimum(df["O1"], df["O2"]), np.maximum(df["O1"], df["O2"])
    df["open_sum"] = df["O1"] + df["O2"]
    df["open_pair"] = olo.astype(str) + "-" + ohi.astype(str)
    df["both_b2"] = (df["B1"] == 2) & (df["B2"] == 2)
    return df.sort_values("conversation_id", ignore_index=True)


def distribution(scores: npt.ArrayLike) -> npt.NDArray[np.float64]:
    s = np.asarray(scores, dtype=int)
    counts = np.array([(s == k).sum() for k in SCORES], dtype=float)
    return counts / counts.sum() if counts.sum() else np.full(5, np.nan)


def shift_weight(gap: int, shift: str, steepness: float = DEFAULT_STEEPNESS) -> float:
    """How far the expected distribution has moved from gap 0 (weight 0) to gap 4 (weight 1).

    linear: gap / 4. sigmoid (the paper does not define its shape): the logistic
    s(x) = 1 / (1 + exp(-steepness * (x - 2))), centred on gap 2 and rescaled so that gap 0 has
    weight 0 and gap 4 weight 1: (s(gap) - s(0)) / (s(4) - s(0)). `coherence.sigmoid_steepness`
    (2.0 by default): near 0 it approaches the linear shift, large values approach a step at gap 2.
    """
    if shift == "linear":
        return gap / 4
    if shift == "sigmoid":
        if steepness <= 0:
            raise ValueError(f"sigmoid steepness must be > 0, got {steepness}")

        def s(x: float) -> np.float64:
            y: np.float64 = 1 / (1 + np.exp(-steepness * (x - 2)))
            return y

        return float((s(gap) - s(0)) / (s(4) - s(0)))
    raise ValueError(f"unknown shift {shift!r}")


def expected_distributions(
    p0: npt.NDArray[np.float64], shift: str, steepness: float = DEFAULT_STEEPNESS
) -> dict[int, npt.NDArray[np.float64]]:
    """Expected agreement distribution per gap: gap 0 as observed, gap 4 its inverse (score s at gap 0
    has the probability of 6 - s at gap 4), in between a linear or sigmoidal mix of the two."""
    p4 = p0[::-1]
    return {g: (1 - shift_weight(g, shift, steepness)) * p0 + shift_weight(g, shift, steepness) * p4 for g in range(5)}


SUPPRESSION_COLUMNS = (
    [
        "gap",
        "shift",
        "n",
        "observed",
        "observed_lo",
        "observed_hi",
        "expected",
        "expected_lo",
        "expected_hi",
        "difference",
        "suppression",
    ]
    + [f"expected_p{k}" for k in SCORES]
    + [f"observed_p{k}" for k in SCORES]
    + ["note", "n_gap0", "se", "df", "p_greater", "p_less", "p_null_greater", "p_null_less"]
)
# Added by `analyse`: the row's verdict on "suppressed at this gap" and its inputs' flags.
SUPPRESSION_EXTRA = ["verdict", "holds", "flags"]


def suppression_test(obs: npt.NDArray[np.float64], gap0: npt.NDArray[np.float64], weight: float) -> dict[str, float]:
    """Observed minus expected mean at one gap, with the expected mean's own sampling error: the
    expected mean is 6 w + (1 - 2 w) mean_0 (w the shift weight), so the difference has variance
    var_g / n_g + (1 - 2 w)^2 var_0 / n_0; Welch-Satterthwaite df; one-sided p both ways. NaN when
    either side has fewer than two conversations or no variance."""
    nan = {"se": np.nan, "df": np.nan, "p_greater": np.nan, "p_less": np.nan}
    if obs.size < 2 or gap0.size < 2:
        return nan
    a = obs.var(ddof=1) / obs.size
    b = (1 - 2 * weight) ** 2 * gap0.var(ddof=1) / gap0.size
    se = float(np.sqrt(a + b))
    if not se > 0:
        return nan
    df = (a + b) ** 2 / (a**2 / (obs.size - 1) + (b**2 / (gap0.size - 1) if b > 0 else 0.0))
    diff = obs.mean() - (6 * weight + (1 - 2 * weight) * gap0.mean())
    t = diff / se
    return {"se": se, "df": float(df), "p_greater": float(sps.t.sf(t, df)), "p_less": float(sps.t.cdf(t, df))}


def suppression_t(counts: npt.ArrayLike, counts0: npt.ArrayLike, weight: float) -> FloatArray:
    """`suppression_test`'s t from score counts (last axis 1-5) at the gap and at gap 0, vectorised
    over leading axes; NaN where a side has fewer than two conversations or there is no variance."""
    c, c0 = np.asarray(counts, float), np.asarray(counts0, float)
    s = SCORES.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        n, n0 = c.sum(axis=-1), c0.sum(axis=-1)
        m, m0 = (c * s).sum(axis=-1) / n, (c0 * s).sum(axis=-1) / n0
        v = ((c * s**2).sum(axis=-1) - n * m**2) / (n - 1)
        v0 = ((c0 * s**2).sum(axis=-1) - n0 * m0**2) / (n0 - 1)
        se = np.sqrt(np.maximum(v, 0) / n + (1 - 2 * weight) ** 2 * np.maximum(v0, 0) / n0)
        t = (m - (6 * weight + (1 - 2 * weight) * m0)) / se
    return np.where((n >= 2) & (n0 >= 2) & (se > 1e-12), t, np.nan)


def suppression_null_p(
    obs: FloatArray, gap0: FloatArray, weight: float, rng: np.random.Generator, repeats: int = SUPPRESSION_NULL_REPEATS
) -> dict[str, float]:
    """One-sided p both ways of `suppression_t`, simulated under "no suppression": gap 0 drawn from
    its observed distribution, the gap from the expected distribution that implies ((1 - w) p0 + w
    times p0 inverted), so the t's skew on 5-point scores counts (the t distribution's p rejects
    coherent data at gap 1 about twice as often as its level at 30 conversations a side)."""
    c = np.array([(obs == k).sum() for k in SCORES], float)
    c0 = np.array([(gap0 == k).sum() for k in SCORES], float)
    t = float(suppression_t(c, c0, weight))
    if not np.isfinite(t):
        return {"p_null_greater": np.nan, "p_null_less": np.nan}
    p0 = c0 / c0.sum()
    sim0 = rng.multinomial(int(c0.sum()), p0, size=repeats)
    sim = rng.multinomial(int(c.sum()), (1 - weight) * p0 + weight * p0[::-1], size=repeats)
    null = suppression_t(sim, sim0, weight)
    return {"p_null_greater": permutation_p(t, null, "greater"), "p_null_less": permutation_p(t, null, "less")}


def suppression(
    df: pd.DataFrame, shift: str, boot: dict[str, Any], seed: int, steepness: float = DEFAULT_STEEPNESS
) -> pd.DataFrame:
    """Observed vs expected mean agreement per gap (Table 3 / Fig. 5): difference and ratio, with
    bootstrap intervals for both (expected ones drawn from the expected distribution), and the
    difference's one-sided tests (`suppression_test`). Without gap-0 pairs the expected
    distributions are undefined: one row per gap, n/a, with the reason."""
    gap0 = df.loc[df["gap"] == 0, "agreement"].to_numpy(dtype=float)
    if len(gap0) == 0:
        return pd.DataFrame(
            [
                {
                    "gap": g,
                    "shift": shift,
                    "n": int((df["gap"] == g).sum()),
                    "note": "n/a: no gap-0 pairs, so no expected distribution",
                    "n_gap0": 0,
                }
                for g in range(5)
            ],
            columns=SUPPRESSION_COLUMNS,
        )
    exp = expected_distributions(distribution(gap0), shift, steepness)
    rows: list[dict[str, Any]] = []
    for g in range(5):
        obs = df.loc[df["gap"] == g, "agreement"].to_numpy(dtype=float)
        rng = np.random.default_rng([seed, g])
        e_mean = float((SCORES * exp[g]).sum())
        e_draws = rng.choice(SCORES, size=(boot["repeats"], boot["draw"]), p=exp[g]).mean(axis=1)
        o_draws = bootstrap_means(obs, boot["draw"], boot["repeats"], rng)
        o_mean = float(obs.mean()) if obs.size else float("nan")
        (elo, ehi), (olo, ohi) = interval(e_draws, boot["level"]), interval(o_draws, boot["level"])
        w = shift_weight(g, shift, steepness)
        test = {} if g == 0 else suppression_test(obs, gap0, w)
        if g > 0:
            test |= suppression_null_p(obs, gap0, w, np.random.default_rng([seed, g, 34]))
        rows.append(
            {
                "gap": g,
                "shift": shift,
                "n": int(obs.size),
                "observed": o_mean,
                "observed_lo": olo,
                "observed_hi": ohi,
                "expected": e_mean,
                "expected_lo": elo,
                "expected_hi": ehi,
                "difference": o_mean - e_mean,
                "suppression": o_mean / e_mean,
                **{f"expected_p{k}": float(exp[g][k - 1]) for k in SCORES},
                **{f"observed_p{k}": float(v) for k, v in zip(SCORES, distribution(obs))},
                "note": "" if obs.size else "n/a: no pairs at this gap",
                "n_gap0": int(gap0.size),
                **test,
            }
        )
    return pd.DataFrame(rows, columns=SUPPRESSION_COLUMNS)


def paper_suppression(paper: dict[str, Any]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """The paper's gap-0 distribution (Table 3) and a gap-4 distribution with its observed gap-4 mean
    (3.6): the mixture (1 - l) inverse + l gap-0 with that mean (the paper gives only the mean)."""
    t3, sp = paper.get("table3", {}), paper.get("suppression", {})
    obs, m4 = t3.get("observed_gap0"), sp.get("observed_mean_gap4")
    if not obs or m4 is None:
        return None
    p0 = np.array([float(obs.get(k, 0.0)) for k in SCORES])
    p0 = p0 / p0.sum()
    m0 = float((SCORES * p0).sum())
    if m0 == 3:
        return None
    lam = (float(m4) - (6 - m0)) / (m0 - (6 - m0))
    if not 0 <= lam <= 1:
        return None
    return p0, (1 - lam) * p0[::-1] + lam * p0


def self_bleu_table(utterances: pd.DataFrame) -> pd.DataFrame:
    """Self-BLEU of each agent's statements within each conversation, averaged per agent of each
    agent model: the same agent id under two models is two agents (one repetitive model must not
    remove another model's conversations)."""
    own = utterances[utterances["turn"] > 0]  # the opening question is the topic's, not the agent's
    if own.empty:
        return pd.DataFrame(columns=["model", "agent_id", "self_bleu"])
    per_conv = (
        own.groupby(["model", "conversation_id", "agent_id"])["text"]
        .apply(lambda s: self_bleu(list(s)))
        .rename("self_bleu")
        .reset_index()
    )
    return per_conv.groupby(["model", "agent_id"], as_index=False)["self_bleu"].mean()


def filter_repetitive(df: pd.DataFrame, agent_bleu: pd.DataFrame, threshold: float | None) -> tuple[pd.DataFrame, int]:
    """Conversations without an agent whose Self-BLEU (within its model) exceeds the threshold."""
    if threshold is None or agent_bleu.empty:
        return df, 0
    bad = agent_bleu.loc[agent_bleu["self_bleu"] > threshold, ["model", "agent_id"]]
    bad_keys = set(zip(bad["model"], bad["agent_id"]))
    keep = ~pd.Series(
        [
            (m, a1) in bad_keys or (m, a2) in bad_keys
            for m, a1, a2 in zip(df["model"], df["agent1_id"], df["agent2_id"])
        ],
        index=df.index,
        dtype=bool,
    )
    return df[keep].reset_index(drop=True), int((~keep).sum())


def groupings(df: pd.DataFrame, boot: dict[str, Any], seed: int) -> dict[str, pd.DataFrame]:
    """Bootstrap means for every grouping the figures use."""
    args = (boot["draw"], boot["repeats"], boot["level"], seed)
    return {
        "by_gap": grouped(df, ["model", "gap"], "agreement", *args),  # Fig. 4
        "by_gap_b2": grouped(df[df["both_b2"]], ["model", "gap"], "agreement", *args),
        "by_pref_pair": grouped(df, ["model", "pref_pair", "gap"], "agreement", *args),  # Fig. 6
        "by_pref_pair_contentiousness": grouped(df, ["model", "pref_pair", "contentiousness"], "agreement", *args),
        "by_pref_pair_contentiousness_b2": grouped(
            df[df["both_b2"]], ["model", "pref_pair", "contentiousness"], "agreement", *args
        ),  # Fig. 7
        "by_open_sum": grouped(df, ["model", "open_sum"], "agreement", *args),  # Fig. 8a
        "by_open_pair_1_5": grouped(df[df["pref_pair"] == "1-5"], ["model", "open_pair"], "agreement", *args),
    }


def openness_vs_baseline(by_open_pair: pd.DataFrame) -> pd.DataFrame:
    """Fig. 8b: mean agreement of each openness pairing minus that of the (0, 0) baseline."""
    out = []
    for _model, g in by_open_pair.groupby("model"):
        base = g.loc[g["open_pair"] == "0-0", "mean"]
        if len(base):
            out.append(g.assign(diff_from_0_0=g["mean"] - float(base.iloc[0])))
    return pd.concat(out, ignore_index=True) if out else by_open_pair.assign(diff_from_0_0=np.nan)


PANELS = (
    ("linear shift", "linear", False),
    ("sigmoid shift", "sigmoid", False),
    ("B = 2, linear shift", "linear", True),
)


def models_of(profiles: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    """Every agent model the inputs name (a model keeps its rows even when it has no data left)."""
    return sorted(set(profiles["model"]) | set(pairs["model"]))


def design_of(
    model: str, conversations: pd.DataFrame, pairs: pd.DataFrame, utterances: pd.DataFrame | None
) -> dict[str, Any]:
    """What our run did for one agent model, read from its data (for vs_paper's design differences):
    its judge(s), the most statements one agent made in a conversation, the number of topics."""
    out: dict[str, Any] = {"agent model": model}
    judges = sorted(set(conversations.loc[conversations["model"] == model, "judge_model"].dropna()))
    if judges:
        out["judge model"] = judges
    if utterances is not None and len(utterances):
        own = utterances[(utterances["model"] == model) & (utterances["turn"] > 0)]
        if len(own):
            out["statements per agent"] = int(own.groupby(["conversation_id", "speaker"]).size().max())
    topics = pairs.loc[pairs["model"] == model, "topic"].nunique()
    if topics:
        out["topics"] = int(topics)
    return out


def descriptive_tables(
    df: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    bleu: pd.DataFrame,
    finals: pd.DataFrame,
    threshold: float | None,
    models: list[str],
) -> dict[str, pd.DataFrame]:
    """The tables of the paper's numbers outside Tables 3 and 4 (socsim.coherence.analysis.descriptive)."""
    by_c = {
        "all": tables["bootstrap_by_pref_pair_contentiousness"],
        "B = 2": tables["bootstrap_by_pref_pair_contentiousness_b2"],
    }
    return {
        "anchors": descriptive.anchors(df, models),
        "contentiousness_vs_neutral": descriptive.contentiousness_vs_neutral(by_c),
        "self_bleu_histogram": descriptive.self_bleu_histogram(bleu, threshold, models),
        "final_judgments": finals,
    }
