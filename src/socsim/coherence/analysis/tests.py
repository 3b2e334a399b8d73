"""The coherence study's tests: the six tests of section 4.3 (Table 4), the per-gap suppression
test's verdict (Table 3) and Finding 3's (pass rules: socsim.coherence.analysis, its docstring)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from socsim.coherence.analysis import units
from socsim.coherence.analysis.units import CONTENTIOUSNESS_D, TEST2_MARGIN
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.multitest import bonferroni
from socsim.stats.ranks import directed_mwu, mwu_p
from socsim.stats.verdict import Verdict

FloatArray = npt.NDArray[np.float64]

MIN_CORRELATION = 10  # conversations a Pearson test (1, 5) needs, and agents its permutation needs
MIN_GROUP = 5  # values per compared group a Mann-Whitney U or KS comparison needs
MIN_SUPPRESSION = 30  # conversations a side (the gap and gap 0) the per-gap suppression test needs
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
        "Pearson r; one-sided permutation p, preferences permuted across the agents of each topic "
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
        "Pearson r; one-sided permutation p, openness permuted across the agents of each topic "
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


# Each test's claim: its direction (the estimate's sign it claims), or None for a claim of no difference (Tests 2, 4).
TEST_DIRECTIONS: dict[int, int | None] = {1: -1, 2: None, 3: +1, 4: None, 5: +1, 6: -1}


def rule_of_test(test: int, alpha: float) -> str:
    """The rule a test's verdict is judged by (docs/honest-results.md, "Sidedness"): one-sided in the claimed
    direction at alpha (every directional test here computes a one-sided p), or a claim of no difference."""
    direction = TEST_DIRECTIONS[test]
    return vd.no_difference_rule(alpha) if direction is None else vd.effect_rule(alpha, direction, sides=1)


def spec_of_test(test: int, test6_rule: str = "strict") -> tuple[str, str]:
    """(statistic, test) of a test for findings; Test 6's depend on the rule that ran."""
    return TEST6_POOLED_SPEC if test == 6 and test6_rule == "pooled" else TEST_SPECS[test]


def suppression_verdict(row: pd.Series, alpha: float, flags: Sequence[dg.Flag] = ()) -> Verdict:
    """ "Disagreement suppressed at this gap" (observed above expected), by the one rule: the
    one-sided Welch-type t over the conversations at the gap and at gap 0 (`suppression_t`), its p
    simulated under "no suppression" (`suppression_null_p`), each side at least MIN_SUPPRESSION."""
    n, n0 = int(row["n"]), int(row["n_gap0"]) if pd.notna(row["n_gap0"]) else 0
    if flags:
        return vd.untested(flags[0].message, +1, alpha, sides=1)
    if n0 < MIN_SUPPRESSION:
        return vd.effect(None, None, n0, MIN_SUPPRESSION, "conversations at gap 0", +1, alpha=alpha, sides=1)
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
        sides=1,  # p_null_greater / p_null_less: one-sided, in the estimate's direction
    )


def suppression_verdicts(part: pd.DataFrame, alpha: float, flags: Sequence[dg.Flag]) -> dict[int, Verdict]:
    """ "Disagreement suppressed" at each gap 1-4 of one suppression panel (gap 0 is the reference)."""
    return {int(r["gap"]): suppression_verdict(r, alpha, flags) for _, r in part.iterrows() if int(r["gap"]) > 0}


def with_verdicts(
    part: pd.DataFrame, alpha: float, flags: Sequence[dg.Flag]
) -> tuple[pd.DataFrame, dict[int, Verdict]]:
    """A suppression table with each gap's verdict (gaps 1-4; gap 0 is the reference), whether it
    holds, and the flags of its inputs; and the verdicts by gap (`suppression_verdicts`)."""
    vs = suppression_verdicts(part, alpha, flags)
    table = part.assign(
        verdict=[vs[g].label if g in vs else "" for g in part["gap"]],
        holds=pd.array([vs[g].holds if g in vs else None for g in part["gap"]], dtype="boolean"),
        flags="; ".join(f.message for f in flags),
    )
    return table, vs


def finding3_verdict(row: pd.Series, alpha: float, flags: Sequence[dg.Flag] = ()) -> Verdict:
    """Finding 3's directional claim, (1-1) pairs agree less than (5-5) pairs: one-sided
    Mann-Whitney U over conversations (`row`: gap 0 of descriptive.anchors), MIN_GROUP a side."""
    if flags:
        return vd.untested(flags[0].message, -1, alpha, sides=1)
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
        sides=1,  # p_less / p_greater: one-sided, in the estimate's direction
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
    permutation p with the agent as unit (socsim.coherence.analysis.units); the paper's conversation-level p
    stands beside it."""
    x, what = ("gap", "preference") if test == 1 else ("open_sum", "openness")
    direction = -1 if test == 1 else +1
    shown = "preference gaps" if test == 1 else "openness sums"
    const = (
        dg.near_constant(df[x], f"coherence {shown}{label}"),
        dg.near_constant(df["agreement"], f"coherence final agreement{label}"),
    )
    n = len(df)
    if n < MIN_CORRELATION or any(const):
        v = vd.effect(None, None, n, MIN_CORRELATION, "conversations", direction, alpha=alpha, sides=1)
        detail = f"needs >= {MIN_CORRELATION} conversations with varied {shown} and scores"
        return TestRow(v, detail=detail, extra=const, n=n)
    r_paper, p_paper = (float(v) for v in sps.pearsonr(df[x], df["agreement"]))
    at = units.agent_permutation(df, what, seed, permutations)
    v = vd.effect(at.p, at.r, at.agents, MIN_CORRELATION, "agents", direction, alpha=alpha, sides=1)
    unit = f"agents ({what} permuted across the agents of each topic)"
    detail = (
        f"n = {n} conversations, {at.agents} agents in {at.topics} topic(s); slope t (dyadic-robust) = "
        f"{at.t:.3g}, one-sided permutation p = {at.p:.3g} ({at.permutations} permutations, agents as unit)"
    )
    beside = f"the paper's p (conversations as unit, two-sided, no verdict): {p_paper:.3g}"
    return TestRow(v, r_paper, at.p, detail, n=at.agents, unit=unit, p_paper=p_paper, beside=beside)


def test2(df: pd.DataFrame, alpha: float, alternative: tuple[FloatArray, FloatArray] | None) -> TestRow:
    """Test 2: KS of the gap-4 scores against the inverted gap-0 scores, a "no difference" claim:
    it passes only with KS p >= alpha, power >= 0.8 against the paper's suppression and against the
    data's own "no gap effect", and the means equivalent within TEST2_MARGIN (units.test2_conditions)."""
    g4, g0 = df.loc[df["gap"] == 4, "agreement"], df.loc[df["gap"] == 0, "agreement"]
    n = min(len(g0), len(g4))
    unit = f"conversations a side (gap 0: {len(g0)}, gap 4: {len(g4)})"
    if n < MIN_GROUP:
        detail = "needs gap-0 and gap-4 pairs" if n == 0 else str(vd.too_few(n, MIN_GROUP, unit))
        return TestRow(vd.no_difference(None, None, n, MIN_GROUP, unit, alpha=alpha), detail=detail, n=n, unit=unit)
    with warnings.catch_warnings():  # ties: scipy's exact method falls back to the asymptotic one
        warnings.simplefilter("ignore", RuntimeWarning)
        ks = sps.ks_2samp(g4, 6 - g0)
    cond = units.test2_conditions(g4, g0, alpha, alternative)
    v = vd.no_difference(float(ks.pvalue), cond.power, n, MIN_GROUP, unit, alpha=alpha)
    eq = cond.equivalence
    interval = f"{eq.difference:+.2f}, {1 - 2 * alpha:.0%} interval [{eq.lo:+.2f}, {eq.hi:+.2f}]"
    if v.holds and not eq.p < alpha:
        v = Verdict(None, f"{v.reason}, but the means are not shown within +-{eq.margin:g}: {interval}", rules=v.rules)

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
            else f"{vd.too_few(n, MIN_GROUP, unit)} (" + ", ".join(f"{m} {len(g)}" for m, g in groups.items()) + ")"
        )
        v = vd.effect(None, None, n, MIN_GROUP, unit, +1, alpha=alpha, sides=1)
        return TestRow(v, detail=detail, n=n, unit=unit)
    claimed = bonferroni([mwu_p(groups["1-1"], groups[m], "greater") for m in mixed])
    directed = [directed_mwu(groups["1-1"], groups[m], +1) for m in mixed]
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
            sides=1,  # directed_mwu: one-sided, in the estimate's direction
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
    adj = bonferroni([mwu_p(a, b, "two-sided") for a, b in cells])
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
            rules=(vd.no_difference_rule(alpha),),
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
        v = vd.effect(None, None, 0, MIN_GROUP, "(1-5) conversations", -1, alpha=alpha, sides=1)
        return TestRow(v, detail="needs (1-5) pairs", n=0, unit="(1-5) conversations")
    lowest = far.loc[far["open_sum"] == far["open_sum"].min(), "open_pair"].min()
    base = far.loc[far["open_pair"] == lowest, "agreement"]
    others = far[far["open_pair"] != lowest]
    n = min(len(base), len(others))
    if len(others) == 0 or n < MIN_GROUP:
        detail = (
            f"needs (1-5) pairs at two openness pairings (only {lowest})"
            if len(others) == 0
            else f"{vd.too_few(n, MIN_GROUP, unit)} (lowest openness {lowest} {len(base)}, others {len(others)})"
        )
        v = vd.effect(None, None, n, MIN_GROUP, unit, -1, alpha=alpha, sides=1)
        return TestRow(v, detail=detail, n=n, unit=unit)
    per = {pair: g["agreement"] for pair, g in others.groupby("open_pair")}
    above = sum(float(g.mean()) > float(base.mean()) for g in per.values())
    comparable = {pair: g for pair, g in per.items() if len(g) >= MIN_GROUP}
    adj = bonferroni([mwu_p(base, g, "less") for g in comparable.values()])
    k = int((adj < alpha).sum())
    directed = [directed_mwu(base, g, -1) for g in comparable.values()]
    counts = TestRow(None, significant=k, comparisons=len(adj), n=n, unit=unit, beside=_any_reading(directed, alpha))
    detail = (
        f"lowest {lowest} (n = {len(base)}); {k} of {len(adj)} Bonferroni comparisons significant "
        f"({len(per) - len(comparable)} pairings skipped: < {MIN_GROUP}); {above} of {len(per)} pairings "
        f"above the lowest"
    )
    if rule == "pooled":
        est, p_dir = directed_mwu(base, others["agreement"], -1)
        v = vd.effect(p_dir, est, n, MIN_GROUP, unit, -1, alpha=alpha, sides=1)
        rule = f"pooled rule: the lowest openness pairing {lowest} below the other {len(others)} (1-5) pairs together"
        v = replace(v, reason=f"{rule}; {v.reason}" if v.reason else rule)
        p = mwu_p(base, others["agreement"], "less")
        text = f"pooled rule (ours): lowest vs the other {len(others)} (1-5) pairs; {detail}"
        return replace(counts, verdict=v, p=p, detail=text)
    if len(adj) == 0:
        largest = max(len(g) for g in per.values())
        unit_l = "(1-5) conversations in the largest other pairing"
        v = vd.effect(None, None, largest, MIN_GROUP, unit_l, -1, alpha=alpha, sides=1)
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
            sides=1,  # directed_mwu: one-sided, in the estimate's direction
        )
        for (pair, g), (est, _), q in zip(comparable.items(), directed, adj_dir)
    ]
    text = f"strict rule (our reading of the paper's text): {detail}"
    along = sum(1 for (est, _), q in zip(directed, adj_dir) if est < 0 and q < alpha)
    v = vd.all_of(parts)
    rule = (
        f"strict rule: the lowest openness pairing {lowest} below each of the {len(parts)} others, Bonferroni; "
        f"{along} of {len(parts)} significant"
    )
    v = replace(v, reason=f"{rule}; {v.reason}" if v.reason else rule)
    return replace(counts, verdict=v, p=float(adj.max()), detail=text)


def _test_row(test: int, o: TestRow, found: list[dg.Flag], final: Verdict, test6_rule: str) -> dict[str, Any]:
    """A test's row of the six tests table: its outcome, its inputs' flags (`found`) and its verdict."""
    raw = _raw(o.verdict)
    return {
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


def outcomes(
    df: pd.DataFrame,
    alpha: float,
    test6_rule: str = "strict",
    empty_reason: str | None = None,
    scope: str = "",
    alternative: tuple[FloatArray, FloatArray] | None = None,
    seed: int = 0,
    permutations: int = units.AGENT_PERMUTATIONS,
    topic_power_repeats: int = units.TOPIC_POWER_REPEATS,
) -> dict[int, TestRow]:
    """The six tests' outcomes on one model's conversation table, before its inputs' flags (`six_tests`
    says what each argument is)."""
    if test6_rule not in TEST6_RULES:
        raise ValueError(f"unknown coherence.test6_rule {test6_rule!r} (one of {', '.join(TEST6_RULES)})")
    label = f" ({scope})" if scope else ""
    if empty_reason is not None or len(df) == 0:
        return {t: TestRow(None, detail=empty_reason or "no conversations") for t in TEST_NAMES}
    return {
        1: correlation_test(df, 1, alpha, seed, permutations, label),
        2: test2(df, alpha, alternative),
        3: test3(df, alpha),
        4: test4(df, alpha, seed, topic_power_repeats),
        5: correlation_test(df, 5, alpha, seed, permutations, label),
        6: test6(df, alpha, test6_rule),
    }


def found_flags(tests: dict[int, TestRow], flags: dict[int, list[dg.Flag]] | None = None) -> dict[int, list[dg.Flag]]:
    """Each test's flags: those of its inputs (`flags`, test -> flags), then its own (constant gaps,
    openness sums or scores)."""
    return {t: dg.collect((flags or {}).get(t, []), *o.extra) for t, o in tests.items()}


def verdict_of(o: TestRow, found: Sequence[dg.Flag], rule: str = "") -> Verdict:
    """A test's verdict: its inputs' first flag (degenerate inputs first, even without data), else the
    test's own, else inconclusive with why the test does not apply; with `rule` (`rule_of_test`), that rule."""
    v = Verdict(None, found[0].message) if found else (o.verdict or Verdict(None, o.detail))
    return replace(v, rules=(rule,)) if rule else v


def tests_table(tests: dict[int, TestRow], found: dict[int, list[dg.Flag]], test6_rule: str) -> pd.DataFrame:
    """The six tests table: one row per test with its verdict (`verdict_of`) and its flags."""
    rows = [_test_row(t, o, found[t], verdict_of(o, found[t]), test6_rule) for t, o in tests.items()]
    return pd.DataFrame(rows, columns=TEST_COLUMNS).astype({"n": "Int64", "power": "float64", "p_paper": "float64"})


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
    """The six tests table of one model's conversation table. `test6_rule`: strict (our reading of the
    paper's text) or pooled (ours), the Test 6 row's `rule` column says which with TEST6_RULE_LABELS.
    `flags`: degeneracy flags of the inputs each test depends on; `empty_reason`: why a model without
    conversations has none; `alternative`: the paper's (gap-0, gap-4) distributions, for Test 2's power
    (`paper_suppression`; without it Test 2 cannot pass); `seed`: of the permutations (Tests 1, 4, 5)."""
    tests = outcomes(df, alpha, test6_rule, empty_reason, scope, alternative, seed, permutations, topic_power_repeats)
    return tests_table(tests, found_flags(tests, flags), test6_rule)
