"""Simulated power of rank tests on an ordinal scale (scores 1..K), and the latent shifts that
define their alternatives.

- `moved`, `latent_shift`: a K-point distribution moved on a latent normal scale (ordered probit:
  its cumulative probabilities are the latent thresholds), by a shift or until its mean has moved by
  d of its SD. Scores the distribution never gives stay impossible, so a shift cannot leave the
  observed range. What a simulated power of a rank test (Mann-Whitney U, KS) is simulated against.
- `ks_power`: the power of scipy's two-sample KS test (ks_2samp) at given group sizes to find the
  difference of two K-point distributions, simulated (seeded by the sizes, cached). A t test's
  power would overstate a KS test's on 5-point scores (0.99 against about 0.3 at n = 10 a side).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import numpy.typing as npt
from scipy import stats as sps
from scipy.optimize import brentq

from socsim.stats.degeneracy import VARIANCE_TOL

FloatArray = npt.NDArray[np.float64]
KS_POWER_REPEATS = 500  # simulated samples per power
KS_POWER_CAP = 200  # group sizes above this are simulated at this size (power is ~1 there)
KS_POWER_SEED = 20  # with the two group sizes: the simulation's seed


def _scores(k: int) -> npt.NDArray[np.int64]:
    return np.arange(1, k + 1)


# -- latent shifts (ordered probit) ----------------------------------------------------------------


def moved(p: npt.ArrayLike, delta: float) -> FloatArray:
    """The K-point distribution `p` moved by `delta` on a latent normal scale whose thresholds are
    its cumulative probabilities (delta > 0: up). Scores `p` never gives stay impossible."""
    q = np.asarray(p, float)
    tau = sps.norm.ppf(np.clip(np.cumsum(q)[:-1], 0.0, 1.0))  # +-inf where the cumulative is 0 or 1
    cum = np.concatenate([[0.0], sps.norm.cdf(tau - delta), [1.0]])
    return np.asarray(np.diff(cum), dtype=np.float64)


def latent_shift(p: npt.ArrayLike, d: float) -> float | None:
    """The latent shift that moves the mean of `p` by `d` of its SD; None where the observed range
    cannot hold the new mean (or `p` has no spread)."""
    q = np.asarray(p, float) / float(np.sum(p))
    scores = _scores(q.size)
    mean = float((scores * q).sum())
    sd = float(np.sqrt(((scores - mean) ** 2 * q).sum()))
    if sd <= VARIANCE_TOL:
        return None
    if d == 0:
        return 0.0
    target, seen = mean + d * sd, scores[q > 0]
    if not seen.min() < target < seen.max():
        return None
    return float(brentq(lambda x: float((scores * moved(q, x)).sum()) - target, -40.0, 40.0, xtol=1e-10))


def shifted(p: npt.ArrayLike, d: float) -> FloatArray | None:
    """The K-point distribution `p` moved on the latent scale until its mean has moved by `d` of its
    SD (d > 0 up, d < 0 down); None where it would have to leave the observed range (or `p` has no
    spread)."""
    q = np.asarray(p, float) / float(np.sum(p))
    delta = latent_shift(q, d)
    return None if delta is None else moved(q, delta)


# -- the two-sample KS test ------------------------------------------------------------------------


def ks_d(c1: FloatArray, c2: FloatArray) -> FloatArray:
    """Two-sample KS D of score counts (rows): the largest gap between the two cumulative shares."""
    f1 = np.cumsum(c1, axis=-1) / c1.sum(axis=-1, keepdims=True)
    f2 = np.cumsum(c2, axis=-1) / c2.sum(axis=-1, keepdims=True)
    out: FloatArray = np.abs(f1 - f2).max(axis=-1)
    return out


def _samples(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.repeat(_scores(counts.size), counts)


@functools.lru_cache(maxsize=1024)
def _ks_power(
    p_ref: tuple[float, ...],
    p_test: tuple[float, ...],
    n_ref: int,
    n_test: int,
    alpha: float,
    repeats: int,
    mirror: bool,
    seed: int,
) -> float:
    rng = np.random.default_rng([seed, n_ref, n_test])
    c_ref = rng.multinomial(n_ref, np.asarray(p_ref), size=repeats)
    c_test = rng.multinomial(n_test, np.asarray(p_test), size=repeats)
    if mirror:
        c_ref = c_ref[:, ::-1]  # K + 1 - s
    lattice = np.rint(ks_d(c_test.astype(float), c_ref.astype(float)) * n_ref * n_test).astype(np.int64)
    p_of: dict[int, float] = {}
    with warnings.catch_warnings():  # ties: scipy's exact method falls back to the asymptotic one
        warnings.simplefilter("ignore", RuntimeWarning)
        for h in np.unique(lattice):  # scipy's KS p depends on D (and the sizes) alone
            i = int(np.flatnonzero(lattice == h)[0])
            p_of[int(h)] = float(sps.ks_2samp(_samples(c_test[i]), _samples(c_ref[i])).pvalue)
    return float(np.mean([p_of[int(h)] < alpha for h in lattice]))


def ks_power(
    p_ref: npt.ArrayLike,
    p_test: npt.ArrayLike,
    n_ref: int,
    n_test: int,
    alpha: float,
    repeats: int = KS_POWER_REPEATS,
    mirror: bool = False,
    seed: int = KS_POWER_SEED,
) -> float | None:
    """Simulated power of scipy's two-sample KS test of a `test` sample (n_test scores drawn from
    `p_test`) against a `ref` sample (n_ref from `p_ref`; `mirror`: each score s taken as K + 1 - s)
    at level `alpha`: the share of `repeats` simulated pairs of samples it rejects. Seeded by `seed`
    and the sizes (capped at KS_POWER_CAP), cached. None below two scores a side."""
    if n_ref < 2 or n_test < 2:
        return None
    a, b = (tuple(float(x) for x in np.asarray(p, float) / np.sum(p)) for p in (p_ref, p_test))
    caps = min(n_ref, KS_POWER_CAP), min(n_test, KS_POWER_CAP)
    return _ks_power(a, b, *caps, float(alpha), int(repeats), bool(mirror), int(seed))
