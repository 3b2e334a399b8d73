"""Permutation helpers: tests whose unit is a cluster (an agent, a topic) rather than an observation.

- `permutation_p`: a p-value from the statistic's null distribution, exact (every assignment,
  the observed one among them) or Monte Carlo ((1 + hits) / (1 + B), never 0);
- `permuted_within`: B permutations of values across units within groups (an agent's preference
  shuffled across the agents of its topic, say), so that whatever belongs to a unit (its own
  agreeableness, its number of conversations) stays with it;
- `distinct_assignments`: every distinct arrangement of a multiset of labels over units (the
  contentiousness levels of 9 topics, 3 each: 9! / (3! 3! 3!) = 1680), for an exact test;
- `pearson_rows`: Pearson r of many predictors (rows) with one outcome, vectorised;
- `dyadic_t`: the OLS slope's t with a dyadic-robust variance (each observation a pair of units, e.g. a
  conversation of two agents; observations that share a unit are correlated), vectorised over many
  predictors: studentized, a permutation of it stays valid where units differ in how many observations
  they are in (DiCiccio and Romano 2017; Aronow, Samii and Assenova 2015 for the variance);
- `mwu_counts`: the two-sided Mann-Whitney U test from the counts of an ordinal scale (what
  scipy.stats.mannwhitneyu(method="asymptotic") gives on the values), vectorised over any
  leading axes, for rank statistics over many regroupings of the same data.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from scipy import sparse, special

FloatArray = npt.NDArray[np.float64]
H = TypeVar("H", bound=Hashable)
ALTERNATIVES = ("two-sided", "greater", "less")


def permutation_p(
    observed: float, null: npt.ArrayLike, alternative: str = "two-sided", exact: bool = False, rtol: float = 1e-9
) -> float:
    """p of `observed` against the statistics `null` took under the null hypothesis.

    Monte Carlo (`exact` False; `null` are B random permutations): (1 + hits) / (1 + B), where a hit
    is a null statistic at least as extreme as the observed one. Exact (`null` holds the statistic of
    every assignment, the observed one included): hits / N. "greater": large values are extreme,
    "less": small ones, "two-sided": large |values|. Ties within `rtol` count as hits (a permutation
    that reproduces the data must not look less extreme by rounding). NaN null values never hit."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r} (one of {', '.join(ALTERNATIVES)})")
    t = np.asarray(null, dtype=float)
    if not math.isfinite(observed) or t.size == 0:
        return float("nan")
    if alternative == "two-sided":
        t, observed = np.abs(t), abs(observed)
    elif alternative == "less":
        t, observed = -t, -observed
    tol = rtol * abs(observed)  # relative: statistics near 0 (a log p, a small p) keep their order
    with np.errstate(invalid="ignore"):
        hits = int(np.sum(t >= observed - tol))
    return hits / t.size if exact else (1 + hits) / (1 + t.size)


def permuted_within(
    values: npt.ArrayLike, groups: Sequence[Hashable], size: int, rng: np.random.Generator
) -> FloatArray:
    """`size` rows, each the units' values permuted among the units of the same group (a row is one
    permutation; the unpermuted values are not among them). Seeded by `rng` alone: the groups are
    taken in order of first appearance."""
    v = np.asarray(values, dtype=float)
    code = {label: i for i, label in enumerate(dict.fromkeys(groups))}
    g = np.asarray([code[x] for x in groups], dtype=int)
    if v.shape != g.shape:
        raise ValueError(f"{v.size} values but {g.size} group labels")
    order = np.argsort(g, kind="stable")  # each group a contiguous block: permuted in place
    cuts = np.flatnonzero(np.diff(g[order])) + 1
    block = np.tile(v[order], (size, 1))
    for start, end in zip(np.r_[0, cuts], np.r_[cuts, v.size], strict=True):
        view = block[:, start:end]
        rng.permuted(view, axis=1, out=view)
    out = np.empty_like(block)
    out[:, order] = block
    return out


def n_assignments(labels: Sequence[Hashable]) -> int:
    """How many distinct arrangements the multiset `labels` has: n! / prod(count!)."""
    counts = Counter(labels).values()
    return math.factorial(len(labels)) // math.prod(math.factorial(c) for c in counts)


def distinct_assignments(labels: Sequence[H], limit: int = 100_000) -> list[tuple[H, ...]]:
    """Every distinct arrangement of the multiset `labels` over len(labels) units, the observed order
    first; an error above `limit` (use random permutations there)."""
    n = n_assignments(labels)
    if n > limit:
        raise ValueError(f"{n} distinct assignments exceed the limit of {limit}")
    values = sorted(set(labels), key=repr)
    out: list[tuple[H, ...]] = [tuple(labels)]

    def fill(prefix: list[H], left: Counter[H]) -> None:
        if not any(left.values()):
            if tuple(prefix) != out[0]:
                out.append(tuple(prefix))
            return
        for v in values:
            if left[v]:
                left[v] -= 1
                fill([*prefix, v], left)
                left[v] += 1

    fill([], Counter(labels))
    return out


def pearson_rows(x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray:
    """Pearson r of each row of `x` (B, n) with `y` (n,); NaN for a row without variance."""
    xa, ya = np.atleast_2d(np.asarray(x, dtype=float)), np.asarray(y, dtype=float)
    xc = xa - xa.mean(axis=1, keepdims=True)
    yc = ya - ya.mean()
    den = np.sqrt((xc**2).sum(axis=1) * (yc**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r: FloatArray = (xc @ yc) / den
    return np.where(den > 0, r, np.nan)


def dyad_matrices(sides: npt.ArrayLike) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """Incidence matrices of observations (rows of `sides`: the two units of each, as indices) on
    units (n x units) and on dyads, unordered unit pairs (n x dyads)."""
    sd = np.asarray(sides, dtype=np.int64)
    n, units = sd.shape[0], int(sd.max()) + 1 if sd.size else 0
    ones = np.ones(2 * n)
    by_unit = sparse.csr_matrix((ones, (np.repeat(np.arange(n), 2), sd.ravel())), shape=(n, units))
    key = sd.min(axis=1) * max(units, 1) + sd.max(axis=1)
    _, dyad = np.unique(key, return_inverse=True)
    by_dyad = sparse.csr_matrix((np.ones(n), (np.arange(n), dyad)), shape=(n, int(dyad.max()) + 1 if n else 0))
    return by_unit, by_dyad


def dyadic_t(x: npt.ArrayLike, y: npt.ArrayLike, by_unit: sparse.csr_matrix, by_dyad: sparse.csr_matrix) -> FloatArray:
    """t of the OLS slope of `y` on each row of `x` (B, n) with the dyadic-robust variance: the sum of
    s_c s_c' over every pair of observations that share a unit (c = c' included), s_c = (x_c - mean x)
    times the residual, computed as sum over units of (their s summed)^2 minus the same over dyads
    (a pair sharing both units is counted twice by the units). NaN where that sum is not positive."""
    xa = np.atleast_2d(np.asarray(x, dtype=float))
    xc = xa - xa.mean(axis=1, keepdims=True)
    ya = np.asarray(y, dtype=float)
    yc = ya - ya.mean()
    sxy, sxx = xc @ yc, (xc**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = sxy / sxx
        s = xc * (yc[None, :] - slope[:, None] * xc)
        per_unit = np.asarray((by_unit.T @ s.T).T)
        per_dyad = np.asarray((by_dyad.T @ s.T).T)
        v = (per_unit**2).sum(axis=1) - (per_dyad**2).sum(axis=1)
        t = sxy / np.sqrt(np.where(v > 0, v, np.nan))
    return np.asarray(t, dtype=float)


def mwu_counts(a: npt.ArrayLike, b: npt.ArrayLike, log: bool = False) -> tuple[FloatArray, FloatArray]:
    """(U of a, two-sided p) of the Mann-Whitney U test of two samples given as counts over the same
    ordered categories (last axis), with the tie correction and continuity correction of
    scipy.stats.mannwhitneyu(method="asymptotic"). All values tied: p = 1. NaN where a side is empty.
    `log`: the natural log of p instead, without underflow (p below 1e-308 keeps its order)."""
    ca, cb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    shape = np.broadcast_shapes(ca.shape[:-1], cb.shape[:-1])
    n1, n2, u1, tie_term, below = (np.zeros(shape) for _ in range(5))
    for k in range(ca.shape[-1]):  # a loop over the few categories: fast on large leading axes
        x, y = ca[..., k], cb[..., k]
        n1, n2 = n1 + x, n2 + y
        u1 += x * (below + 0.5 * y)  # pairs with a above b, ties half
        below += y
        tie_term += (x + y) ** 3 - (x + y)
    n = n1 + n2
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (np.maximum(u1, n1 * n2 - u1) - n1 * n2 / 2 - 0.5) / s
    if log:
        p = np.minimum(np.log(2) + special.log_ndtr(-z), 0.0)
        p = np.where((n1 > 0) & (n2 > 0), np.where(s > 0, p, 0.0), np.nan)
    else:
        p = np.clip(2 * special.ndtr(-z), 0.0, 1.0)  # 2 * the normal survival function, as scipy
        p = np.where((n1 > 0) & (n2 > 0), np.where(s > 0, p, 1.0), np.nan)
    return np.asarray(u1, dtype=float), np.asarray(p, dtype=float)


def assignment_matrix(assignments: Sequence[Sequence[Hashable]], levels: Sequence[Hashable]) -> FloatArray:
    """One-hot (A, units, levels) of label assignments (for regrouping counts with einsum)."""
    index = {v: i for i, v in enumerate(levels)}
    out = np.zeros((len(assignments), len(assignments[0]) if assignments else 0, len(levels)))
    for a, row in enumerate(assignments):
        for u, label in enumerate(row):
            out[a, u, index[label]] = 1.0
    return out


def random_assignments(labels: Sequence[Hashable], size: int, rng: np.random.Generator) -> list[tuple[Hashable, ...]]:
    """`size` random arrangements of `labels` (for a Monte Carlo test where enumeration is too large)."""
    arr = list(labels)
    return [tuple(arr[i] for i in rng.permutation(len(arr))) for _ in range(size)]


def level_pairs(n_levels: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(n_levels), 2))
