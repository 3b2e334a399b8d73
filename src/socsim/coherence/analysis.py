"""Statistics of the coherence study (paper 001, sections 3.3 and 4). Runs on any Parquet files of
the documented schemas (agents, profiles, pairs, judgments; utterances optional for Self-BLEU,
the judge's calibration answers optional for its calibration check). `report` returns the whole
analysis as a socsim.io.report.Report (tables, findings, flags, vs_paper rows).

Every verdict follows the one rule (socsim.stats.verdict, alpha = coherence.alpha, .01 by default):
a test passes only when it rejects in the claimed direction with at least the minimum n (MIN_CORRELATION
conversations for a correlation, MIN_GROUP per compared group); it fails only when it rejects in the
opposite direction (or, for a "no difference" test, when it finds a difference); otherwise it is
"inconclusive (...)" with the n and what it needs. A test whose passing means "no difference found"
(Tests 2 and 4) passes only when its power at the observed n is at least 0.8.

The six tests of section 4.3 (the unit of each is the conversation: one final agreement score):

1. Pearson r between preference gap and final agreement (two-sided p): pass if r < 0 and p < alpha.
2. Kolmogorov-Smirnov between the scores at gap 4 and the inverted (6 - s) scores at gap 0: the
   agents are coherent if the two are the same distribution, so it passes if p >= alpha AND the KS
   test had power >= 0.8 at the observed n to find the paper's suppression (`ks_power`, simulated:
   gap 0 drawn from the paper's Table 3, gap 4 from the mixture of that and its inverse with the
   paper's observed gap-4 mean 3.6). A t test's power (socsim.stats.verdict.power_t) would overstate
   the KS test's on 5-point scores (0.99 against about 0.3 at n = 10 per gap), so it is not used.
3. (1-1) pairs against each mixed pair (2-5, 3-5, 4-5), one-sided Mann-Whitney U ((1-1) greater),
   Bonferroni over the three: pass if every corrected p < alpha.
4. For every preference pair and every pair of contentiousness levels, two-sided Mann-Whitney U,
   Bonferroni over all of them: contentiousness should not matter once preferences are fixed, so
   it passes if no corrected p < alpha AND every comparison had power >= 0.8 (at its Bonferroni
   alpha) to find a contentiousness effect of CONTENTIOUSNESS_D standard deviations (the paper
   reports no effect size). The power is the U test's own, simulated (`u_power`) on the observed
   scores of the preference pair (both compared levels pooled): one side is drawn from that
   distribution, the other from it shifted on a latent normal scale (ordered probit) so far that
   its mean moves by CONTENTIOUSNESS_D of its SD, up and down (the smaller power counts); a t
   test's power would overstate the U test's on tied 5-point scores, as for Test 2.
5. Pearson r between O1 + O2 and final agreement: pass if r > 0 and p < alpha.
6. Among (1-5) preference pairs, the lowest openness pairing (lowest O1 + O2, e.g. (0, 0)) should
   agree less than the other openness pairings. `coherence.test6_rule`:
   - `strict` (default, the paper's rule): one one-sided Mann-Whitney U (lowest smaller) against
     each other pairing, Bonferroni over them; pass only if every corrected comparison is
     significant. Section 4.3: "whether the agreement score distribution for the lowest Openness
     pairing ... is smaller than the agreement scores for other pairings ... we compute each
     comparison separately, then perform a Bonferroni correction on a Mann-Whitney U test", and
     Finding #6: "all other pairings should yield higher agreement than this baseline". Pairings
     with fewer than MIN_GROUP conversations are left out (counted in the detail). Coherent agents
     whose agreement rises smoothly with openness rarely pass it, because neighbouring pairings
     ((0, 0) against (0, 1)) barely differ.
   - `pooled` (ours, not the paper's): one one-sided Mann-Whitney U of the lowest pairing's scores
     against the scores of all other (1-5) pairings together: pass if p < alpha.
   Either way the detail column counts the significant Bonferroni comparisons and the pairings
   whose mean lies above the lowest one's (the paper: 6 of 28); the `rule` column of Test 6 and
   vs_paper's Test 6 rows say which rule ran (a pooled row is a design difference from the paper).

For the one-sided U tests (3, 6) a comparison whose estimate (U / (n1 n2) - 1/2) lies against the
claim is judged on the one-sided p in that direction, so "fail" means significant the other way.
Tests 3, 4 and 6 also report `significant` of `comparisons` (Bonferroni-corrected p < alpha).

Disagreement suppression (Table 3, section 4.1, "observed mean above the expected one at every gap
1-4"): per gap, observed minus expected mean, where the expected mean is a linear function of the
gap-0 mean (6 w + (1 - 2 w) mean_0 for shift weight w), tested one-sided by a Welch t over the
conversations at that gap and at gap 0 (so the expected mean's own uncertainty counts); the claim
holds when it holds at every gap 1-4 (socsim.stats.verdict.all_of).

A test says "degenerate input: <why>" (socsim.stats.degeneracy) instead of a verdict when its
inputs carry no information (this comes first, even when no conversation is left): one preference
value for >= 90% of a model's parsed preferences (Tests 1-4, 6, Table 3), one openness value for
>= 90% (Tests 5, 6), one final judge score for >= 90% of the conversations or a judge that
misjudges its own calibration examples (every test, Table 3), or constant gaps, openness sums or
scores. Too few conversations is not degeneracy: it is "inconclusive (n = ..., needs ...)". A model
without a single usable conversation has every test "n/a" with the reason (no judged conversation,
all removed by the Self-BLEU filter), and so has a test whose groups are absent by design (one
topic: no second contentiousness level).
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps
from scipy.optimize import brentq

from socsim.io.report import Finding, Report, Table
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.multitest import bonferroni
from socsim.stats.text import self_bleu
from socsim.stats.verdict import Verdict

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
]
# What each test's statistic is, the test that carries it and its unit (for findings).
TEST_SPECS = {
    1: ("Pearson r, preference gap vs final agreement", "Pearson r, two-sided p, r < 0 claimed"),
    2: (
        "KS D, gap-4 scores vs inverted gap-0 scores",
        "two-sample KS; no difference claimed (power at the paper's effect)",
    ),
    3: (
        "largest Bonferroni p, (1-1) vs 2-5, 3-5, 4-5",
        "one-sided Mann-Whitney U per mixed pair, Bonferroni, all needed",
    ),
    4: (
        "smallest Bonferroni p over preference pair x contentiousness comparisons",
        "two-sided Mann-Whitney U, Bonferroni; no difference claimed (simulated U power at CONTENTIOUSNESS_D)",
    ),
    5: ("Pearson r, O1 + O2 vs final agreement", "Pearson r, two-sided p, r > 0 claimed"),
    6: (
        "largest Bonferroni p, lowest openness pairing vs each other (1-5) pairing",
        "one-sided Mann-Whitney U per other openness pairing, Bonferroni, all needed (the paper's rule)",
    ),
}
# Test 6 under the pooled rule (coherence.test6_rule: pooled), ours.
TEST6_POOLED_SPEC = (
    "p, lowest openness pairing vs all other (1-5) pairs pooled",
    "one-sided Mann-Whitney U against the other pairings pooled (pooled rule: ours, not the paper's)",
)
CONTENTIOUSNESS_D = 0.5  # Test 4: the contentiousness effect (Cohen's d) it must be able to find
KS_POWER_REPEATS = 500  # simulated samples for Test 2's power
KS_POWER_CAP = 200  # group sizes above this are simulated at this size (power is ~1 there)
U_POWER_REPEATS = 400  # simulated samples per direction for Test 4's power
U_POWER_CAP = 500  # group sizes above this are simulated at this size (conservative)
TEST6_RULES = ("strict", "pooled")  # the paper's rule first (the default)
TEST6_RULE_LABELS = {
    "strict": "strict, the paper's: every Bonferroni-corrected comparison with another pairing significant",
    "pooled": "pooled, ours (not the paper's): the lowest pairing against all other (1-5) pairs together",
}


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
    + ["note", "n_gap0", "se", "df", "p_greater", "p_less"]
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
        test = suppression_test(obs, gap0, shift_weight(g, shift, steepness)) if g > 0 else {}
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
    """ "Disagreement suppressed at this gap" (observed above expected), by the one rule: one-sided
    Welch t over the conversations at the gap and at gap 0, each side at least MIN_GROUP."""
    n, n0 = int(row["n"]), int(row["n_gap0"]) if pd.notna(row["n_gap0"]) else 0
    if flags:
        return Verdict(None, flags[0].message)
    if n0 < MIN_GROUP:
        return vd.effect(None, None, n0, MIN_GROUP, "conversations at gap 0", alpha=alpha)
    diff = row["difference"]
    p = row["p_greater"] if pd.notna(diff) and diff > 0 else row["p_less"]
    unit = f"conversations at gap {int(row['gap'])} ({n0} at gap 0)"
    return vd.effect(
        None if pd.isna(p) else float(p), None if pd.isna(diff) else float(diff), n, MIN_GROUP, unit, +1, alpha=alpha
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


def ks_power(
    alternative: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    n0: int,
    n4: int,
    alpha: float,
    repeats: int = KS_POWER_REPEATS,
) -> float | None:
    """Simulated power of Test 2's KS test (gap-4 scores against inverted gap-0 scores) at n0, n4
    conversations to find the given (gap-0, gap-4) distributions' difference (seeded by n0, n4)."""
    if n0 < 2 or n4 < 2:
        return None
    n0, n4 = min(n0, KS_POWER_CAP), min(n4, KS_POWER_CAP)
    rng = np.random.default_rng([20, n0, n4])
    p0, p4 = alternative
    hits = 0
    with warnings.catch_warnings():  # ties: scipy's exact method falls back to the asymptotic one
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(repeats):
            g0, g4 = rng.choice(SCORES, n0, p=p0), rng.choice(SCORES, n4, p=p4)
            hits += float(sps.ks_2samp(g4, 6 - g0).pvalue) < alpha
    return hits / repeats


def shifted(p: npt.ArrayLike, d: float) -> npt.NDArray[np.float64] | None:
    """The 5-point distribution `p` moved on a latent normal scale (ordered probit: its cumulative
    probabilities are the latent thresholds) until its mean has moved by `d` of its SD (d > 0 up,
    d < 0 down). Scores `p` never gives stay impossible, so the shift cannot leave the observed
    range; None where it would have to (or `p` has no spread)."""
    p = np.asarray(p, float) / float(np.sum(p))
    mean = float((SCORES * p).sum())
    sd = float(np.sqrt(((SCORES - mean) ** 2 * p).sum()))
    if sd <= dg.VARIANCE_TOL:
        return None
    target = mean + d * sd
    seen = SCORES[p > 0]
    if not seen.min() < target < seen.max():
        return None if d != 0 else p
    tau = sps.norm.ppf(np.clip(np.cumsum(p)[:-1], 0.0, 1.0))  # +-inf where the cumulative is 0 or 1

    def moved(delta: float) -> npt.NDArray[np.float64]:
        cum = np.concatenate([[0.0], sps.norm.cdf(tau - delta), [1.0]])
        return np.asarray(np.diff(cum), dtype=np.float64)

    delta = brentq(lambda x: float((SCORES * moved(x)).sum()) - target, -40.0, 40.0, xtol=1e-10)
    return moved(float(delta))


@functools.lru_cache(maxsize=4096)
def _u_power(counts: tuple[int, ...], n1: int, n2: int, alpha: float, d: float, repeats: int) -> float:
    base = np.asarray(counts, float) / sum(counts)
    powers = []
    for sign in (1, -1):
        alt = shifted(base, sign * d)
        if alt is None:
            continue
        rng = np.random.default_rng([4, n1, n2, *counts, sign + 1])
        a = rng.choice(SCORES, (repeats, n1), p=base)
        b = rng.choice(SCORES, (repeats, n2), p=alt)
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            p = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", axis=1).pvalue
        powers.append(float(np.mean(np.nan_to_num(np.asarray(p, float), nan=1.0) < alpha)))
    return min(powers) if powers else 0.0


def u_power(
    scores: npt.ArrayLike,
    n1: int,
    n2: int,
    alpha: float,
    d: float = CONTENTIOUSNESS_D,
    repeats: int = U_POWER_REPEATS,
) -> float | None:
    """Simulated power of Test 4's two-sided Mann-Whitney U test with groups of n1 and n2 to find a
    shift of `d` SD (`shifted`) of the score distribution of `scores`: the smaller of the powers
    against a shift up and one down (a direction the observed range cannot hold is skipped). One
    score throughout: 0 (no shift stays within the observed range, and the U test cannot reject on
    such data); None when n < 2. Seeded by the counts and sizes, cached."""
    x = np.asarray(scores, float)
    if n1 < 2 or n2 < 2 or not len(x):
        return None
    counts = tuple(int((x == s).sum()) for s in SCORES)
    if sum(counts) == 0:
        return None
    return _u_power(counts, min(n1, U_POWER_CAP), min(n2, U_POWER_CAP), float(alpha), float(d), int(repeats))


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
    test6_rule: str = "strict",
    flags: dict[int, list[dg.Flag]] | None = None,
    empty_reason: str | None = None,
    scope: str = "",
    alternative: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None,
) -> pd.DataFrame:
    """The six tests on one model's conversation table. `test6_rule`: strict (the paper's) or pooled
    (ours), the Test 6 row's `rule` column says which with TEST6_RULE_LABELS. `flags`: degeneracy flags of the inputs
    each test depends on; `empty_reason`: why a model without conversations has none;
    `alternative`: the paper's (gap-0, gap-4) distributions, for Test 2's power (`paper_suppression`;
    without it Test 2 cannot pass). The frame's attrs hold "flags" (every flag raised) and
    "verdicts" (test -> Verdict, flags included) and "test_flags" (test -> its inputs' flags)."""
    if test6_rule not in TEST6_RULES:
        raise ValueError(f"unknown coherence.test6_rule {test6_rule!r} (one of {', '.join(TEST6_RULES)})")
    flags = flags or {}
    label = f" ({scope})" if scope else ""
    rows: list[dict[str, Any]] = []
    raised: list[dg.Flag] = []
    verdicts: dict[int, Verdict] = {}
    found_by_test: dict[int, list[dg.Flag]] = {}

    def add(
        test: int,
        verdict: Verdict | None,
        statistic: float = np.nan,
        p: float = np.nan,
        detail: str = "",
        extra: Iterable[dg.Flag | None] = (),
        significant: float = np.nan,
        comparisons: float = np.nan,
        n: int | None = None,
        unit: str = "conversations",
        power: float | None = None,
    ) -> None:
        """`verdict` None: the test does not apply (n/a, with `detail` saying why)."""
        if verdict is None:
            raw = "n/a"
        elif verdict.holds is None:
            raw = verdict.label
        else:
            raw = "pass" if verdict.holds else "fail"
        found = dg.collect(flags.get(test, []), *extra)  # degenerate inputs first, even without data
        final = Verdict(None, found[0].message) if found else (verdict or Verdict(None, detail))
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
                "rule": TEST6_RULE_LABELS[test6_rule] if test == 6 else "",
                "n": n,
                "unit": unit,
                "power": np.nan if power is None else power,
                "reason": final.reason,
                "flags": "; ".join(f.message for f in found),
            }
        )
        verdicts[test], found_by_test[test] = final, found
        raised[:] = dg.collect(raised, found)

    def done() -> pd.DataFrame:
        out = pd.DataFrame(rows, columns=TEST_COLUMNS).astype({"n": "Int64", "power": "float64"})
        out.attrs["flags"] = raised  # every degeneracy flag a test raised, for summary.json
        out.attrs["verdicts"] = verdicts
        out.attrs["test_flags"] = found_by_test  # test -> the flags of its own inputs
        return out

    if empty_reason is not None or len(df) == 0:
        for t in TEST_NAMES:
            add(t, None, detail=empty_reason or "no conversations")
        return done()

    def correlation(test: int, x: str, unit: str) -> None:
        const = [
            dg.near_constant(df[x], f"coherence {unit}{label}"),
            dg.near_constant(df["agreement"], f"coherence final agreement{label}"),
        ]
        n = len(df)
        if n < MIN_CORRELATION or any(const):
            v = vd.effect(None, None, n, MIN_CORRELATION, "conversations", alpha=alpha)
            add(
                test,
                v,
                detail=f"needs >= {MIN_CORRELATION} conversations with varied {unit} and scores",
                extra=const,
                n=n,
            )
            return
        r, p = sps.pearsonr(df[x], df["agreement"])
        v = vd.effect(float(p), float(r), n, MIN_CORRELATION, "conversations", -1 if test == 1 else +1, alpha=alpha)
        add(test, v, float(r), float(p), f"n = {n}", n=n)

    # 1. preference gap vs agreement
    correlation(1, "gap", "preference gaps")
    # 2. gap-4 scores vs inverted gap-0 scores: "no difference" (the paper's pass)
    g4, g0 = df.loc[df["gap"] == 4, "agreement"], df.loc[df["gap"] == 0, "agreement"]
    n2 = min(len(g0), len(g4))
    unit2 = f"conversations a side (gap 0: {len(g0)}, gap 4: {len(g4)})"
    if n2 < MIN_GROUP:
        v = vd.no_difference(None, None, n2, MIN_GROUP, unit2, alpha=alpha)
        add(2, v, detail="needs gap-0 and gap-4 pairs" if n2 == 0 else "too few gap-0 or gap-4 pairs", n=n2, unit=unit2)
    else:
        ks = sps.ks_2samp(g4, 6 - g0)
        pw = ks_power(alternative, len(g0), len(g4), alpha) if alternative is not None else None
        v = vd.no_difference(float(ks.pvalue), pw, n2, MIN_GROUP, unit2, alpha=alpha)
        detail = f"n = {len(g0)} (gap 0), {len(g4)} (gap 4); power to find the paper's suppression: " + (
            "unknown (no paper distributions)" if pw is None else f"{pw:.2f}"
        )
        add(2, v, float(ks.statistic), float(ks.pvalue), detail, n=n2, unit=unit2, power=pw)
    # 3. (1-1) against mixed pairs
    mixed = ("2-5", "3-5", "4-5")
    groups = {m: df.loc[df["pref_pair"] == m, "agreement"] for m in ("1-1",) + mixed}
    n3 = min(len(g) for g in groups.values())
    unit3 = "conversations in the smallest preference pair"
    if n3 < MIN_GROUP:
        missing = [m for m, g in groups.items() if len(g) == 0]
        detail = (
            "needs 1-1, 2-5, 3-5, 4-5 pairs; missing: " + ", ".join(missing)
            if missing
            else "too few pairs: " + ", ".join(f"{m} {len(g)}" for m, g in groups.items())
        )
        add(3, vd.effect(None, None, n3, MIN_GROUP, unit3, alpha=alpha), detail=detail, n=n3, unit=unit3)
    else:
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
            )
            for m, (est, _), q in zip(mixed, directed, adj)
        ]
        add(
            3,
            vd.all_of(parts),
            np.nan,
            float(claimed.max()),
            "corrected p: " + ", ".join(f"{m} {q:.3g}" for m, q in zip(mixed, claimed)),
            significant=int((claimed < alpha).sum()),
            comparisons=len(claimed),
            n=n3,
            unit=unit3,
        )
    # 4. contentiousness within preference pairs: "no difference"
    cells: list[tuple[pd.Series, pd.Series]] = []
    possible, best = 0, 0
    for _pair, g in df.groupby("pref_pair"):
        for c1, c2 in itertools.combinations(sorted(g["contentiousness"].unique()), 2):
            possible += 1
            a, b = g.loc[g["contentiousness"] == c1, "agreement"], g.loc[g["contentiousness"] == c2, "agreement"]
            best = max(best, min(len(a), len(b)))
            if len(a) >= MIN_GROUP and len(b) >= MIN_GROUP:
                cells.append((a, b))
    unit4 = "conversations a side (smallest compared cell)"
    if possible == 0:
        add(4, None, detail="needs a preference pair at two contentiousness levels (topics of two levels)")
    elif not cells:
        v = vd.no_difference(None, None, best, MIN_GROUP, "conversations a side (largest cell pair)", alpha=alpha)
        add(
            4,
            v,
            detail=f"none of {possible} comparisons has {MIN_GROUP} conversations on both sides",
            n=best,
            unit="conversations a side (largest cell pair)",
        )
    else:
        adj = bonferroni([_mwu(a, b, "two-sided") for a, b in cells])
        k = int((adj < alpha).sum())
        n4 = min(min(len(a), len(b)) for a, b in cells)
        powers = [u_power(pd.concat([a, b]), len(a), len(b), alpha / len(cells)) for a, b in cells]
        pw = None if any(x is None for x in powers) else min(x for x in powers if x is not None)
        add(
            4,
            vd.no_difference(float(adj.min()), pw, n4, MIN_GROUP, unit4, alpha=alpha),
            np.nan,
            float(adj.min()),
            f"{k} of {len(cells)} comparisons significant ({possible - len(cells)} skipped: < {MIN_GROUP} a side); "
            f"power to find d = {CONTENTIOUSNESS_D:g}: " + ("unknown" if pw is None else f"{pw:.2f}"),
            significant=k,
            comparisons=len(cells),
            n=n4,
            unit=unit4,
            power=pw,
        )
    # 5. openness vs agreement
    correlation(5, "open_sum", "openness sums")
    # 6. lowest openness among (1-5) pairs
    far = df[df["pref_pair"] == "1-5"]
    unit6 = "conversations a side (lowest pairing, the others)"
    if len(far) == 0:
        add(
            6,
            vd.effect(None, None, 0, MIN_GROUP, "(1-5) conversations", alpha=alpha),
            detail="needs (1-5) pairs",
            n=0,
            unit="(1-5) conversations",
        )
        return done()
    lowest = far.loc[far["open_sum"] == far["open_sum"].min(), "open_pair"].min()
    base = far.loc[far["open_pair"] == lowest, "agreement"]
    others = far[far["open_pair"] != lowest]
    n6 = min(len(base), len(others))
    if len(others) == 0 or n6 < MIN_GROUP:
        detail = (
            f"needs (1-5) pairs at two openness pairings (only {lowest})"
            if len(others) == 0
            else f"too few (1-5) pairs: lowest openness {lowest} {len(base)}, other pairings {len(others)}"
        )
        add(6, vd.effect(None, None, n6, MIN_GROUP, unit6, alpha=alpha), detail=detail, n=n6, unit=unit6)
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
        est, p_dir = _directed_mwu(base, others["agreement"], -1)
        add(
            6,
            vd.effect(p_dir, est, n6, MIN_GROUP, unit6, -1, alpha=alpha),
            np.nan,
            p,
            f"pooled rule (ours, not the paper's): lowest vs the other {len(others)} (1-5) pairs; " + detail,
            significant=k,
            comparisons=len(adj),
            n=n6,
            unit=unit6,
        )
    elif len(adj) == 0:
        v = vd.effect(
            None,
            None,
            max(len(g) for g in per.values()),
            MIN_GROUP,
            "(1-5) conversations in the largest other pairing",
            alpha=alpha,
        )
        add(6, v, detail="strict rule (the paper's): " + detail, significant=0, comparisons=0, n=n6, unit=unit6)
    else:
        directed = [_directed_mwu(base, g, -1) for g in comparable.values()]
        adj_dir = bonferroni([q for _, q in directed])
        parts = [
            vd.effect(
                float(q), est, min(len(base), len(g)), MIN_GROUP, f"conversations ({lowest} vs {pair})", -1, alpha=alpha
            )
            for (pair, g), (est, _), q in zip(comparable.items(), directed, adj_dir)
        ]
        add(
            6,
            vd.all_of(parts),
            np.nan,
            float(adj.max()),
            "strict rule (the paper's): " + detail,
            significant=k,
            comparisons=len(adj),
            n=n6,
            unit=unit6,
        )
    return done()


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
TABLE_INPUTS = {
    "bootstrap_by_gap": ("preferences", "scores", "calibration"),
    "bootstrap_by_gap_b2": ("preferences", "scores", "calibration"),
    "bootstrap_by_pref_pair": ("preferences", "scores", "calibration"),
    "bootstrap_by_pref_pair_contentiousness": ("preferences", "scores", "calibration"),
    "bootstrap_by_pref_pair_contentiousness_b2": ("preferences", "scores", "calibration"),
    "bootstrap_by_open_sum": ("openness", "scores", "calibration"),
    "bootstrap_by_open_pair_1_5": ("preferences", "openness", "scores", "calibration"),
    "openness_vs_baseline": ("preferences", "openness", "scores", "calibration"),
    "suppression": ("preferences", "scores", "calibration"),
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
        per_test = flags_per_test(flags[model])
        t = six_tests(g, alpha, cp["test6_rule"], per_test, reason, scope=model, alternative=alternative)
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
    for name, inputs in TABLE_INPUTS.items():
        if name != "suppression":
            tables[name] = with_flags(tables[name], flags, inputs)
    tables["self_bleu"] = bleu
    tables["conversations"] = df
    for t in tables.values():
        t.attrs = {}  # the per-test flags and verdicts are returned below, not stored with the table
    removed_by_model = {m: int((all_conv["model"] == m).sum() - (df["model"] == m).sum()) for m in models}
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
    }
    return {
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


def _findings(out: dict[str, Any]) -> list[Finding]:
    """Per model: "disagreement suppressed" under either shift, and the six tests."""
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
                    "per gap: one-sided Welch t, observed vs expected mean (the gap-0 mean's error "
                    "included); every gap must hold",
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
    return found


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
        rep.tables[name] = Table(df, TITLES.get(name, name), flags=table_flags)
    rep.tables["table4_tests"] = compare.table4(out["tables"]["six_tests"])
    rep.findings = _findings(out)
    rep.vs_paper = compare.vs_paper_rows(out, paper)
    rep.design = list(dict.fromkeys(d for r in rep.vs_paper for d in (r.design or [])))
    return rep
