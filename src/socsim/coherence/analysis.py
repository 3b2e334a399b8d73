"""Statistics of the coherence study (paper 001, sections 3.3 and 4). Runs on any Parquet files of
the documented schemas (agents, profiles, pairs, judgments; utterances optional for Self-BLEU,
the judge's calibration answers optional for its calibration check). `report` returns the whole
analysis as a socsim.io.report.Report (tables, findings, flags, vs_paper rows).

Every verdict follows the one rule (socsim.stats.verdict, alpha = coherence.alpha, .01 by default):
a test passes only when it rejects in the claimed direction with at least the minimum n (MIN_CORRELATION
conversations and agents for a correlation, MIN_GROUP per compared group); it fails only when it rejects
in the opposite direction (or, for a "no difference" test, when it finds a difference); otherwise it is
"inconclusive (...)" with the n and what it needs. A test whose passing means "no difference found"
(Tests 2 and 4) passes only when its power at the observed n is at least 0.8.

The unit of each test is what its observations nest in (issue 34; socsim.coherence.units): the pairing
reuses agents and nests conversations in topics, so Tests 1 and 5 are judged with the agent as unit and
Test 4 with the topic as unit. The paper's p, with the conversation as unit, stays beside them
(`p_paper`, `beside`) without a verdict of its own. The six tests of section 4.3:

1. Pearson r between preference gap and final agreement: pass if r < 0 and the permutation p of the
   slope's dyadic-robust t, preferences permuted across the agents of each topic, is < alpha
   (units.agent_permutation).
2. Kolmogorov-Smirnov between the scores at gap 4 and the inverted (6 - s) scores at gap 0: the
   agents are coherent if the two are the same distribution, so it passes only if p >= alpha AND the
   KS test had power >= 0.8 at the observed n to find the paper's suppression (`ks_power`, simulated:
   gap 0 drawn from the paper's Table 3, gap 4 from the mixture of that and its inverse with the
   paper's observed gap-4 mean 3.6) AND to find no gap effect (gap 4 drawn from the observed gap-0
   distribution: on scores symmetric about 3 the two are the same, so such noise cannot pass) AND
   the means are equivalent within TEST2_MARGIN (units.test2_conditions). A t test's power
   (socsim.stats.verdict.power_t) would overstate the KS test's on 5-point scores (0.99 against about
   0.3 at n = 10 per gap), so it is not used.
3. (1-1) pairs against each mixed pair (2-5, 3-5, 4-5), one-sided Mann-Whitney U ((1-1) greater),
   Bonferroni over the three: pass if every corrected p < alpha.
4. Contentiousness should not matter once preferences are fixed: the statistic is the smallest
   Bonferroni-corrected two-sided Mann-Whitney U p over every preference pair and pair of
   contentiousness levels, its p from permuting the contentiousness labels over the topics (every
   assignment; units.topic_permutation). It fails if p < alpha; it passes if p >= alpha AND the
   topic-level test had power >= 0.8 to find a contentiousness effect of CONTENTIOUSNESS_D SD
   (simulated: each (pair, topic) cell from its own scores, the levels moved on a latent normal
   scale); with too few topics to reach alpha it is inconclusive and says so.
5. Pearson r between O1 + O2 and final agreement: pass if r > 0 and the permutation p (openness
   permuted across the agents of each topic, as Test 1) is < alpha.
6. Among (1-5) preference pairs, the lowest openness pairing (lowest O1 + O2, e.g. (0, 0)) should
   agree less than the other openness pairings. The paper's text does not say whether every or any
   Bonferroni-corrected comparison must be significant, so no rule is the paper's.
   `coherence.test6_rule`:
   - `strict` (default, our reading of the text): one one-sided Mann-Whitney U (lowest smaller)
     against each other pairing, Bonferroni over them; pass only if every corrected comparison is
     significant. Section 4.3: "whether the agreement score distribution for the lowest Openness
     pairing ... is smaller than the agreement scores for other pairings ... we compute each
     comparison separately, then perform a Bonferroni correction on a Mann-Whitney U test", and
     Finding #6: "all other pairings should yield higher agreement than this baseline". Pairings
     with fewer than MIN_GROUP conversations are left out (counted in the detail). Coherent agents
     whose agreement rises smoothly with openness rarely pass it, because neighbouring pairings
     ((0, 0) against (0, 1)) barely differ.
   - `pooled` (ours, not a reading of the text): one one-sided Mann-Whitney U of the lowest
     pairing's scores against the scores of all other (1-5) pairings together: pass if p < alpha.
   The reading "any Bonferroni-corrected comparison significant" stands beside either (`beside`),
   without a verdict of its own. The detail column counts the significant Bonferroni comparisons and
   the pairings whose mean lies above the lowest one's (the paper: 6 of 28); the `rule` column of
   Test 6 and vs_paper's Test 6 rows say which rule ran, a design difference from the paper either way.

For the one-sided U tests (3, 6) a comparison whose estimate (U / (n1 n2) - 1/2) lies against the
claim is judged on the one-sided p in that direction, so "fail" means significant the other way.
Tests 3, 4 and 6 also report `significant` of `comparisons` (Bonferroni-corrected p < alpha; for Test
4 the paper's conversation-level comparisons).

Disagreement suppression (Table 3, section 4.1, "observed mean above the expected one at every gap
1-4"): per gap, observed minus expected mean, where the expected mean is a linear function of the
gap-0 mean (6 w + (1 - 2 w) mean_0 for shift weight w), tested one-sided by a t over the
conversations at that gap and at gap 0 (so the expected mean's own uncertainty counts) whose p is
simulated under no suppression (`suppression_null_p`), with at least MIN_SUPPRESSION conversations a
side; the claim holds when it holds at every gap 1-4 (socsim.stats.verdict.all_of). Finding 3's
directional claim, (1-1) pairs agree less than (5-5) pairs, is a one-sided Mann-Whitney U
(`finding3_verdict`, on socsim.coherence.descriptive.anchors).

A test says "degenerate input: <why>" (socsim.stats.degeneracy) instead of a verdict when its
inputs carry no information (this comes first, even when no conversation is left): one preference
value for >= 90% of a model's parsed preferences (Tests 1-4, 6, Table 3), one openness value for
>= 90% (Tests 5, 6), one final judge score for >= 90% of the conversations, a judge that misjudges
its held-out calibration examples, or final judgments that did not parse for >= UNPARSED_SHARE of
the judged conversations (every test, Table 3), or constant gaps, openness sums or scores. Fewer
unparsed final judgments are counted (`final_judgments`) and noted under the tables. Too few
conversations is not degeneracy: it is "inconclusive (n = ..., needs ...)". A model without a single
usable conversation has every test "n/a" with the reason (no judged conversation, all removed by the
Self-BLEU filter), and so has a test whose groups are absent by design (one topic: no second
contentiousness level).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from socsim.coherence import descriptive, units
from socsim.coherence.units import CONTENTIOUSNESS_D, TEST2_MARGIN
from socsim.coherence.units import ks_power as ks_power  # re-exported: Test 2's power
from socsim.io.report import Finding, Report, Table
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.multitest import bonferroni
from socsim.stats.permutation import permutation_p
from socsim.stats.text import self_bleu
from socsim.stats.verdict import Verdict

FloatArray = npt.NDArray[np.float64]

SCORES = np.arange(1, 6)
MIN_CORRELATION = 10  # conversations a Pearson test (1, 5) needs, and agents its permutation needs
MIN_GROUP = 5  # values per compared group a Mann-Whitney U or KS comparison needs
MIN_SUPPRESSION = 30  # conversations a side (the gap and gap 0) the per-gap suppression test needs
SUPPRESSION_NULL_REPEATS = 4999  # data sets simulated under "no suppression" per gap
UNPARSED_SHARE = 0.1  # final judgments that did not parse: from this share on, a flag
MIN_TOPICS = 2  # topics the topic-level Test 4 needs (it also needs a smallest attainable p < alpha)
TEST_NAMES = {
    1: "Increasing preference gap decreases agreement",
    2: "Agreement amplifies, disagreement dampens",
    3: "Shared sentiment, divergent speech destinations",
    4: "Topic contentiousness trumps preference",
    5: "Increasing openness, increasing agreement",
    6: "High preference gap and low openness, too strong agreement",
}
TEST_COLUMNS = [
    "test",
    "name",
    "statistic",
    "p",
    "result",
    "raw_result",
    "significant",
    "comparisons",
    "detail",
    "rule",
    "n",
    "unit",
    "power",
    "reason",
    "flags",
    "p_paper",
    "beside",
]
# What each test's statistic is, the test that carries it and its unit (for findings).
TEST_SPECS = {
    1: (
        "Pearson r, preference gap vs final agreement",
        "Pearson r; two-sided permutation p, preferences permuted across the agents of each topic "
        "(agents as unit); r < 0 claimed",
    ),
    2: (
        "KS D, gap-4 scores vs inverted gap-0 scores",
        "two-sample KS; no difference claimed (power at the paper's suppression and at no gap effect, "
        f"means equivalent within {TEST2_MARGIN:g})",
    ),
    3: (
        "largest Bonferroni p, (1-1) vs 2-5, 3-5, 4-5",
        "one-sided Mann-Whitney U per mixed pair, Bonferroni, all needed",
    ),
    4: (
        "smallest Bonferroni p over preference pair x contentiousness comparisons",
        "permutation of the contentiousness labels over the topics (topics as unit), statistic the smallest "
        "Bonferroni two-sided Mann-Whitney U p; no contentiousness effect claimed (simulated power at "
        "CONTENTIOUSNESS_D)",
    ),
    5: (
        "Pearson r, O1 + O2 vs final agreement",
        "Pearson r; two-sided permutation p, openness permuted across the agents of each topic "
        "(agents as unit); r > 0 claimed",
    ),
    6: (
        "largest Bonferroni p, lowest openness pairing vs each other (1-5) pairing",
        "one-sided Mann-Whitney U per other openness pairing, Bonferroni, all needed (strict: our reading "
        "of the paper's text)",
    ),
}
# Test 6 under the pooled rule (coherence.test6_rule: pooled), ours.
TEST6_POOLED_SPEC = (
    "p, lowest openness pairing vs all other (1-5) pairs pooled",
    "one-sided Mann-Whitney U against the other pairings pooled (pooled rule: ours, not a reading of the paper's text)",
)
TEST6_RULES = ("strict", "pooled")  # the default first
TEST6_RULE_LABELS = {
    "strict": "strict, our reading of the paper's text: every Bonferroni-corrected comparison with another "
    "pairing significant",
    "pooled": "pooled, ours (not a reading of the paper's text): the lowest pairing against all other (1-5) "
    "pairs together",
}
TEST6_ANY_LABEL = "any, another reading of the paper's text: any Bonferroni-corrected comparison significant"


def spec_of_test(test: int, test6_rule: str = "strict") -> tuple[str, str]:
    """(statistic, test) of a test for findings; Test 6's depend on the rule that ran."""
    return TEST6_POOLED_SPEC if test == 6 and test6_rule == "pooled" else TEST_SPECS[test]


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


def suppression_verdict(row: pd.Series, alpha: float, flags: Sequence[dg.Flag] = ()) -> Verdict:
    """ "Disagreement suppressed at this gap" (observed above expected), by the one rule: the
    one-sided Welch-type t over the conversations at the gap and at gap 0 (`suppression_t`), its p
    simulated under "no suppression" (`suppression_null_p`), each side at least MIN_SUPPRESSION."""
    n, n0 = int(row["n"]), int(row["n_gap0"]) if pd.notna(row["n_gap0"]) else 0
    if flags:
        return Verdict(None, flags[0].message)
    if n0 < MIN_SUPPRESSION:
        return vd.effect(None, None, n0, MIN_SUPPRESSION, "conversations at gap 0", alpha=alpha)
    diff = row["difference"]
    p = row["p_null_greater"] if pd.notna(diff) and diff > 0 else row["p_null_less"]
    unit = f"conversations at gap {int(row['gap'])} ({n0} at gap 0)"
    return vd.effect(
        None if pd.isna(p) else float(p),
        None if pd.isna(diff) else float(diff),
        n,
        MIN_SUPPRESSION,
        unit,
        +1,
        alpha=alpha,
    )


def with_verdicts(
    part: pd.DataFrame, alpha: float, flags: Sequence[dg.Flag]
) -> tuple[pd.DataFrame, dict[int, Verdict]]:
    """A suppression table with each gap's verdict (gaps 1-4; gap 0 is the reference), whether it
    holds, and the flags of its inputs; and the verdicts by gap."""
    vs = {int(r["gap"]): suppression_verdict(r, alpha, flags) for _, r in part.iterrows() if int(r["gap"]) > 0}
    table = part.assign(
        verdict=[vs[g].label if g in vs else "" for g in part["gap"]],
        holds=pd.array([vs[g].holds if g in vs else None for g in part["gap"]], dtype="boolean"),
        flags="; ".join(f.message for f in flags),
    )
    return table, vs


def _mwu(a: npt.ArrayLike, b: npt.ArrayLike, alternative: str) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    return float(sps.mannwhitneyu(a, b, alternative=alternative).pvalue)


def _directed_mwu(a: npt.ArrayLike, b: npt.ArrayLike, direction: int) -> tuple[float, float]:
    """(estimate, p) of a one-sided U test of a against b: the estimate is U / (n_a n_b) - 1/2 (> 0:
    a tends to be larger); p is one-sided in the claimed `direction` when the estimate agrees with
    it, else one-sided in the estimate's direction (so that a significant p means "the other way")."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    est = float(sps.mannwhitneyu(a, b).statistic) / (len(a) * len(b)) - 0.5
    along = est * direction > 0
    claimed = "greater" if direction > 0 else "less"
    other = "less" if direction > 0 else "greater"
    return est, _mwu(a, b, claimed if along else other)


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


def shifted(p: npt.ArrayLike, d: float) -> npt.NDArray[np.float64] | None:
    """The 5-point distribution `p` moved on a latent normal scale (ordered probit: its cumulative
    probabilities are the latent thresholds) until its mean has moved by `d` of its SD (d > 0 up,
    d < 0 down). Scores `p` never gives stay impossible, so the shift cannot leave the observed
    range; None where it would have to (or `p` has no spread)."""
    q = np.asarray(p, float) / float(np.sum(p))
    delta = units.latent_shift(q, d)
    return None if delta is None else units.moved(q, delta)


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
    judged = flags["scores"] + flags["calibration"] + flags.get("judgments", [])
    pref, open_ = flags["preferences"], flags["openness"]
    return {
        1: pref + judged,
        2: pref + judged,
        3: pref + judged,
        4: pref + judged,
        5: open_ + judged,
        6: pref + open_ + judged,
    }


def unparsed_flags(counts: pd.Series, model: str) -> list[dg.Flag]:
    """A flag when at least UNPARSED_SHARE of a model's judged conversations have a final judgment
    that did not parse (`counts`: its row of descriptive.final_judgments); fewer are counted only."""
    judged, unparsed = int(counts["judged"]), int(counts["unparsed"])
    if not judged or unparsed / judged < UNPARSED_SHARE:
        return []
    reason = (
        f"{unparsed} of {judged} final judgments did not parse ({unparsed / judged:.0%}, threshold "
        f"{UNPARSED_SHARE:.0%}); their conversations take no part in any test"
    )
    return [dg.Flag(f"coherence final judgments ({model})", reason)]


def unparsed_note(counts: pd.Series) -> str:
    """What a table's notes say about a model's conversations without a usable final judgment."""
    lost = int(counts["unparsed"]) + int(counts["empty_window"]) + int(counts["unjudged"])
    if not lost:
        return ""
    return (
        f"{counts['model']}: {lost} of {int(counts['conversations'])} conversations have no usable final "
        f"judgment ({int(counts['unparsed'])} did not parse, {int(counts['empty_window'])} judged an empty "
        f"window, {int(counts['unjudged'])} not judged) and take no part in any test"
    )


def finding3_verdict(row: pd.Series, alpha: float, flags: Sequence[dg.Flag] = ()) -> Verdict:
    """Finding 3's directional claim, (1-1) pairs agree less than (5-5) pairs: one-sided
    Mann-Whitney U over conversations (`row`: gap 0 of descriptive.anchors), MIN_GROUP a side."""
    if flags:
        return Verdict(None, flags[0].message)
    n = min(int(row["n_at_1"]), int(row["n_at_5"]))
    est = row["u_estimate"]
    p = row["p_less"] if pd.notna(est) and est < 0 else row["p_greater"]
    return vd.effect(
        None if pd.isna(p) else float(p),
        None if pd.isna(est) else float(est),
        n,
        MIN_GROUP,
        "conversations a side ((1-1), (5-5))",
        -1,
        alpha=alpha,
    )


@dataclass
class TestRow:
    """One test's outcome before its inputs' flags are applied (`six_tests` adds them). `verdict`
    None: the test does not apply (n/a, with `detail` saying why)."""

    verdict: Verdict | None
    statistic: float = np.nan
    p: float = np.nan
    detail: str = ""
    extra: tuple[dg.Flag | None, ...] = ()
    significant: float = np.nan
    comparisons: float = np.nan
    n: int | None = None
    unit: str = "conversations"
    power: float | None = None
    p_paper: float = np.nan  # the paper's p where our unit differs from the paper's (no verdict)
    beside: str = ""  # what stands beside the verdict without one of its own


def _raw(verdict: Verdict | None) -> str:
    if verdict is None:
        return "n/a"
    if verdict.holds is None:
        return verdict.label
    return "pass" if verdict.holds else "fail"


def correlation_test(df: pd.DataFrame, test: int, alpha: float, seed: int, permutations: int, label: str) -> TestRow:
    """Tests 1 and 5: Pearson r of the gap (1) or openness sum (5) with agreement, judged by the
    permutation p with the agent as unit (socsim.coherence.units); the paper's conversation-level p
    stands beside it."""
    x, what = ("gap", "preference") if test == 1 else ("open_sum", "openness")
    shown = "preference gaps" if test == 1 else "openness sums"
    const = (
        dg.near_constant(df[x], f"coherence {shown}{label}"),
        dg.near_constant(df["agreement"], f"coherence final agreement{label}"),
    )
    n = len(df)
    if n < MIN_CORRELATION or any(const):
        v = vd.effect(None, None, n, MIN_CORRELATION, "conversations", alpha=alpha)
        detail = f"needs >= {MIN_CORRELATION} conversations with varied {shown} and scores"
        return TestRow(v, detail=detail, extra=const, n=n)
    r_paper, p_paper = (float(v) for v in sps.pearsonr(df[x], df["agreement"]))
    at = units.agent_permutation(df, what, seed, permutations)
    direction = -1 if test == 1 else +1
    v = vd.effect(at.p, at.r, at.agents, MIN_CORRELATION, "agents", direction, alpha=alpha)
    unit = f"agents ({what} permuted across the agents of each topic)"
    detail = (
        f"n = {n} conversations, {at.agents} agents in {at.topics} topic(s); slope t (dyadic-robust) = "
        f"{at.t:.3g}, permutation p = {at.p:.3g} ({at.permutations} permutations, agents as unit)"
    )
    beside = f"the paper's p (conversations as unit, no verdict): {p_paper:.3g}"
    return TestRow(v, r_paper, at.p, detail, n=at.agents, unit=unit, p_paper=p_paper, beside=beside)


def test2(df: pd.DataFrame, alpha: float, alternative: tuple[FloatArray, FloatArray] | None) -> TestRow:
    """Test 2: KS of the gap-4 scores against the inverted gap-0 scores, a "no difference" claim:
    it passes only with KS p >= alpha, power >= 0.8 against the paper's suppression and against the
    data's own "no gap effect", and the means equivalent within TEST2_MARGIN (units.test2_conditions)."""
    g4, g0 = df.loc[df["gap"] == 4, "agreement"], df.loc[df["gap"] == 0, "agreement"]
    n = min(len(g0), len(g4))
    unit = f"conversations a side (gap 0: {len(g0)}, gap 4: {len(g4)})"
    if n < MIN_GROUP:
        detail = "needs gap-0 and gap-4 pairs" if n == 0 else "too few gap-0 or gap-4 pairs"
        return TestRow(vd.no_difference(None, None, n, MIN_GROUP, unit, alpha=alpha), detail=detail, n=n, unit=unit)
    with warnings.catch_warnings():  # ties: scipy's exact method falls back to the asymptotic one
        warnings.simplefilter("ignore", RuntimeWarning)
        ks = sps.ks_2samp(g4, 6 - g0)
    cond = units.test2_conditions(g4, g0, alpha, alternative)
    v = vd.no_difference(float(ks.pvalue), cond.power, n, MIN_GROUP, unit, alpha=alpha)
    eq = cond.equivalence
    interval = f"{eq.difference:+.2f}, {1 - 2 * alpha:.0%} interval [{eq.lo:+.2f}, {eq.hi:+.2f}]"
    if v.holds and not eq.p < alpha:
        v = Verdict(None, f"{v.reason}, but the means are not shown within +-{eq.margin:g}: {interval}")

    def shown(pw: float | None, what: str) -> str:
        return f"power to find {what}: " + ("unknown (no paper distributions)" if pw is None else f"{pw:.2f}")

    detail = "; ".join(
        [
            f"n = {len(g0)} (gap 0), {len(g4)} (gap 4)",
            shown(cond.power_paper, "the paper's suppression"),
            shown(cond.power_own, "no gap effect (gap 4 as the observed gap 0)"),
            f"gap-4 mean minus inverted gap-0 mean {interval} (equivalence margin +-{eq.margin:g}, TOST p = "
            f"{eq.p:.3g})",
        ]
    )
    return TestRow(v, float(ks.statistic), float(ks.pvalue), detail, n=n, unit=unit, power=cond.power)


def test3(df: pd.DataFrame, alpha: float) -> TestRow:
    """Test 3: (1-1) above each mixed pair (2-5, 3-5, 4-5), one-sided U, Bonferroni, all needed."""
    mixed = ("2-5", "3-5", "4-5")
    groups = {m: df.loc[df["pref_pair"] == m, "agreement"] for m in ("1-1",) + mixed}
    n = min(len(g) for g in groups.values())
    unit = "conversations in the smallest preference pair"
    if n < MIN_GROUP:
        missing = [m for m, g in groups.items() if len(g) == 0]
        detail = (
            "needs 1-1, 2-5, 3-5, 4-5 pairs; missing: " + ", ".join(missing)
            if missing
            else "too few pairs: " + ", ".join(f"{m} {len(g)}" for m, g in groups.items())
        )
        return TestRow(vd.effect(None, None, n, MIN_GROUP, unit, alpha=alpha), detail=detail, n=n, unit=unit)
    claimed = bonferroni([_mwu(groups["1-1"], groups[m], "greater") for m in mixed])
    directed = [_directed_mwu(groups["1-1"], groups[m], +1) for m in mixed]
    adj = bonferroni([p for _, p in directed])
    parts = [
        vd.effect(
            float(q),
            est,
            min(len(groups["1-1"]), len(groups[m])),
            MIN_GROUP,
            f"conversations (1-1 vs {m})",
            +1,
            alpha=alpha,
            family=len(mixed),  # q is Bonferroni-adjusted over the three comparisons
        )
        for m, (est, _), q in zip(mixed, directed, adj)
    ]
    detail = "corrected p: " + ", ".join(f"{m} {q:.3g}" for m, q in zip(mixed, claimed))
    sig = int((claimed < alpha).sum())
    return TestRow(
        vd.all_of(parts), p=float(claimed.max()), detail=detail, significant=sig, comparisons=3, n=n, unit=unit
    )


def _contentiousness_cells(df: pd.DataFrame) -> tuple[list[tuple[pd.Series, pd.Series]], int, int]:
    """Test 4's conversation-level comparisons with MIN_GROUP a side, how many there could be, and the
    largest smaller side of any."""
    cells: list[tuple[pd.Series, pd.Series]] = []
    possible, best = 0, 0
    for _pair, g in df.groupby("pref_pair"):
        for c1, c2 in itertools.combinations(sorted(g["contentiousness"].unique()), 2):
            possible += 1
            a, b = g.loc[g["contentiousness"] == c1, "agreement"], g.loc[g["contentiousness"] == c2, "agreement"]
            best = max(best, min(len(a), len(b)))
            if len(a) >= MIN_GROUP and len(b) >= MIN_GROUP:
                cells.append((a, b))
    return cells, possible, best


def test4(df: pd.DataFrame, alpha: float, seed: int, power_repeats: int) -> TestRow:
    """Test 4, a "no contentiousness effect" claim judged with the topic as unit
    (units.topic_permutation); the paper's conversation-level Bonferroni comparisons beside it."""
    cells, possible, best = _contentiousness_cells(df)
    if possible == 0:
        return TestRow(None, detail="needs a preference pair at two contentiousness levels (topics of two levels)")
    if not cells:
        unit = "conversations a side (largest cell pair)"
        v = vd.no_difference(None, None, best, MIN_GROUP, unit, alpha=alpha)
        return TestRow(
            v, detail=f"none of {possible} comparisons has {MIN_GROUP} conversations on both sides", n=best, unit=unit
        )
    adj = bonferroni([_mwu(a, b, "two-sided") for a, b in cells])
    k = int((adj < alpha).sum())
    paper = (
        f"the paper's (conversations as unit, no verdict): {k} of {len(cells)} comparisons significant, "
        f"smallest Bonferroni p {float(adj.min()):.3g} ({possible - len(cells)} skipped: < {MIN_GROUP} a side)"
    )
    data = df if "topic" in df.columns else df.assign(topic="C" + df["contentiousness"].astype(str))
    tt = units.topic_permutation(data, alpha, MIN_GROUP, seed, power_repeats)
    levels = ", ".join(f"{n} at C = {lv}" for lv, n in tt.per_level.items())
    unit = f"topics ({levels})"
    if tt.p_min >= alpha:
        v = Verdict(
            None,
            f"the topic-level test cannot reject at {alpha:g} with {tt.topics} topics ({levels}): its smallest "
            f"p is {tt.p_min:.3g}",
        )
    else:
        v = vd.no_difference(tt.p, tt.power, tt.topics, MIN_TOPICS, "topics", alpha=alpha)
    enumerated = (
        f"every assignment, {tt.assignments} distinct groupings" if tt.exact else f"{tt.assignments} random assignments"
    )
    detail = (
        f"does contentiousness explain more than the topics' own differences? Contentiousness labels permuted "
        f"over {tt.topics} topics ({levels}), {enumerated}: p = {tt.p:.3g} (smallest attainable "
        f"{tt.p_min:.3g}); power to find d = {CONTENTIOUSNESS_D:g}: "
        + ("not needed (rejected)" if tt.power is None else f"{tt.power:.2f}")
    )
    return TestRow(
        v,
        tt.statistic,
        tt.p,
        detail,
        significant=k,
        comparisons=len(cells),
        n=tt.topics,
        unit=unit,
        power=tt.power,
        p_paper=float(adj.min()),
        beside=paper,
    )


def _any_reading(directed: Sequence[tuple[float, float]], alpha: float) -> str:
    """Test 6 under the reading "any Bonferroni-corrected comparison significant" (lowest below
    another pairing), shown beside the verdict."""
    adj = bonferroni([q for _, q in directed]) if directed else np.array([])
    along = sum(1 for (est, _), q in zip(directed, adj) if est < 0 and q < alpha)
    against = sum(1 for (est, _), q in zip(directed, adj) if est > 0 and q < alpha)
    result = "pass" if along else ("fail" if against else "inconclusive")
    return (
        f"{TEST6_ANY_LABEL} (no verdict of its own): {result} ({along} of {len(directed)} comparisons "
        f"significant{f', {against} the other way' if against else ''})"
    )


def test6(df: pd.DataFrame, alpha: float, rule: str) -> TestRow:
    """Test 6 under `rule` (strict: our reading of the paper's text; pooled: ours), the "any"
    reading beside it."""
    far = df[df["pref_pair"] == "1-5"]
    unit = "conversations a side (lowest pairing, the others)"
    if len(far) == 0:
        v = vd.effect(None, None, 0, MIN_GROUP, "(1-5) conversations", alpha=alpha)
        return TestRow(v, detail="needs (1-5) pairs", n=0, unit="(1-5) conversations")
    lowest = far.loc[far["open_sum"] == far["open_sum"].min(), "open_pair"].min()
    base = far.loc[far["open_pair"] == lowest, "agreement"]
    others = far[far["open_pair"] != lowest]
    n = min(len(base), len(others))
    if len(others) == 0 or n < MIN_GROUP:
        detail = (
            f"needs (1-5) pairs at two openness pairings (only {lowest})"
            if len(others) == 0
            else f"too few (1-5) pairs: lowest openness {lowest} {len(base)}, other pairings {len(others)}"
        )
        return TestRow(vd.effect(None, None, n, MIN_GROUP, unit, alpha=alpha), detail=detail, n=n, unit=unit)
    per = {pair: g["agreement"] for pair, g in others.groupby("open_pair")}
    above = sum(float(g.mean()) > float(base.mean()) for g in per.values())
    comparable = {pair: g for pair, g in per.items() if len(g) >= MIN_GROUP}
    adj = bonferroni([_mwu(base, g, "less") for g in comparable.values()])
    k = int((adj < alpha).sum())
    directed = [_directed_mwu(base, g, -1) for g in comparable.values()]
    counts = TestRow(None, significant=k, comparisons=len(adj), n=n, unit=unit, beside=_any_reading(directed, alpha))
    detail = (
        f"lowest {lowest} (n = {len(base)}); {k} of {len(adj)} Bonferroni comparisons significant "
        f"({len(per) - len(comparable)} pairings skipped: < {MIN_GROUP}); {above} of {len(per)} pairings "
        f"above the lowest"
    )
    if rule == "pooled":
        est, p_dir = _directed_mwu(base, others["agreement"], -1)
        v = vd.effect(p_dir, est, n, MIN_GROUP, unit, -1, alpha=alpha)
        p = _mwu(base, others["agreement"], "less")
        text = f"pooled rule (ours): lowest vs the other {len(others)} (1-5) pairs; {detail}"
        return replace(counts, verdict=v, p=p, detail=text)
    if len(adj) == 0:
        largest = max(len(g) for g in per.values())
        v = vd.effect(None, None, largest, MIN_GROUP, "(1-5) conversations in the largest other pairing", alpha=alpha)
        return replace(counts, verdict=v, detail=f"strict rule (our reading of the paper's text): {detail}")
    adj_dir = bonferroni([q for _, q in directed])
    parts = [
        vd.effect(
            float(q),
            est,
            min(len(base), len(g)),
            MIN_GROUP,
            f"conversations ({lowest} vs {pair})",
            -1,
            alpha=alpha,
            family=len(adj_dir),  # q is Bonferroni-adjusted over the comparisons
        )
        for (pair, g), (est, _), q in zip(comparable.items(), directed, adj_dir)
    ]
    text = f"strict rule (our reading of the paper's text): {detail}"
    return replace(counts, verdict=vd.all_of(parts), p=float(adj.max()), detail=text)


def six_tests(
    df: pd.DataFrame,
    alpha: float,
    test6_rule: str = "strict",
    flags: dict[int, list[dg.Flag]] | None = None,
    empty_reason: str | None = None,
    scope: str = "",
    alternative: tuple[FloatArray, FloatArray] | None = None,
    seed: int = 0,
    permutations: int = units.AGENT_PERMUTATIONS,
    topic_power_repeats: int = units.TOPIC_POWER_REPEATS,
) -> pd.DataFrame:
    """The six tests on one model's conversation table. `test6_rule`: strict (our reading of the paper's
    text) or pooled (ours), the Test 6 row's `rule` column says which with TEST6_RULE_LABELS. `flags`:
    degeneracy flags of the inputs each test depends on; `empty_reason`: why a model without
    conversations has none; `alternative`: the paper's (gap-0, gap-4) distributions, for Test 2's power
    (`paper_suppression`; without it Test 2 cannot pass); `seed`: of the permutations (Tests 1, 4, 5).
    The frame's attrs hold "flags" (every flag raised), "verdicts" (test -> Verdict, flags included)
    and "test_flags" (test -> its inputs' flags)."""
    if test6_rule not in TEST6_RULES:
        raise ValueError(f"unknown coherence.test6_rule {test6_rule!r} (one of {', '.join(TEST6_RULES)})")
    flags = flags or {}
    label = f" ({scope})" if scope else ""
    if empty_reason is not None or len(df) == 0:
        outcomes = {t: TestRow(None, detail=empty_reason or "no conversations") for t in TEST_NAMES}
    else:
        outcomes = {
            1: correlation_test(df, 1, alpha, seed, permutations, label),
            2: test2(df, alpha, alternative),
            3: test3(df, alpha),
            4: test4(df, alpha, seed, topic_power_repeats),
            5: correlation_test(df, 5, alpha, seed, permutations, label),
            6: test6(df, alpha, test6_rule),
        }
    rows: list[dict[str, Any]] = []
    raised: list[dg.Flag] = []
    verdicts: dict[int, Verdict] = {}
    found_by_test: dict[int, list[dg.Flag]] = {}
    for test, o in outcomes.items():
        found = dg.collect(flags.get(test, []), *o.extra)  # degenerate inputs first, even without data
        final = Verdict(None, found[0].message) if found else (o.verdict or Verdict(None, o.detail))
        raw = _raw(o.verdict)
        rows.append(
            {
                "test": test,
                "name": TEST_NAMES[test],
                "statistic": o.statistic,
                "p": o.p,
                "result": dg.verdict(found, raw),
                "raw_result": raw,
                "significant": o.significant,
                "comparisons": o.comparisons,
                "detail": o.detail,
                "rule": TEST6_RULE_LABELS[test6_rule] if test == 6 else "",
                "n": o.n,
                "unit": o.unit,
                "power": np.nan if o.power is None else o.power,
                "reason": final.reason,
                "flags": "; ".join(f.message for f in found),
                "p_paper": o.p_paper,
                "beside": o.beside,
            }
        )
        verdicts[test], found_by_test[test] = final, found
        raised = dg.collect(raised, found)
    out = pd.DataFrame(rows, columns=TEST_COLUMNS).astype({"n": "Int64", "power": "float64", "p_paper": "float64"})
    out.attrs["flags"] = raised  # every degeneracy flag a test raised, for summary.json
    out.attrs["verdicts"] = verdicts
    out.attrs["test_flags"] = found_by_test  # test -> the flags of its own inputs
    return out


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


# Which inputs each table rests on (keys of `input_flags`), for its `flags` column and notes.
JUDGED = ("scores", "calibration", "judgments")  # the inputs of every table of agreement scores
TABLE_INPUTS = {
    "bootstrap_by_gap": ("preferences", *JUDGED),
    "bootstrap_by_gap_b2": ("preferences", *JUDGED),
    "bootstrap_by_pref_pair": ("preferences", *JUDGED),
    "bootstrap_by_pref_pair_contentiousness": ("preferences", *JUDGED),
    "bootstrap_by_pref_pair_contentiousness_b2": ("preferences", *JUDGED),
    "bootstrap_by_open_sum": ("openness", *JUDGED),
    "bootstrap_by_open_pair_1_5": ("preferences", "openness", *JUDGED),
    "openness_vs_baseline": ("preferences", "openness", *JUDGED),
    "suppression": ("preferences", *JUDGED),
    "anchors": ("preferences", *JUDGED),
    "contentiousness_vs_neutral": ("preferences", *JUDGED),
    "final_judgments": ("judgments",),
}


def flags_of(flags: dict[str, list[dg.Flag]], inputs: Iterable[str]) -> list[dg.Flag]:
    return dg.collect(*(flags.get(k, []) for k in inputs))


def with_flags(table: pd.DataFrame, flags: dict[str, dict[str, list[dg.Flag]]], inputs: Iterable[str]) -> pd.DataFrame:
    """The table with a `flags` column: per row, the degeneracy flags of its model's inputs."""
    inputs = tuple(inputs)
    shown = {m: "; ".join(f.message for f in flags_of(f, inputs)) for m, f in flags.items()}
    models = table["model"] if "model" in table.columns else pd.Series([], dtype=object)
    return table.assign(flags=[shown.get(m, "") for m in models])


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
    """The tables of the paper's numbers outside Tables 3 and 4 (socsim.coherence.descriptive)."""
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


def analyse(
    agents: pd.DataFrame,
    profiles: pd.DataFrame,
    pairs: pd.DataFrame,
    judgments: pd.DataFrame,
    utterances: pd.DataFrame | None,
    calibration: pd.DataFrame | None,
    cp: dict[str, Any],
    seed: int,
    paper: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every table of the analysis from data frames of the documented schemas (no model calls):
    {"tables": name -> DataFrame, "summary": dict, "flags": model -> input flags, "test_flags":
    model -> test -> flags, "verdicts": model -> test -> Verdict, "suppressed": model -> panel
    ("linear", "sigmoid", "B = 2, linear") -> gap -> Verdict, "design": model -> what we ran}.
    `paper`: the paper's numbers (data/coherence/paper.yaml), for Test 2's power."""
    all_conv = conversation_table(agents, profiles, pairs, judgments)
    bleu = (
        self_bleu_table(utterances)
        if utterances is not None
        else pd.DataFrame(columns=["model", "agent_id", "self_bleu"])
    )
    df, removed = filter_repetitive(all_conv, bleu, cp["self_bleu_threshold"])
    boot, steep, alpha = cp["bootstrap"], cp["sigmoid_steepness"], cp["alpha"]
    alternative = paper_suppression(paper) if paper else None
    tables = {f"bootstrap_{k}": v for k, v in groupings(df, boot, seed).items()}
    models = models_of(profiles, pairs)
    finals = descriptive.final_judgments(pairs, judgments, models)
    supp: list[pd.DataFrame] = []
    tests: list[pd.DataFrame] = []
    flags: dict[str, dict[str, list[dg.Flag]]] = {}
    test_flags: dict[str, dict[int, list[dg.Flag]]] = {}
    verdicts: dict[str, dict[int, Verdict]] = {}
    suppressed: dict[str, dict[str, dict[int, Verdict]]] = {}  # model -> panel -> gap -> verdict
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
        flags[model]["judgments"] = unparsed_flags(finals[finals["model"] == model].iloc[0], model)
        per_test = flags_per_test(flags[model])
        t = six_tests(g, alpha, cp["test6_rule"], per_test, reason, scope=model, alternative=alternative, seed=seed)
        verdicts[model] = t.attrs["verdicts"]
        test_flags[model] = t.attrs["test_flags"]
        tests.append(t.assign(model=model))
        table3 = flags_of(flags[model], TABLE_INPUTS["suppression"])
        suppressed[model] = {}
        for panel, shift, b2 in PANELS:
            data = g[g["both_b2"]] if b2 else g
            part = suppression(data, shift, boot, seed, steep).assign(model=model, panel=panel)
            if table3 or reason:
                part["note"] = dg.verdict(table3, f"n/a: {reason}")
            part, suppressed[model][panel.removesuffix(" shift")] = with_verdicts(part, alpha, table3)
            supp.append(part)
    tables["suppression"] = (
        pd.concat(supp, ignore_index=True)
        if supp
        else pd.DataFrame(columns=SUPPRESSION_COLUMNS + ["model", "panel", *SUPPRESSION_EXTRA])
    )
    tables["six_tests"] = (
        pd.concat(tests, ignore_index=True) if tests else pd.DataFrame(columns=TEST_COLUMNS + ["model"])
    )
    tables["openness_vs_baseline"] = openness_vs_baseline(tables["bootstrap_by_open_pair_1_5"])
    tables |= descriptive_tables(df, tables, bleu, finals, cp["self_bleu_threshold"], models)
    for name, inputs in TABLE_INPUTS.items():
        if name != "suppression":
            tables[name] = with_flags(tables[name], flags, inputs)
    tables["self_bleu"] = bleu
    tables["conversations"] = df
    for t in tables.values():
        t.attrs = {}  # the per-test flags and verdicts are returned below, not stored with the table
    removed_by_model = {m: int((all_conv["model"] == m).sum() - (df["model"] == m).sum()) for m in models}
    judged_by_model = {m: int((all_conv["model"] == m).sum()) for m in models}
    anchors = tables["anchors"]
    finding3 = {
        m: finding3_verdict(
            anchors[(anchors["model"] == m) & (anchors["gap"] == 0)].iloc[0],
            alpha,
            flags_of(flags[m], TABLE_INPUTS["anchors"]),
        )
        for m in models
    }
    summary = {
        "conversations": int(len(df)),
        "removed_by_self_bleu": removed,
        "removed_by_self_bleu_by_model": removed_by_model,
        "self_bleu_threshold": cp["self_bleu_threshold"],
        "test6_rule": cp["test6_rule"],
        "test6_rule_label": TEST6_RULE_LABELS[cp["test6_rule"]],
        "sigmoid_steepness": steep,
        "models": models,
        "tests_passed": {
            m: sorted(int(t) for t in g.loc[g["result"] == "pass", "test"])
            for m, g in tables["six_tests"].groupby("model")
        },
        "no_data": {m: r for m, r in notes.items() if r},
        "judged_by_model": judged_by_model,
        "removed_by_self_bleu_share_by_model": {
            m: removed_by_model[m] / judged_by_model[m] if judged_by_model[m] else None for m in models
        },
        "final_judgments": {
            str(r["model"]): {k: int(r[k]) for k in descriptive.FINAL_COLUMNS[1:]} for _, r in finals.iterrows()
        },
    }
    return {
        "finding3": finding3,
        "tables": tables,
        "summary": summary,
        "flags": flags,
        "test_flags": test_flags,
        "verdicts": verdicts,
        "suppressed": suppressed,
        "design": {m: design_of(m, all_conv, pairs, utterances) for m in models},
    }


TITLES = {
    "bootstrap_by_gap": "Fig. 4: final agreement by preference gap (bootstrap means)",
    "bootstrap_by_gap_b2": "Final agreement by preference gap, both agents B = 2 (bootstrap means)",
    "bootstrap_by_pref_pair": "Fig. 6: final agreement by preference pair (bootstrap means)",
    "bootstrap_by_pref_pair_contentiousness": "Fig. 7a: agreement by preference pair and contentiousness",
    "bootstrap_by_pref_pair_contentiousness_b2": "Fig. 7b: agreement by preference pair and contentiousness, B = 2",
    "bootstrap_by_open_sum": "Fig. 8a: agreement by O1 + O2 (bootstrap means)",
    "bootstrap_by_open_pair_1_5": "(1-5) pairs: agreement by openness pairing (bootstrap means)",
    "openness_vs_baseline": "Fig. 8b: (1-5) pairs, each openness pairing minus (0, 0)",
    "suppression": "Table 3 / Fig. 5: observed vs expected agreement per gap, with the suppression test",
    "six_tests": "The six tests of section 4.3 per agent model (Table 4 in full)",
    "self_bleu": "Self-BLEU per agent (within its agent model)",
    "conversations": "Conversations used (after the Self-BLEU filter)",
    "anchors": "Fig. 6 / Finding 3: pairs anchored at 5 minus pairs anchored at 1, per gap",
    "contentiousness_vs_neutral": "Fig. 7: each preference pair at C = 2 and 3 against its neutral (C = 1) interval",
    "self_bleu_histogram": "Fig. 9a: agents per Self-BLEU range (bins of a third of the filter's threshold)",
    "final_judgments": "Final judgments per agent model: parsed, unparsed, empty window, not judged",
}
# The figure that draws each table (for the flags' `where`).
FIGURE_OF = {
    "bootstrap_by_gap": "fig4_agreement_by_gap",
    "bootstrap_by_pref_pair": "fig6_anchors",
    "bootstrap_by_pref_pair_contentiousness": "fig7_contentiousness",
    "bootstrap_by_pref_pair_contentiousness_b2": "fig7_contentiousness",
    "bootstrap_by_open_sum": "fig8_openness",
    "openness_vs_baseline": "fig8_openness",
    "suppression": "fig5_suppression",
}


def _int(v: object) -> int | None:
    return None if v is None or pd.isna(v) else int(v)  # type: ignore[call-overload]


# The tables whose notes say how many conversations had no usable final judgment.
NOTED = ("six_tests", "suppression", "conversations", "final_judgments")


def _findings(out: dict[str, Any]) -> list[Finding]:
    """Per model: "disagreement suppressed" under either shift, the six tests and Finding 3."""
    found: list[Finding] = []
    supp, tests = out["tables"]["suppression"], out["tables"]["six_tests"]
    rule = out["summary"]["test6_rule"]
    for model, panels in out["suppressed"].items():
        for label in ("linear", "sigmoid"):
            part = supp[(supp["model"] == model) & (supp["panel"] == f"{label} shift")]
            diffs = part.loc[part["gap"] > 0, "difference"].dropna()
            found.append(
                Finding(
                    f"disagreement suppressed: observed mean above the expected one at every gap 1-4, "
                    f"{label} shift ({model})",
                    "smallest observed - expected mean over gaps 1-4",
                    float(diffs.min()) if len(diffs) else None,
                    "per gap: one-sided t of observed vs expected mean (the gap-0 mean's error included), "
                    f"p simulated under no suppression, >= {MIN_SUPPRESSION} conversations a side; every gap "
                    "must hold",
                    "conversations",
                    int(part["n"].sum()) if len(part) else 0,
                    vd.all_of(panels[label][g] for g in (1, 2, 3, 4)),
                )
            )
        for _, r in tests[tests["model"] == model].sort_values("test").iterrows():
            t = int(r["test"])
            value = r["statistic"] if pd.notna(r["statistic"]) else r["p"]
            found.append(
                Finding(
                    f"Test {t}: {TEST_NAMES[t]} ({model})",
                    spec_of_test(t, rule)[0],
                    None if pd.isna(value) else float(value),
                    spec_of_test(t, rule)[1],
                    str(r["unit"]),
                    _int(r["n"]),
                    out["verdicts"][model][t],
                )
            )
        found.append(finding3(out, model))
    return found


def finding3(out: dict[str, Any], model: str) -> Finding:
    """Finding 3's directional claim as a finding: (1-1) pairs agree less than (5-5) pairs."""
    anchors = out["tables"]["anchors"]
    row = anchors[(anchors["model"] == model) & (anchors["gap"] == 0)].iloc[0]
    value = row["mean_at_1"] - row["mean_at_5"]
    return Finding(
        f"Finding 3: (1-1) pairs agree less than (5-5) pairs ({model})",
        "mean agreement (1-1) minus (5-5)",
        None if pd.isna(value) else float(value),
        "one-sided Mann-Whitney U, (1-1) below (5-5)",
        "conversations",
        min(int(row["n_at_1"]), int(row["n_at_5"])),
        out["finding3"][model],
    )


def report(
    agents: pd.DataFrame,
    profiles: pd.DataFrame,
    pairs: pd.DataFrame,
    judgments: pd.DataFrame,
    utterances: pd.DataFrame | None,
    calibration: pd.DataFrame | None,
    cp: dict[str, Any],
    seed: int,
    paper: dict[str, Any],
) -> Report:
    """The whole analysis as a report (socsim.io.report): every table of `analyse`, Table 4, the
    findings, every flag with where it applies, and vs_paper rows with their own flags, verdicts
    and design differences."""
    from socsim.coherence import compare

    out = analyse(agents, profiles, pairs, judgments, utterances, calibration, cp, seed, paper)
    rep = Report("Coherence (paper 001): our run beside the paper's Tables 3 and 4", summary=out["summary"])
    flags: dict[str, dict[str, list[dg.Flag]]] = out["flags"]
    for model, per_test in out["test_flags"].items():
        for t, fl in per_test.items():
            for f in fl:
                rep.flag(f, f"six_tests, table4_tests: Test {t} ({model})", f"vs_paper: Table 4 Test {t} ({model})")
    for model, f in flags.items():
        for name, inputs in TABLE_INPUTS.items():
            where = [f"{name} ({model})"] + ([f"{FIGURE_OF[name]} ({model})"] if name in FIGURE_OF else [])
            if name == "suppression":
                where.append(f"vs_paper: Table 3 and suppression rows ({model})")
            for flag in flags_of(f, inputs):
                rep.flag(flag, *where)
    for name, df in out["tables"].items():
        if name in TABLE_INPUTS:
            table_flags = dg.collect(*(flags_of(f, TABLE_INPUTS[name]) for f in flags.values()))
        elif name == "six_tests":
            table_flags = dg.collect(*(fl for per in out["test_flags"].values() for fl in per.values()))
        else:
            table_flags = []
        notes = [n for n in (unparsed_note(r) for _, r in out["tables"]["final_judgments"].iterrows()) if n]
        shown_notes = notes if name in NOTED else []
        rep.tables[name] = Table(df, TITLES.get(name, name), notes=shown_notes, flags=table_flags)
    rep.tables["table4_tests"] = compare.table4(out["tables"]["six_tests"])
    rep.findings = _findings(out)
    rep.vs_paper = compare.vs_paper_rows(out, paper)
    rep.design = list(dict.fromkeys(d for r in rep.vs_paper for d in (r.design or [])))
    return rep
