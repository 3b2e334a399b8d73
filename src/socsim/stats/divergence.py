"""How far one distribution of per-discussion scores lies from another: paper 000's Jensen-Shannon divergence
(the revised release's `src/eval_dataset_analysis.py`), with an interval from resampling the units.

- `js(a, b)`: each sample's Gaussian KDE (Scott's bandwidth) on `POINTS` evenly spaced points of [0, 1], each
  normalised to sum 1, and the squared Jensen-Shannon distance between them (natural log: 0 to ln 2 = 0.693).
  Two departures from the authors' code, both where theirs gives no usable number: where Scott's bandwidth gives
  no density on the grid (a sample without spread has a singular KDE; one with nearly none, a density that
  vanishes between the grid's points) the bandwidth is one grid step, and densities below 1e-200 count as 0 (a
  denormal density made their divergence infinite).
- `resampled` and `interval`: the percentile interval of `js` over resamples of both samples' units (discussions),
  each with replacement at its own size; `permutation_p`: the permutation test of "one distribution", which the
  verdicts also need (the JS of two small samples of one distribution lies above 0, and so does its interval).
- `CLOSE`: the margin of "closely matches": the divergence between two normal distributions of one spread whose
  means lie half a standard deviation apart (Cohen's medium effect), 0.0303 (docs/facilitation.md defends it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.spatial.distance import jensenshannon
from scipy.stats import norm

POINTS = 50
GRID = np.linspace(0.0, 1.0, POINTS)
STEP = float(GRID[1] - GRID[0])  # the least bandwidth
TINY = 1e-200
SHIFT_SD = 0.5  # the margin's shift between two normals, in standard deviations


def _finite(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    v = np.asarray(x, dtype=float)
    out: npt.NDArray[np.float64] = v[np.isfinite(v)]
    return out


def mass(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A sample's KDE on GRID as probability masses (NaNs dropped; at least one value): Scott's bandwidth (scipy's
    `gaussian_kde`, the authors' estimator); one grid step (`STEP`) only where that gives no density on the grid
    (a sample without spread, or with so little that its density vanishes between the grid's points)."""
    v = _finite(x)
    if v.size == 0:
        raise ValueError("no finite value to estimate a density from")
    scott = float(np.std(v, ddof=1)) * v.size ** (-1 / 5) if v.size > 1 else 0.0
    p = _density(v, scott) if scott > 0 else np.zeros(GRID.size)
    if not p.sum() > 0:
        p = _density(v, STEP)
    if not p.sum() > 0:
        raise ValueError(f"the sample's density vanishes on [0, 1] (values from {v.min():.3g} to {v.max():.3g})")
    out: npt.NDArray[np.float64] = p / p.sum()
    return out


def _density(v: npt.NDArray[np.float64], bw: float) -> npt.NDArray[np.float64]:
    """The Gaussian KDE of `v` with bandwidth `bw` on GRID, densities below TINY as 0."""
    p = norm.pdf(GRID[:, None], loc=v[None, :], scale=bw).mean(axis=1)
    out: npt.NDArray[np.float64] = np.where(p < TINY, 0.0, p)
    return out


def js(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """The authors' divergence of two samples (NaN when either has fewer than two finite values)."""
    a_, b_ = _finite(a), _finite(b)
    if a_.size < 2 or b_.size < 2:
        return float("nan")
    return float(jensenshannon(mass(a_), mass(b_)) ** 2)


def resampled(
    a: npt.ArrayLike, b: npt.ArrayLike, rng: np.random.Generator, repeats: int = 1000
) -> npt.NDArray[np.float64]:
    """`js` over `repeats` resamples of both samples (each with replacement, at its own size)."""
    a_, b_ = _finite(a), _finite(b)
    out = np.full(repeats, np.nan)
    if a_.size < 2 or b_.size < 2:
        return out
    for i in range(repeats):
        out[i] = js(rng.choice(a_, a_.size), rng.choice(b_, b_.size))
    return out


def permutation_p(a: npt.ArrayLike, b: npt.ArrayLike, rng: np.random.Generator, repeats: int = 1000) -> float:
    """The permutation p of "one distribution": the share of relabellings of the pooled units (each side keeping
    its size) whose `js` is at least the observed one, counting the observed labelling ((1 + hits) / (1 + repeats)).
    It guards the interval against the estimator's upward bias on few units: two samples of one distribution give
    a JS above 0, the more so the fewer they are."""
    a_, b_ = _finite(a), _finite(b)
    observed = js(a_, b_)
    if not np.isfinite(observed):
        return float("nan")
    pooled = np.concatenate([a_, b_])
    hits = 0
    for _ in range(repeats):
        p = rng.permutation(pooled)
        hits += js(p[: a_.size], p[a_.size :]) >= observed - 1e-15
    return (1 + hits) / (1 + repeats)


def interval(draws: npt.NDArray[np.float64], level: float = 0.95) -> tuple[float, float] | None:
    """The central `level` share of the finite draws, or None without any."""
    d = draws[np.isfinite(draws)]
    if d.size == 0:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(d, [tail, 100 - tail])
    return float(lo), float(hi)


def normal_js(shift_sd: float) -> float:
    """The divergence (natural log) between N(0, 1) and N(shift_sd, 1), by integration on a fine grid."""
    x = np.linspace(-12.0, 12.0 + shift_sd, 200_001)
    p, q = norm.pdf(x), norm.pdf(x, loc=shift_sd)
    m = (p + q) / 2
    dx = x[1] - x[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_p = np.where(p > 0, p * np.log(p / m), 0.0).sum() * dx
        kl_q = np.where(q > 0, q * np.log(q / m), 0.0).sum() * dx
    return float((kl_p + kl_q) / 2)


CLOSE = round(normal_js(SHIFT_SD), 4)
