"""Statistics of the coherence study (paper 001, sections 3.3 and 4). Runs on any Parquet files of
the documented schemas (agents, profiles, pairs, judgments; utterances optional for Self-BLEU,
the judge's calibration answers optional for its calibration check).

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
6. Among (1-5) preference pairs, the lowest openness pairing (lowest O1 + O2, e.g. (0, 0)) should
   agree less than the other openness pairings. The paper compares it with every other pairing
   (one-sided Mann-Whitney U, lowest smaller, Bonferroni) without saying how many must be
   significant. `coherence.test6_rule`:
   - `pooled` (default): one one-sided Mann-Whitney U of the lowest pairing's scores against the
     scores of all other (1-5) pairings together: pass if p < alpha. Agents whose agreement rises
     with openness pass it; agents whose least open pairs agree as much as or more than the rest
     fail it.
   - `strict`: pass only if every Bonferroni-corrected comparison is significant. Coherent agents
     whose agreement rises smoothly with openness fail it, because neighbouring pairings ((0, 0)
     against (0, 1)) barely differ.
   Either way the detail column counts the significant Bonferroni comparisons and the pairings
   whose mean lies above the lowest one's (the paper: 6 of 28).

Tests 3, 4 and 6 also report `significant` of `comparisons` (Bonferroni-corrected p < alpha).

A test says "degenerate input: <why>" (socsim.stats.degeneracy) instead of pass / fail when its
inputs carry no information (this comes first, even when no conversation is left): one preference value
for >= 90% of a model's parsed preferences
(Tests 1-4, 6, Table 3), one openness value for >= 90% (Tests 5, 6), one final judge score for
>= 90% of the conversations or a judge that misjudges its own calibration examples (every test,
Table 3), constant gaps or openness sums, or fewer cases than the test needs (MIN_CORRELATION
conversations for a correlation, MIN_GROUP per compared group). Otherwise a model without a
single usable conversation has every test "n/a" with the reason (no judged conversation, all
removed by the Self-BLEU filter), and so has a test whose groups are absent by design (one topic:
no second contentiousness level).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from socsim.stats import degeneracy as dg
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.multitest import bonferroni
from socsim.stats.text import self_bleu

SCORES = np.arange(1, 6)
MIN_CORRELATION = 10  # conversations a Pearson test (1, 5) needs
MIN_GROUP = 5  # values per compared group a Mann-Whitney U or KS comparison needs
TEST_NAMES = {
    1: "Increasing preference gap decreases agreement",
    2: "Agreement amplifies, disagreement dampens",
    3: "Shared sentiment, divergent speech destinations",
    4: "Topic contentiousness trumps preference",
    5: "Increasing openness, increasing agreement",
    6: "High preference gap and low openness, too strong agreement",
}
TEST_COLUMNS = ["test", "name", "statistic", "p", "result", "raw_result", "significant", "comparisons", "detail"]
TEST6_RULES = ("pooled", "strict")
# The pairing columns of pairs.parquet (the rest is the episode: question, system prompts, seed).
PAIRING = ["conversation_id", "model", "topic", "agent1_id", "agent2_id", "profile1", "profile2", "opener"]
DEFAULT_STEEPNESS = 2.0


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
    + ["note"]
)


def suppression(
    df: pd.DataFrame, shift: str, boot: dict[str, Any], seed: int, steepness: float = DEFAULT_STEEPNESS
) -> pd.DataFrame:
    """Observed vs expected mean agreement per gap (Table 3 / Fig. 5): difference and ratio, with
    bootstrap intervals for both (expected ones drawn from the expected distribution). Without
    gap-0 pairs the expected distributions are undefined: one row per gap, n/a, with the reason."""
    gap0 = df.loc[df["gap"] == 0, "agreement"]
    if len(gap0) == 0:
        return pd.DataFrame(
            [
                {
                    "gap": g,
                    "shift": shift,
                    "n": int((df["gap"] == g).sum()),
                    "note": "n/a: no gap-0 pairs, so no expected distribution",
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
            }
        )
    return pd.DataFrame(rows, columns=SUPPRESSION_COLUMNS)


def _mwu(a: npt.ArrayLike, b: npt.ArrayLike, alternative: str) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    return float(sps.mannwhitneyu(a, b, alternative=alternative).pvalue)


def input_flags(
    profiles: pd.DataFrame, conversations: pd.DataFrame, calibration: pd.DataFrame | None, model: str
) -> dict[str, list[dg.Flag]]:
    """Degeneracy of one agent model's inputs: its parsed preferences and openness scores, the
    final judge scores of its conversations (before the Self-BLEU filter) and the calibration of
    the judge(s) that scored them."""
    prof = profiles[profiles["model"] == model]
    out = {
        "preferences": dg.collect(
            dg.one_value(prof.loc[prof["preference_ok"].astype(bool), "preference"], f"coherence preferences ({model})")
        )
        if len(prof)
        else [],
        "openness": dg.collect(
            dg.one_value(prof.loc[prof["openness_ok"].astype(bool), "openness"], f"coherence openness ({model})")
        )
        if len(prof)
        else [],
        "scores": [],
        "calibration": [],
    }
    conv = conversations[conversations["model"] == model]
    if len(conv):
        out["scores"] = dg.collect(dg.one_value(conv["agreement"], f"coherence final judge scores ({model})"))
        if calibration is not None:
            for judge in sorted(conv["judge_model"].unique()):
                cal = calibration[calibration["judge_model"] == judge].sort_values("example")
                if len(cal):
                    answered = [
                        None if (not ok or pd.isna(s)) else float(s) for s, ok in zip(cal["score"], cal["parse_ok"])
                    ]
                    out["calibration"] += dg.collect(
                        dg.miscalibrated(cal["reference"].tolist(), answered, f"coherence judge calibration ({judge})")
                    )
    return out


def flags_per_test(flags: dict[str, list[dg.Flag]]) -> dict[int, list[dg.Flag]]:
    """Which inputs each test depends on (the outcome, agreement, for all of them)."""
    judged = flags["scores"] + flags["calibration"]
    pref, open_ = flags["preferences"], flags["openness"]
    return {
        1: pref + judged,
        2: pref + judged,
        3: pref + judged,
        4: pref + judged,
        5: open_ + judged,
        6: pref + open_ + judged,
    }


def six_tests(
    df: pd.DataFrame,
    alpha: float,
    test6_rule: str = "pooled",
    flags: dict[int, list[dg.Flag]] | None = None,
    empty_reason: str | None = None,
    scope: str = "",
) -> pd.DataFrame:
    """The six tests on one model's conversation table. `flags`: degeneracy flags of the inputs
    each test depends on; `empty_reason`: why a model without conversations has none."""
    if test6_rule not in TEST6_RULES:
        raise ValueError(f"unknown coherence.test6_rule {test6_rule!r} (one of {', '.join(TEST6_RULES)})")
    flags = flags or {}
    label = f" ({scope})" if scope else ""
    rows: list[dict[str, Any]] = []
    raised: list[dg.Flag] = []

    def add(
        test: int,
        statistic: float = np.nan,
        p: float = np.nan,
        passed: bool | None = None,
        detail: str = "",
        extra: Iterable[dg.Flag | None] = (),
        significant: float = np.nan,
        comparisons: float = np.nan,
    ) -> None:
        raw = "n/a" if passed is None else ("pass" if passed else "fail")
        found = dg.collect(flags.get(test, []), *extra)  # degenerate inputs first, even without data
        rows.append(
            {
                "test": test,
                "name": TEST_NAMES[test],
                "statistic": statistic,
                "p": p,
                "result": dg.verdict(found, raw),
                "raw_result": raw,
                "significant": significant,
                "comparisons": comparisons,
                "detail": detail,
            }
        )
        raised[:] = dg.collect(raised, found)

    def done() -> pd.DataFrame:
        out = pd.DataFrame(rows, columns=TEST_COLUMNS)
        out.attrs["flags"] = raised  # every degeneracy flag a test raised, for summary.json
        return out

    if empty_reason is not None or len(df) == 0:
        for t in TEST_NAMES:
            add(t, detail=empty_reason or "no conversations")
        return done()

    def correlation(test: int, x: str, unit: str) -> None:
        few = dg.too_few(len(df), MIN_CORRELATION, f"coherence test {test}{label}", "conversations")
        const = [
            dg.near_constant(df[x], f"coherence {unit}{label}"),
            dg.near_constant(df["agreement"], f"coherence final agreement{label}"),
        ]
        if few or any(const):
            add(
                test,
                detail=f"needs >= {MIN_CORRELATION} conversations with varied {unit} and scores",
                extra=[few, *const],
            )
            return
        r, p = sps.pearsonr(df[x], df["agreement"])
        add(test, r, p, bool((r < 0) if test == 1 else (r > 0)) and bool(p < alpha), f"n = {len(df)}")

    def few_groups(test: int, groups: dict[str, int]) -> list[dg.Flag | None]:
        return [
            dg.too_few(n, MIN_GROUP, f"coherence test {test}{label}, group {g}", "conversations")
            for g, n in groups.items()
        ]

    # 1. preference gap vs agreement
    correlation(1, "gap", "preference gaps")
    # 2. gap-4 scores vs inverted gap-0 scores
    g4, g0 = df.loc[df["gap"] == 4, "agreement"], df.loc[df["gap"] == 0, "agreement"]
    if len(g4) == 0 or len(g0) == 0:
        add(2, detail="needs gap-0 and gap-4 pairs")
    elif len(g4) < MIN_GROUP or len(g0) < MIN_GROUP:
        add(2, detail="too few gap-0 or gap-4 pairs", extra=few_groups(2, {"gap 0": len(g0), "gap 4": len(g4)}))
    else:
        ks = sps.ks_2samp(g4, 6 - g0)
        add(2, ks.statistic, ks.pvalue, bool(ks.pvalue >= alpha), f"n = {len(g0)} (gap 0), {len(g4)} (gap 4)")
    # 3. (1-1) against mixed pairs
    mixed = ("2-5", "3-5", "4-5")
    groups = {m: df.loc[df["pref_pair"] == m, "agreement"] for m in ("1-1",) + mixed}
    if any(len(g) == 0 for g in groups.values()):
        add(
            3,
            detail="needs 1-1, 2-5, 3-5, 4-5 pairs; missing: " + ", ".join(m for m, g in groups.items() if len(g) == 0),
        )
    elif any(len(g) < MIN_GROUP for g in groups.values()):
        add(3, detail="too few pairs", extra=few_groups(3, {m: len(g) for m, g in groups.items()}))
    else:
        adj = bonferroni([_mwu(groups["1-1"], groups[m], "greater") for m in mixed])
        add(
            3,
            np.nan,
            float(adj.max()),
            bool((adj < alpha).all()),
            "corrected p: " + ", ".join(f"{m} {q:.3g}" for m, q in zip(mixed, adj)),
            significant=int((adj < alpha).sum()),
            comparisons=len(adj),
        )
    # 4. contentiousness within preference pairs
    ps, possible = [], 0
    for _pair, g in df.groupby("pref_pair"):
        for c1, c2 in itertools.combinations(sorted(g["contentiousness"].unique()), 2):
            possible += 1
            a, b = g.loc[g["contentiousness"] == c1, "agreement"], g.loc[g["contentiousness"] == c2, "agreement"]
            if len(a) >= MIN_GROUP and len(b) >= MIN_GROUP:
                ps.append(_mwu(a, b, "two-sided"))
    if possible == 0:
        add(4, detail="needs a preference pair at two contentiousness levels (topics of two levels)")
    elif not ps:
        add(
            4,
            detail=f"none of {possible} comparisons has {MIN_GROUP} conversations on both sides",
            extra=[
                dg.Flag(
                    f"coherence test 4{label}",
                    f"none of {possible} preference pair x contentiousness "
                    f"comparisons has {MIN_GROUP} conversations on both sides",
                )
            ],
        )
    else:
        adj = bonferroni(ps)
        k = int((adj < alpha).sum())
        add(
            4,
            np.nan,
            float(adj.min()),
            bool(k == 0),
            f"{k} of {len(ps)} comparisons significant ({possible - len(ps)} skipped: < {MIN_GROUP} a side)",
            significant=k,
            comparisons=len(ps),
        )
    # 5. openness vs agreement
    correlation(5, "open_sum", "openness sums")
    # 6. lowest openness among (1-5) pairs
    far = df[df["pref_pair"] == "1-5"]
    if len(far) == 0:
        add(6, detail="needs (1-5) pairs")
        return done()
    lowest = far.loc[far["open_sum"] == far["open_sum"].min(), "open_pair"].min()
    base = far.loc[far["open_pair"] == lowest, "agreement"]
    others = far[far["open_pair"] != lowest]
    if len(others) == 0:
        add(6, detail=f"needs (1-5) pairs at two openness pairings (only {lowest})")
        return done()
    if len(base) < MIN_GROUP or len(others) < MIN_GROUP:
        add(
            6,
            detail="too few (1-5) pairs",
            extra=few_groups(6, {f"lowest openness {lowest}": len(base), "other openness pairings": len(others)}),
        )
        return done()
    per = {pair: g["agreement"] for pair, g in others.groupby("open_pair")}
    above = sum(float(g.mean()) > float(base.mean()) for g in per.values())
    comparable = {pair: g for pair, g in per.items() if len(g) >= MIN_GROUP}
    adj = bonferroni([_mwu(base, g, "less") for g in comparable.values()])
    k = int((adj < alpha).sum())
    detail = (
        f"lowest {lowest} (n = {len(base)}); {k} of {len(adj)} Bonferroni comparisons significant "
        f"({len(per) - len(comparable)} pairings skipped: < {MIN_GROUP}); {above} of {len(per)} pairings "
        f"above the lowest"
    )
    if test6_rule == "pooled":
        p = _mwu(base, others["agreement"], "less")
        add(
            6,
            np.nan,
            p,
            bool(p < alpha),
            f"pooled rule: lowest vs the other {len(others)} (1-5) pairs; " + detail,
            significant=k,
            comparisons=len(adj),
        )
    elif len(adj) == 0:
        add(
            6,
            detail="strict rule: " + detail,
            significant=0,
            comparisons=0,
            extra=[dg.Flag(f"coherence test 6{label}", f"no openness pairing has {MIN_GROUP} (1-5) pairs")],
        )
    else:
        add(
            6,
            np.nan,
            float(adj.max()),
            bool(k == len(adj)),
            "strict rule: " + detail,
            significant=k,
            comparisons=len(adj),
        )
    return done()


def self_bleu_table(utterances: pd.DataFrame) -> pd.DataFrame:
    """Self-BLEU of each agent's statements within each conversation, averaged per agent."""
    own = utterances[utterances["turn"] > 0]  # the opening question is the topic's, not the agent's
    if own.empty:
        return pd.DataFrame(columns=["agent_id", "self_bleu"])
    per_conv = (
        own.groupby(["conversation_id", "agent_id"])["text"]
        .apply(lambda s: self_bleu(list(s)))
        .rename("self_bleu")
        .reset_index()
    )
    return per_conv.groupby("agent_id", as_index=False)["self_bleu"].mean()


def filter_repetitive(df: pd.DataFrame, agent_bleu: pd.DataFrame, threshold: float | None) -> tuple[pd.DataFrame, int]:
    if threshold is None or agent_bleu.empty:
        return df, 0
    bad = set(agent_bleu.loc[agent_bleu["self_bleu"] > threshold, "agent_id"])
    keep = ~(df["agent1_id"].isin(bad) | df["agent2_id"].isin(bad))
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


def analyse(
    agents: pd.DataFrame,
    profiles: pd.DataFrame,
    pairs: pd.DataFrame,
    judgments: pd.DataFrame,
    utterances: pd.DataFrame | None,
    calibration: pd.DataFrame | None,
    cp: dict[str, Any],
    seed: int,
) -> dict[str, Any]:
    """Every table of the analysis from data frames of the documented schemas (no model calls):
    {"tables": name -> DataFrame, "summary": dict, "flags": model -> input flags}."""
    all_conv = conversation_table(agents, profiles, pairs, judgments)
    bleu = self_bleu_table(utterances) if utterances is not None else pd.DataFrame(columns=["agent_id", "self_bleu"])
    df, removed = filter_repetitive(all_conv, bleu, cp["self_bleu_threshold"])
    boot, steep = cp["bootstrap"], cp["sigmoid_steepness"]
    tables = {f"bootstrap_{k}": v for k, v in groupings(df, boot, seed).items()}
    models = models_of(profiles, pairs)
    supp: list[pd.DataFrame] = []
    tests: list[pd.DataFrame] = []
    flags: dict[str, dict[str, list[dg.Flag]]] = {}
    raised: list[dg.Flag] = []
    notes: dict[str, str | None] = {}
    for model in models:
        g = df[df["model"] == model]
        n_pairs, n_judged = int((pairs["model"] == model).sum()), int((all_conv["model"] == model).sum())
        if n_pairs == 0:
            reason = "no agent pairs (no two agents with parsed profiles)"
        elif n_judged == 0:
            reason = f"none of {n_pairs} conversations has a parsed final judgment and usable profiles"
        elif len(g) == 0:
            reason = (
                f"all {n_judged} conversations removed by the Self-BLEU filter (threshold {cp['self_bleu_threshold']})"
            )
        else:
            reason = None
        notes[model] = reason
        flags[model] = input_flags(profiles, all_conv, calibration, model)
        per_test = flags_per_test(flags[model])
        t = six_tests(g, cp["alpha"], cp["test6_rule"], per_test, reason, scope=model)
        raised = dg.collect(raised, t.attrs.get("flags", []))
        tests.append(t.assign(model=model))
        table3 = dg.collect(flags[model]["preferences"], flags[model]["scores"], flags[model]["calibration"])
        raised = dg.collect(raised, table3)
        for panel, shift, b2 in PANELS:
            data = g[g["both_b2"]] if b2 else g
            part = suppression(data, shift, boot, seed, steep).assign(model=model, panel=panel)
            if table3 or reason:
                part["note"] = dg.verdict(table3, f"n/a: {reason}")
            supp.append(part)
    tables["suppression"] = (
        pd.concat(supp, ignore_index=True) if supp else pd.DataFrame(columns=SUPPRESSION_COLUMNS + ["model", "panel"])
    )
    tables["six_tests"] = (
        pd.concat(tests, ignore_index=True) if tests else pd.DataFrame(columns=TEST_COLUMNS + ["model"])
    )
    tables["openness_vs_baseline"] = openness_vs_baseline(tables["bootstrap_by_open_pair_1_5"])
    tables["self_bleu"] = bleu
    tables["conversations"] = df
    removed_by_model = {m: int((all_conv["model"] == m).sum() - (df["model"] == m).sum()) for m in models}
    summary = {
        "conversations": int(len(df)),
        "removed_by_self_bleu": removed,
        "removed_by_self_bleu_by_model": removed_by_model,
        "self_bleu_threshold": cp["self_bleu_threshold"],
        "test6_rule": cp["test6_rule"],
        "sigmoid_steepness": steep,
        "models": models,
        "tests_passed": {
            m: sorted(int(t) for t in g.loc[g["result"] == "pass", "test"])
            for m, g in tables["six_tests"].groupby("model")
        },
        "no_data": {m: r for m, r in notes.items() if r},
        "degeneracy_flags": dg.as_json(raised),
        "degenerate": bool(raised),
    }
    return {"tables": tables, "summary": summary, "flags": flags}
