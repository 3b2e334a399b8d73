"""The one verdict rule of every study (README, "How a finding is judged").

A finding **holds** only when a test whose unit matches the claim (one value per discussion, group
or simulation where observations nest), with at least the minimum n, rejects at ALPHA in the
claimed direction. Sidedness, one rule for every directional claim: it is tested **one-sided in the claimed
direction**, at ALPHA / 2 = 0.025 where its test gives a two-sided p (two-sided p < 0.05 with the estimate in
the claimed direction: most tests), at the study's one-sided level where it gives a one-sided p (coherence: the
paper's p < .01, one-sided). A claim of any difference is judged at ALPHA (its p: an F test's, a two-sided
t's). Each verdict carries its `rule` (`effect_rule`), which its finding's test text states. Otherwise:

- too little data, or a test that could not be computed: "inconclusive (n = 2 discussions, needs 3)";
- a degenerate input (socsim.stats.degeneracy): the flag's message, never a verdict;
- a test that does not reject, or rejects in the other direction: "inconclusive (...)", or "no"
  when it rejects in the opposite direction (the data say the reverse of the claim);
- a claim of *no difference* (coherence Test 2 and the like) holds only when the test does not reject
  and its power to find the paper's effect at the observed n is at least POWER; low power is
  "inconclusive (power 0.31 at n = 5 ...)", never a pass.

A claim made of k parts (`all_of`) is judged at the level its parts imply:

- "yes" when every part holds at its own alpha. That is an intersection-union test (Berger 1982): the
  claim is false when any one part is, and a "yes" then needs that part's own test to reject, so on any
  null its rate is at most one part's (alpha / 2 for a two-sided test at alpha read in its direction),
  with no correction for k;
- "no" when a part says the reverse at alpha / k (Bonferroni over the claim's k parts): a "no" needs
  only one part, a union of k tests, so without the correction a null would say "no" k times as
  often. A part whose p is already Bonferroni-adjusted over a family of m tests (`family`) needs
  alpha * min(m, k) / k: the same alpha / k on its raw p (or less, when m > k). A part reversed at
  alpha but not at that level is "inconclusive", and says so.

`Verdict.label` is what a table cell, a vs_paper row and a figure panel print.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from socsim.stats import degeneracy as dg

ALPHA = 0.05
POWER = 0.8
# The fewest units a per-unit test gives a verdict on (discussions a strategy, groups, topics, ...), unless
# the claim's test needs more (a sign-flip test over topics needs `signflip.min_clusters(ALPHA)`).
MIN_UNITS = 3


@dataclass(frozen=True)
class Verdict:
    holds: bool | None  # None: inconclusive (or a degenerate input)
    reason: str = ""
    # What a test's verdict was judged on (`effect`, `no_difference`): its p, its alpha and the number of
    # tests that p is already Bonferroni-adjusted over (1: a single test's p). None where no p was
    # computed (too few units, a degenerate input, a verdict built by hand): `all_of` cannot re-judge it.
    p: float | None = None
    alpha: float | None = None
    family: int = 1
    # The rules a verdict was judged by (sidedness and level; a claim of parts: each part's once), as its finding's
    # test text states them (`rule`, `with_rule`, `Finding.test_text`): () where a verdict was built by hand and its
    # test text says how it was judged. Set by `effect`, `no_difference`, `untested` and `all_of`.
    rules: tuple[str, ...] = ()

    @property
    def rule(self) -> str:
        """The rules in words, as a test text states them."""
        return RULE_SEPARATOR.join(self.rules)

    @property
    def degenerate(self) -> bool:
        return self.holds is None and self.reason.startswith("degenerate input")

    @property
    def label(self) -> str:
        if self.degenerate:
            return self.reason
        if self.holds is True:
            return "yes"
        return f"{'no' if self.holds is False else 'inconclusive'} ({self.reason})" if self.reason else "inconclusive"


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(float(x))


def _p(p: float) -> str:
    return f"p = {p:.3g}"


def too_few(n: int, need: int, unit: str) -> str | None:
    """The rule's words when `n` units are fewer than a test needs ("n = 2 topics, needs 3"), else None."""
    return f"n = {n} {unit}, needs {need}" if n < need else None


def inconclusive_too_few(n: int, need: int, unit: str) -> Verdict | None:
    """The verdict when `n` units are too few ("inconclusive (n = 2 topics, needs 3)"), else None."""
    why = too_few(n, need, unit)
    return Verdict(None, why) if why else None


def effect_rule(alpha: float, direction: int, sides: int = 2) -> str:
    """The sidedness and level of an effect's verdict, as a finding's test text states it (docs/honest-results.md):
    a directional claim is one-sided in the claimed direction, at alpha / 2 for a two-sided p read in its
    direction, at alpha for a one-sided p; a claim of any difference (an F test, a two-sided t) at alpha."""
    if direction == 0:
        return f"any difference: p < {alpha:g}"
    if sides == 1:
        return f"one-sided in the claimed direction, p < {alpha:g}"
    return f"one-sided in the claimed direction at {alpha / 2:g}: two-sided p < {alpha:g}, estimate in that direction"


def no_difference_rule(alpha: float = ALPHA, min_power: float = POWER) -> str:
    """How a claim of no difference is judged, as its finding's test text states it."""
    return f"no difference: no rejection at {alpha:g} and power >= {min_power:g}"


def untested(reason: str, direction: int = 0, alpha: float = ALPHA, sides: int = 2) -> Verdict:
    """An inconclusive verdict of an effect claim that could not be tested (a group or a condition absent), with
    the rule it is judged by where it can be (`effect_rule`), so that its finding's test text still states it."""
    return Verdict(None, reason, rules=(effect_rule(alpha, direction, sides),))


def effect(
    p: float | None,
    estimate: float | None,
    n: int,
    need: int,
    unit: str,
    direction: int = 0,
    flags: Sequence[dg.Flag] = (),
    alpha: float = ALPHA,
    family: int = 1,
    sides: int = 2,
) -> Verdict:
    """A claim of an effect: `direction` +1 (estimate > 0 claimed), -1 (< 0) or 0 (any difference).
    `family`: the number of tests `p` is already Bonferroni-adjusted over (1: a single test's p).
    `sides`: 2 when `p` is two-sided (a directional claim is then judged one-sided at alpha / 2: p < alpha
    with the estimate in the claimed direction), 1 when it is one-sided in the estimate's direction
    (`socsim.stats.ranks.directed_mwu`: one-sided at alpha). The comparison is the same; `rule` says which."""
    if sides not in (1, 2) or (sides == 1 and direction == 0):
        raise ValueError(f"sides must be 2, or 1 for a directional claim, not {sides} (direction {direction})")
    rules = (effect_rule(alpha, direction, sides),)
    if flags:
        return Verdict(None, flags[0].message, rules=rules)
    few = inconclusive_too_few(n, need, unit)
    if few:
        return replace(few, rules=rules)
    if not _finite(p) or not _finite(estimate):
        why = f"the test could not be computed: too few values or no variance (n = {n} {unit})"
        return Verdict(None, why, rules=rules)
    assert p is not None and estimate is not None
    p = float(p)

    def judged(holds: bool | None, reason: str) -> Verdict:
        return Verdict(holds, reason, p, alpha, family, rules)

    against = direction != 0 and estimate * direction <= 0
    if against:
        if p < alpha:
            return judged(False, f"significant in the opposite direction, {_p(p)}, n = {n} {unit}")
        return judged(None, f"estimate in the opposite direction, {_p(p)}, n = {n} {unit}")
    if p < alpha:
        return judged(True, f"{_p(p)} < {alpha:g}, n = {n} {unit}")
    return judged(None, f"{_p(p)} >= {alpha:g}, n = {n} {unit}")


def no_difference(
    p: float | None,
    power: float | None,
    n: int,
    need: int,
    unit: str,
    flags: Sequence[dg.Flag] = (),
    alpha: float = ALPHA,
    min_power: float = POWER,
    family: int = 1,
) -> Verdict:
    """A claim that two things do not differ: it holds only when the test does not reject and had
    power >= `min_power` to find the effect it looks for at the observed n. `family` as in `effect`."""
    rules = (no_difference_rule(alpha, min_power),)
    if flags:
        return Verdict(None, flags[0].message, rules=rules)
    few = inconclusive_too_few(n, need, unit)
    if few:
        return replace(few, rules=rules)
    if not _finite(p):
        return Verdict(None, f"the test could not be computed (n = {n} {unit})", rules=rules)
    assert p is not None
    p = float(p)

    def judged(holds: bool | None, reason: str) -> Verdict:
        return Verdict(holds, reason, p, alpha, family, rules)

    if p < alpha:
        return judged(False, f"a difference was found, {_p(p)}, n = {n} {unit}")
    if not _finite(power) or power is None or power < min_power:
        shown = "unknown" if not _finite(power) or power is None else f"{power:.2f}"
        return judged(None, f"{_p(p)} but power {shown} < {min_power:g} at n = {n} {unit}")
    return judged(True, f"{_p(p)} with power {power:.2f} at n = {n} {unit}")


def named(part: str, v: Verdict) -> Verdict:
    """A part's verdict with its name in front of the reason ("weak - none: p = ..."), keeping what it
    was judged on (p, alpha, family) for `all_of`; a degenerate input keeps its own message."""
    return v if v.degenerate or not v.reason else replace(v, reason=f"{part}: {v.reason}")


def no_level(v: Verdict, k: int) -> float | None:
    """The p below which part `v` of a claim of `k` parts says "no" for the whole claim (`all_of`):
    alpha * min(family, k) / k, Bonferroni over the claim's parts on top of the family `v`'s p is
    already adjusted over. None where `v` carries no p (it cannot be re-judged)."""
    if v.p is None or v.alpha is None:
        return None
    return v.alpha * min(max(v.family, 1), k) / k


def all_of(verdicts: Iterable[Verdict]) -> Verdict:
    """A claim made of k parts, at the level its parts imply (module docstring): "yes" when every part
    holds (an intersection-union test: no correction); "no" when a part says the reverse at
    `no_level` (alpha / k on its raw p, Bonferroni over the claim's parts; a part built without its p
    keeps its "no"); else "inconclusive", the first part that is not a pass saying why (a part reversed
    at its own alpha but not at the claim's level says both). A degenerate part comes first. The
    result carries a p: for "yes" the largest part's (the intersection-union p), for "no" the
    reversed part's Bonferroni-adjusted p, so a claim can be a part of another."""
    vs = list(verdicts)
    if not vs:
        return Verdict(None, "nothing to test")
    rules = joined_rules(vs)
    for v in vs:
        if v.degenerate:
            return replace(v, rules=rules)
    k = len(vs)
    judged: list[Verdict] = []
    for v in vs:
        level = no_level(v, k) if v.holds is False else None
        if level is not None and v.p is not None and v.p >= level:
            v = replace(
                v,
                holds=None,
                reason=f'{v.reason}; not at the claim\'s level ({k} parts, Bonferroni): a "no" needs p < {level:.3g}',
            )
        judged.append(v)
    for v in judged:
        if v.holds is False:
            level = no_level(v, k)
            if level is None or v.p is None or v.alpha is None:
                return replace(v, rules=rules)
            return replace(v, p=min(1.0, v.p * v.alpha / level), family=1, rules=rules)
    for v in judged:
        if v.holds is None:
            return replace(v, rules=rules)
    ps = [v.p for v in vs if v.p is not None]
    alphas = [v.alpha for v in vs if v.alpha is not None]
    whole = len(ps) == k and len(alphas) == k  # every part's p known: the intersection-union p
    reason = "; ".join(v.reason for v in vs if v.reason)
    return Verdict(True, reason, max(ps) if whole else None, min(alphas) if whole else None, rules=rules)


RULE_SEPARATOR = " / "


def with_rule(test: str, rule: str) -> str:
    """A test's text with the rule its verdict was judged by appended (`Verdict.rule`), unless it says it already."""
    if not rule or rule in test:
        return test
    return f"{test}; {rule}" if test else rule


def joined_rules(verdicts: Sequence[Verdict]) -> tuple[str, ...]:
    """The rules of a claim's parts, each once in order (a nested claim's parts' included)."""
    return tuple(dict.fromkeys(r for v in verdicts for r in v.rules))


def power_t(d: float, n: int, two_sample_n2: int | None = None, alpha: float = ALPHA) -> float | None:
    """Power of a two-sided t test to find a standardised effect `d` (Cohen's d): one-sample / paired
    with `n`, or two-sample with group sizes `n` and `two_sample_n2` (noncentral t)."""
    if not math.isfinite(d):
        return None
    if two_sample_n2 is None:
        df, nc = n - 1, d * math.sqrt(n)
    else:
        df, nc = n + two_sample_n2 - 2, d * math.sqrt(n * two_sample_n2 / (n + two_sample_n2))
    if df < 1:
        return None
    crit = sps.t.ppf(1 - alpha / 2, df)
    p = float(sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc))
    if math.isfinite(p):
        return p
    # scipy's noncentral t gives no finite answer for large df and nc: the normal limit is exact there
    z = sps.norm.ppf(1 - alpha / 2)
    return float(sps.norm.sf(z - nc) + sps.norm.cdf(-z - nc))


Sample = Sequence[float] | npt.NDArray[np.float64]


def _var0(x: npt.NDArray[np.float64]) -> bool:
    return len(x) < 2 or float(np.var(x)) <= dg.VARIANCE_TOL


def welch(a_: Sample, b_: Sample) -> tuple[float | None, float | None]:
    """(mean a - mean b, two-sided Welch p); p None where a sample has fewer than 2 values or neither
    has any variance (the test is undefined: the verdict is inconclusive, never a pass)."""
    a, b = np.asarray(a_, dtype=float), np.asarray(b_, dtype=float)
    if not len(a) or not len(b):
        return None, None
    diff = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2 or (_var0(a) and _var0(b)):
        return diff, None
    return diff, float(sps.ttest_ind(a, b, equal_var=False).pvalue)


def one_sample(x_: Sample, mu: float) -> tuple[float | None, float | None]:
    """(mean x - mu, two-sided one-sample t p); p None for fewer than 2 values or a constant sample
    (the test is undefined: inconclusive, as for welch)."""
    x = np.asarray(x_, dtype=float)
    if not len(x):
        return None, None
    diff = float(x.mean() - mu)
    if len(x) < 2 or _var0(x):
        return diff, None
    return diff, float(sps.ttest_1samp(x, mu).pvalue)
