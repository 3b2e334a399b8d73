"""Non-parametric bootstrap of group means (paper 001, section 3.3): draw `draw` values with
replacement, average, repeat `repeats` times; the central `level` share of the averages is the
interval."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from socsim.seeds import derive_seed


def bootstrap_means(
    values: npt.ArrayLike, draw: int, repeats: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        empty: npt.NDArray[np.float64] = np.full(repeats, np.nan)
        return empty
    idx = rng.integers(0, values.size, size=(repeats, draw))
    means: npt.NDArray[np.float64] = values[idx].mean(axis=1)
    return means


def interval(means: npt.NDArray[np.float64], level: float) -> tuple[float, float]:
    if np.isnan(means).all():
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def grouped(
    df: pd.DataFrame, by: list[str] | str, value: str, draw: int, repeats: int, level: float, seed: int
) -> pd.DataFrame:
    """One row per group: n, observed mean, bootstrap mean and interval. Seeded per group label,
    so a group's interval does not depend on which other groups exist."""
    by = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rng = np.random.default_rng([seed] + [derive_seed(0, k) for k in key])
        means = bootstrap_means(g[value].to_numpy(), draw, repeats, rng)
        lo, hi = interval(means, level)
        rows.append(
            {
                **dict(zip(by, key)),
                "n": len(g),
                "mean": float(g[value].mean()),
                "boot_mean": float(np.nanmean(means)),
                "lo": lo,
                "hi": hi,
            }
        )
    return pd.DataFrame(rows, columns=by + ["n", "mean", "boot_mean", "lo", "hi"])
