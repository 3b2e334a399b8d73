"""The coherence study's numbers that the paper reports outside Tables 3 and 4 (issue 34, item 6):

- `anchors` (Fig. 6, Finding 3): per gap 0-3, the mean agreement of the pair anchored at 5 minus the
  pair anchored at 1 ((5-5) - (1-1) at gap 0, (2-5) - (1-4) at gap 3; the paper: 0.62 and 0.33),
  with a one-sided Mann-Whitney U of "anchored at 1 agrees less" (conversations as unit, as Test 3).
- `contentiousness_vs_neutral` (Fig. 7, "11 of 15 preference pairs at C = 3 fall outside the
  neutral baseline's confidence interval"): each preference pair's bootstrap mean at C = 2 and 3
  against its neutral (C = 1) bootstrap interval.
- `self_bleu_histogram` (Fig. 9a): agents per Self-BLEU range, in bins of a third of the filter's
  threshold (so the threshold is a bin edge), and `removed_share` (the paper: 4.18 % of the
  conversations removed).
- `final_judgments`: per agent model, the conversations whose final judgment did not parse or
  judged an empty window; they take no part in any test, and are counted, not dropped silently.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

ANCHOR_GAPS = (0, 1, 2, 3)
ANCHOR_COLUMNS = [
    "model",
    "gap",
    "anchored_at_1",
    "n_at_1",
    "mean_at_1",
    "anchored_at_5",
    "n_at_5",
    "mean_at_5",
    "difference",
    "u_estimate",
    "p_less",
    "p_greater",
]


def anchor_pairs(gap: int) -> tuple[str, str]:
    """The preference pairs of one gap anchored at 1 and at 5: (1, 1 + gap) and (5 - gap, 5)."""
    return f"1-{1 + gap}", f"{5 - gap}-5"


def _one_sided(a: pd.Series, b: pd.Series) -> tuple[float, float, float]:
    """(U / (n_a n_b) - 1/2, p of a < b, p of a > b), one-sided Mann-Whitney U; NaN below two a side."""
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan, math.nan
    est = float(sps.mannwhitneyu(a, b).statistic) / (len(a) * len(b)) - 0.5
    less = float(sps.mannwhitneyu(a, b, alternative="less").pvalue)
    greater = float(sps.mannwhitneyu(a, b, alternative="greater").pvalue)
    return est, less, greater


def anchors(df: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Fig. 6's comparison per model and gap 0-3 (module docstring); every model keeps its rows."""
    rows: list[dict[str, Any]] = []
    for model in models:
        g = df[df["model"] == model] if len(df) else df
        for gap in ANCHOR_GAPS:
            at1, at5 = anchor_pairs(gap)
            a = g.loc[g["pref_pair"] == at1, "agreement"] if len(g) else pd.Series(dtype=float)
            b = g.loc[g["pref_pair"] == at5, "agreement"] if len(g) else pd.Series(dtype=float)
            m1 = float(a.mean()) if len(a) else math.nan
            m5 = float(b.mean()) if len(b) else math.nan
            est, less, greater = _one_sided(a, b)
            rows.append(
                {
                    "model": model,
                    "gap": gap,
                    "anchored_at_1": at1,
                    "n_at_1": len(a),
                    "mean_at_1": m1,
                    "anchored_at_5": at5,
                    "n_at_5": len(b),
                    "mean_at_5": m5,
                    "difference": m5 - m1,
                    "u_estimate": est,
                    "p_less": less,
                    "p_greater": greater,
                }
            )
    return pd.DataFrame(rows, columns=ANCHOR_COLUMNS)


VS_NEUTRAL_COLUMNS = [
    "model",
    "subset",
    "pref_pair",
    "contentiousness",
    "boot_mean",
    "neutral_lo",
    "neutral_hi",
    "outside",
    "side",
]


def contentiousness_vs_neutral(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each preference pair's bootstrap mean at C > 1 against its neutral (C = 1) interval, for all
    agents and for B = 2 (`tables`: subset -> a bootstrap_by_pref_pair_contentiousness table)."""
    rows: list[dict[str, Any]] = []
    for subset, t in tables.items():
        if not len(t):
            continue
        for (model, pair), g in t.groupby(["model", "pref_pair"], sort=True):
            neutral = g[g["contentiousness"] == 1].dropna(subset=["lo", "hi"])
            if not len(neutral):
                continue
            lo, hi = float(neutral["lo"].iloc[0]), float(neutral["hi"].iloc[0])
            for _, r in g[g["contentiousness"] > 1].sort_values("contentiousness").iterrows():
                m = float(r["boot_mean"])
                side = "above" if m > hi else ("below" if m < lo else "")
                rows.append(
                    {
                        "model": model,
                        "subset": subset,
                        "pref_pair": pair,
                        "contentiousness": int(r["contentiousness"]),
                        "boot_mean": m,
                        "neutral_lo": lo,
                        "neutral_hi": hi,
                        "outside": bool(side),
                        "side": side,
                    }
                )
    return pd.DataFrame(rows, columns=VS_NEUTRAL_COLUMNS)


def outside_count(table: pd.DataFrame, model: str, subset: str, level: int) -> tuple[int, int]:
    """(pairs outside the neutral interval, pairs compared) for one model, subset and level."""
    part = table[(table["model"] == model) & (table["subset"] == subset) & (table["contentiousness"] == level)]
    return int(part["outside"].sum()), len(part)


HISTOGRAM_COLUMNS = ["model", "lo", "hi", "agents", "above_threshold"]


def self_bleu_histogram(bleu: pd.DataFrame, threshold: float | None, models: list[str]) -> pd.DataFrame:
    """Fig. 9a: agents per Self-BLEU range per model, bins of width threshold / 3 from 0 to 1 (0.1
    without a threshold); `above_threshold`: the bin lies above the filter's threshold."""
    width = threshold / 3 if threshold else 0.1
    edges = np.append(np.arange(0.0, 1.0, width), 1.0)
    rows: list[dict[str, Any]] = []
    for model in models:
        values = bleu.loc[bleu["model"] == model, "self_bleu"].dropna().to_numpy(dtype=float)
        counts, _ = np.histogram(np.clip(values, 0.0, 1.0), bins=edges)
        for lo, hi, k in zip(edges[:-1], edges[1:], counts, strict=True):
            above = threshold is not None and lo >= threshold - 1e-12
            rows.append({"model": model, "lo": float(lo), "hi": float(hi), "agents": int(k), "above_threshold": above})
    return pd.DataFrame(rows, columns=HISTOGRAM_COLUMNS)


FINAL_COLUMNS = ["model", "conversations", "judged", "parsed", "unparsed", "empty_window", "unjudged"]


def final_judgments(pairs: pd.DataFrame, judgments: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Per agent model: its conversations, those with a judgment, those whose final judgment parsed
    (a score 1-5), did not parse, or judged an empty window (-1), and those without any judgment."""
    last = judgments.sort_values(["conversation_id", "turn"]).groupby("conversation_id").tail(1)
    df = pairs[["conversation_id", "model"]].merge(last, on="conversation_id", how="left")
    judged = df["turn"].notna()
    parsed = judged & df["parse_ok"].fillna(False).astype(bool) & df["score"].notna()
    ok = parsed & (df["score"].fillna(0) >= 1)
    rows = []
    for model in models:
        m = df["model"] == model
        rows.append(
            {
                "model": model,
                "conversations": int(m.sum()),
                "judged": int((m & judged).sum()),
                "parsed": int((m & ok).sum()),
                "unparsed": int((m & judged & ~parsed).sum()),
                "empty_window": int((m & parsed & ~ok).sum()),
                "unjudged": int((m & ~judged).sum()),
            }
        )
    return pd.DataFrame(rows, columns=FINAL_COLUMNS)
