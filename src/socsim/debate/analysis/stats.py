"""Statistics of the DEBATE study: Appendix H (Friedman + Wilcoxon across models), the group-level
(Fig. 2) and individual-level (Fig. 3) opinion-dynamics analyses of Sect. 6 (spec section 5), and Fig. 3's
fitted lines (fitted_line). The
t tests and d_z are socsim.stats.ttest's, the Friedman test socsim.stats.friedman's; the outcomes,
steps and predictors are socsim.debate.schemas'."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from socsim.debate.schemas import OUTCOMES, PREDICTORS, QUANTITIES, STEPS
from socsim.stats.friedman import friedman
from socsim.stats.ttest import VAR_TOL, OneSampleT, d_z, one_sample_t, one_sample_test
from socsim.stats.ttest import finite as _num


def appendix_h(values: pd.DataFrame, best: str, alternative: str) -> dict[str, Any]:
    """Appendix H: Friedman test across models (blocks = settings), then one-sided paired Wilcoxon
    signed-rank tests of `best` against each other model.

    `values`: models (index) x settings (columns), e.g. the 6 models x (Depth, Breadth) x modes 1-3 of
    one metric. `alternative`: "greater" where higher is better (S_sem, ROUGE-L), "less" where lower is
    (Delta_stance). Settings with a missing value are dropped (complete blocks only). The Wilcoxon test
    is R's wilcox.test with ties: normal approximation, continuity correction, zero differences dropped;
    with these the paper's 18 numbers reproduce from its printed tables (spec section 5).

    Returns {"chi2", "df", "p", "n_settings", "n_models", "best", "alternative", "wilcoxon": {model: p}}
    (a Wilcoxon p is None when every difference is zero); with fewer than 2 models or 2 complete
    settings, {"note": why} and no numbers.
    """
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', not {alternative!r}")
    if best not in values.index:
        raise ValueError(f"best model {best!r} is not among the models {list(values.index)}")
    table = values.astype(float).dropna(axis=1, how="any")
    n_models, n_settings = table.shape
    if n_models < 2:
        return {"note": f"{n_models} model(s); the Friedman test needs at least 2"}
    if n_settings < 2:
        return {"note": f"{n_settings} complete setting(s); the Friedman test needs at least 2"}
    chi2, p = friedman(table.to_numpy().T)  # blocks (settings) x treatments (models)
    if chi2 is None or not math.isfinite(chi2):
        return {"note": "Friedman test not computable: every setting ties all models"}
    out = {
        "chi2": _num(chi2),
        "df": n_models - 1,
        "p": _num(p),
        "n_settings": n_settings,
        "n_models": n_models,
        "best": best,
        "alternative": alternative,
        "wilcoxon": {},
    }
    x_best = table.loc[best].to_numpy()
    for model in table.index:
        if model == best:
            continue
        x = table.loc[model].to_numpy()
        if np.all(x_best - x == 0):
            out["wilcoxon"][model] = None
            continue
        res = stats.wilcoxon(x_best, x, alternative=alternative, method="approx", correction=True, zero_method="wilcox")
        out["wilcoxon"][model] = _num(res.pvalue)
    return out


# ---------------------------------------------------------------------------------------------------
# Group level (Fig. 2)

# name -> (variable before, variable after, statistic)
GROUP_TESTS = {
    "tweet mean": ("s1", "s3", "mean"),
    "tweet SD": ("s1", "s3", "sd"),
    "opinion mean": ("o_init", "o_final", "mean"),
    "opinion SD": ("o_init", "o_final", "sd"),
}
# Both points model-written: the twins' round-2 and round-3 tweets (their round-1 tweet and initial opinion
# are the humans', so the paper's twin changes above compare a model-written end with a human start)
MODEL_WRITTEN_TESTS = {
    "tweet mean, rounds 2-3": ("s2", "s3", "mean"),
    "tweet SD, rounds 2-3": ("s2", "s3", "sd"),
}


GROUP_TEST_COLUMNS = ["quantity", "test", "t", "p", "n_groups", "mean_change", "d_z", "missing", "note"]
GROUP_LEVEL_COLUMNS = ["session_id", "source", "quantity", "mean", "sd", "n", "n_members", "n_missing", "note"]
STEP_OUTCOME = {q: outcome for outcome, qs in STEPS.items() for q in qs}
WHO = {"human": "humans", "llm": "twins"}
PAIRED = "paired: each group's statistics over its members with every step"


def _paired_t(after: np.ndarray, before: np.ndarray) -> OneSampleT:
    """The paired t test of after - before over the groups with both values (ttest_rel), its notes
    in groups."""
    return one_sample_test(
        after - before,
        "{n} group(s) with both values; a paired t-test needs at least 2",
        "the change is {value:.4g} in every group",
    )


Missing = dict[tuple[str, str], list[tuple[int, int]]]  # (source, quantity) -> per group (n_missing, n_members)


def _missing_text(missing: Missing, sources: Iterable[str], quantities: Iterable[str]) -> str:
    quantities = list(quantities)
    parts = []
    for source in sources:
        for q in quantities:
            rows = missing.get((source, q), [])
            n_missing = sum(m for m, _ in rows)
            if not n_missing:
                continue
            total = sum(t for _, t in rows)
            groups = sum(m > 0 for m, _ in rows)
            where = f" in {groups} of {len(rows)} groups" if len(rows) > 1 else ""
            parts.append(f"{q} missing for {n_missing} of {total} {WHO.get(source, source)}{where}")
    return "; ".join([*parts, PAIRED]) if parts else ""


def _missing_of(per_group: pd.DataFrame) -> Missing:
    out: Missing = {}
    for source, q, n_missing, n_members in zip(
        per_group["source"].tolist(),
        per_group["quantity"].tolist(),
        per_group["n_missing"].tolist(),
        per_group["n_members"].tolist(),
    ):
        out.setdefault((str(source), str(q)), []).append((int(n_missing), int(n_members)))
    return out


def missing_summary(per_group: pd.DataFrame, sources: Iterable[str], quantities: Iterable[str]) -> str:
    """What the paired statistics of `quantities` for `sources` left out, summed over the groups of
    `per_group` (group_level's first frame): "o_final missing for 2 of 4 twins; paired: ...", or ""
    when every member has every value."""
    return _missing_text(_missing_of(per_group), sources, quantities)


def _group_stats(members: pd.DataFrame, ddof: int) -> pd.DataFrame:
    """group_level's first frame (see there)."""
    values = members[list(QUANTITIES)].astype(float).to_numpy()
    column = {q: k for k, q in enumerate(QUANTITIES)}
    indices = members.groupby(["session_id", "source"], sort=True).indices
    rows = []
    for session, source in sorted(indices):
        pos = indices[(session, source)]
        who = WHO.get(str(source), str(source))
        for steps in STEPS.values():
            v_all = values[pos][:, [column[q] for q in steps]]
            present = np.isfinite(v_all)
            used = v_all[present.all(axis=1)]
            gaps = [
                f"{q} missing for {int((~present[:, k]).sum())} of {len(pos)} {who}"
                for k, q in enumerate(steps)
                if not present[:, k].all()
            ]
            gap_note = "; ".join([*gaps, f"statistics over the {len(used)} with every step"]) if gaps else ""
            for k, q in enumerate(steps):
                v = used[:, k]
                rows.append(
                    {
                        "session_id": session,
                        "source": source,
                        "quantity": q,
                        "mean": float(v.mean()) if v.size else np.nan,
                        "sd": float(v.std(ddof=ddof)) if v.size > ddof else np.nan,
                        "n": int(v.size),
                        "n_members": len(pos),
                        "n_missing": int((~present[:, k]).sum()),
                        "note": gap_note,
                    }
                )
    return pd.DataFrame(rows, columns=GROUP_LEVEL_COLUMNS)


Spec = Mapping[str, tuple[str, str, str]]  # test quantity -> (variable before, variable after, statistic)


@dataclass(frozen=True)
class _Change:
    quantity: str
    test: str
    after: np.ndarray  # per session (sorted), NaN where missing
    before: np.ndarray
    missing: str


def _changes(per_group: pd.DataFrame, spec: Spec) -> tuple[list[Any], list[_Change]]:
    """The sessions (sorted) and, per quantity of `spec` and test, the paired values over them."""
    sessions = sorted(per_group["session_id"].unique())
    at = {s: i for i, s in enumerate(sessions)}
    table: dict[tuple[str, str, str], np.ndarray] = {}
    for stat in ("mean", "sd"):
        for session, source, q, value in zip(
            per_group["session_id"].tolist(),
            per_group["source"].tolist(),
            per_group["quantity"].tolist(),
            per_group[stat].tolist(),
        ):
            key = (stat, str(source), str(q))
            if key not in table:
                table[key] = np.full(len(sessions), np.nan)
            table[key][at[session]] = float(value)
    missing = _missing_of(per_group)

    def column(stat: str, source: str, q: str) -> np.ndarray:
        return table.get((stat, source, q), np.full(len(sessions), np.nan))

    out = []
    for name, (before, after, stat) in spec.items():
        steps = STEPS[STEP_OUTCOME[before]]
        deltas = {}
        for source in ("llm", "human"):
            a, b = column(stat, source, after), column(stat, source, before)
            deltas[source] = a - b
            out.append(_Change(name, f"{source} change", a, b, _missing_text(missing, [source], steps)))
        out.append(
            _Change(
                name,
                "llm change vs human change",
                deltas["llm"],
                deltas["human"],
                _missing_text(missing, ["llm", "human"], steps),
            )
        )
    return sessions, out


def change_tests(per_group: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """group_level's second frame for the quantities of `spec` (name -> (before, after, statistic)),
    from its first frame `per_group`: per quantity the tests "llm change", "human change" and "llm
    change vs human change" (columns GROUP_TEST_COLUMNS; see group_level)."""
    _, changes = _changes(per_group, spec)
    tests = []
    for c in changes:
        r = _paired_t(c.after, c.before)
        tests.append(
            {
                "quantity": c.quantity,
                "test": c.test,
                "t": r.t,
                "p": r.p,
                "n_groups": r.n,
                "mean_change": r.mean,
                "d_z": d_z(r.t, r.n),
                "missing": c.missing,
                "note": r.note,
            }
        )
    return pd.DataFrame(tests, columns=GROUP_TEST_COLUMNS)


def group_changes(per_group: pd.DataFrame, spec: Spec) -> dict[tuple[str, str], pd.Series]:
    """Per (quantity, test) of change_tests: each group's change (after - before; for "llm change vs
    human change" the twins' change minus the humans'), indexed by session, the groups with both values
    only: the values whose mean change_tests' paired t tests."""
    sessions, changes = _changes(per_group, spec)
    out = {}
    for c in changes:
        d = pd.Series(c.after - c.before, index=pd.Index(sessions, name="session_id"), dtype=float)
        out[(c.quantity, c.test)] = d[np.isfinite(d.to_numpy())]
    return out


def group_level(members: pd.DataFrame, ddof: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 2: group (session) statistics and their paired t-tests over groups.

    `members`: session_id, worker_id, source ("human" | "llm"), s1, s2, s3 (tweet stance per round,
    already reverse-coded), o_init, o_final.

    Like with like: a group's statistics of an outcome (tweet: s1, s2, s3; opinion: o_init, o_final)
    are over the same members at every step, those with every value of that outcome; a member
    missing one (an unparsed final opinion, say) is left out of every step of it, so a change is never
    the difference of two different sets of members. What was left out is said on each row.

    First frame: per session x source x quantity (s1, s2, s3, o_init, o_final) the mean and the SD
    (`ddof`, default 1 as R's sd) over those members; columns session_id, source, quantity, mean, sd,
    n (members used), n_members (the group's members of that source), n_missing (of them, those
    without this quantity), note ("o_final missing for 2 of 4 twins; ..." or empty). Second frame
    (change_tests with GROUP_TESTS, the paper's): for tweet mean/SD (round 3 vs round 1) and opinion
    mean/SD (final vs initial): "llm change" and "human change" = ttest_rel(after, before) over that
    source's groups, and "llm change vs human change" = ttest_rel(change_LLM, change_human) over the
    groups that have both (sign: LLM minus human). Columns quantity, test, t, p, n_groups, mean_change,
    d_z (the standardised mean change, t / sqrt(n_groups): comparable across numbers of groups, unlike
    t), missing (the values left out of the paired statistics, summed over groups, or empty), note (why
    t and p are missing, NaN in the frame: fewer than 2 groups, or no variance in the changes).

    The twins' round-1 tweet and initial opinion are the humans': the paper's twin changes compare a
    model-written end with a human-written start (MODEL_WRITTEN_TESTS: rounds 2 -> 3, both the twins').
    """
    need = ["session_id", "worker_id", "source", *QUANTITIES]
    missing = [c for c in need if c not in members.columns]
    if missing:
        raise ValueError(f"group_level: missing columns {missing}")
    per_group = _group_stats(members, ddof)
    return per_group, change_tests(per_group, GROUP_TESTS)


# ---------------------------------------------------------------------------------------------------
# Individual level (Fig. 3)


def individual_level(members: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3: Pearson r between each member's change and three predictors, per source.

    `members`: session_id, worker_id, source, s1, s3, o_init, o_final, partner1 (the round-1 partner's
    worker_id, looked up within the same session and source). Outcomes: tweet = s3 - s1, opinion =
    o_final - o_init. Predictors: own initial (s1 / o_init), partner minus own at the start (partner's
    s1 - own s1 / partner's o_init - own o_init), and its absolute value. Members with a missing value
    (or a partner not found) are left out of that correlation. Columns source, outcome, predictor, r, p,
    n, note; r and p are missing (NaN in the frame) with a note when n < 3 or a variable is constant.
    """
    need = ["session_id", "worker_id", "source", "s1", "s3", "o_init", "o_final", "partner1"]
    missing = [c for c in need if c not in members.columns]
    if missing:
        raise ValueError(f"individual_level: missing columns {missing}")
    rows = []
    for source in sorted(members["source"].unique()):
        m = members[members["source"] == source].reset_index(drop=True)
        lookup = {(s, w): i for i, (s, w) in enumerate(zip(m["session_id"], m["worker_id"]))}
        partner = [lookup.get((s, p)) for s, p in zip(m["session_id"], m["partner1"])]
        for outcome, (start, end) in OUTCOMES.items():
            own = m[start].astype(float).to_numpy()
            change = m[end].astype(float).to_numpy() - own
            other = np.array([own[j] if j is not None else np.nan for j in partner], dtype=float)
            preds = {"own initial": own, "partner minus own": other - own, "abs partner minus own": np.abs(other - own)}
            for name in PREDICTORS:
                x = preds[name]
                ok = np.isfinite(x) & np.isfinite(change)
                n = int(ok.sum())
                r = p = note = None
                if n < 3:
                    note = f"{n} member(s) with both values; a correlation needs at least 3"
                elif np.var(x[ok]) <= VAR_TOL:
                    note = f"the predictor is constant ({x[ok][0]:.4g})"
                elif np.var(change[ok]) <= VAR_TOL:
                    note = f"the change is constant ({change[ok][0]:.4g})"
                else:
                    res = stats.pearsonr(x[ok], change[ok])
                    r, p = _num(res.statistic), _num(res.pvalue)
                rows.append(
                    {"source": source, "outcome": outcome, "predictor": name, "r": r, "p": p, "n": n, "note": note}
                )
    return pd.DataFrame(rows, columns=["source", "outcome", "predictor", "r", "p", "n", "note"])


# ---------------------------------------------------------------------------------------------------
# Sect. 6 claims beyond the single Fig. 2 tests


def dissociation(per_group: pd.DataFrame, source: str = "llm") -> tuple[float | None, float | None, int, str | None]:
    """Public vs private (Sect. 6): per group of `source`, the change of the mean tweet stance (round 3
    minus round 1) minus the change of the mean opinion (final minus initial), both on the -2.5..2.5
    scale; one-sample t over groups against 0 (paired within group). `per_group`: group_level's first
    frame. Returns (mean, two-sided p, n groups, note) as one_sample_t."""
    g = per_group[per_group["source"] == source].pivot_table(index="session_id", columns="quantity", values="mean")
    g = g.reindex(columns=list(QUANTITIES))
    d = (g["s3"] - g["s1"]) - (g["o_final"] - g["o_init"])
    return one_sample_t(d.to_numpy(dtype=float))


BOOTSTRAP_REPEATS = 2000
BOOTSTRAP_SEED = 20251029  # analyse reads no seed: a fixed one keeps the report byte-identical


def _partner_values(m: pd.DataFrame, col: str) -> np.ndarray:
    sessions = m["session_id"].tolist()
    lookup = {(s, w): v for s, w, v in zip(sessions, m["worker_id"].tolist(), m[col].astype(float).tolist())}
    return np.array([lookup.get((s, p), np.nan) for s, p in zip(sessions, m["partner1"].tolist())], dtype=float)


def fig3_pairs(members: pd.DataFrame, source: str, outcome: str, predictor: str) -> pd.DataFrame:
    """The (session_id, x = predictor, y = change) pairs of one Fig. 3 correlation, as
    individual_level computes it (members with both values only)."""
    m = members[members["source"] == source].reset_index(drop=True)
    start, end = OUTCOMES[outcome]
    own = m[start].astype(float).to_numpy()
    change = m[end].astype(float).to_numpy() - own
    other = _partner_values(m, start)
    x = {"own initial": own, "partner minus own": other - own, "abs partner minus own": np.abs(other - own)}[predictor]
    ok = np.isfinite(x) & np.isfinite(change)
    return pd.DataFrame({"session_id": m["session_id"].to_numpy()[ok], "x": x[ok], "y": change[ok]})


FIT_POINTS = 30  # points of a fitted line (and its band) across the range of x


def fitted_line(xs: np.ndarray, ys: np.ndarray) -> pd.DataFrame:
    """The least-squares line of `ys` on `xs` with its 95 % confidence band, at FIT_POINTS points from the
    smallest x to the largest: x, y (the line), lo and hi (the band); no rows with fewer than 2 distinct x."""
    if np.unique(xs).size < 2:
        return pd.DataFrame({"x": [], "y": [], "lo": [], "hi": []}, dtype=float)
    b, a = np.polyfit(xs, ys, 1)
    grid = np.linspace(xs.min(), xs.max(), FIT_POINTS)
    fit = a + b * grid
    resid = ys - (a + b * xs)
    s2 = resid.var(ddof=2) if xs.size > 2 else 0.0
    se = np.sqrt(s2 * (1 / xs.size + (grid - xs.mean()) ** 2 / ((xs - xs.mean()) ** 2).sum()))
    return pd.DataFrame({"x": grid, "y": fit, "lo": fit - 1.96 * se, "hi": fit + 1.96 * se})


def _sums(pairs: pd.DataFrame, sessions: list[Any]) -> np.ndarray:
    """Per session: n, sum x, sum y, sum xx, sum yy, sum xy (rows in `sessions` order)."""
    p = pairs.assign(xx=pairs.x**2, yy=pairs.y**2, xy=pairs.x * pairs.y, one=1.0)
    s = p.groupby("session_id")[["one", "x", "y", "xx", "yy", "xy"]].sum()
    out: np.ndarray = s.reindex(sessions).fillna(0.0).to_numpy(dtype=float)
    return out


def _r(s: np.ndarray) -> np.ndarray:
    """Pearson r from summed moments (last axis: n, x, y, xx, yy, xy); NaN where undefined."""
    n, x, y, xx, yy, xy = np.moveaxis(s, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = xy - x * y / n
        vx, vy = xx - x * x / n, yy - y * y / n
        r = cov / np.sqrt(vx * vy)
    return np.where((n >= 3) & (vx > VAR_TOL) & (vy > VAR_TOL), r, np.nan)


def correlation_difference(
    members: pd.DataFrame,
    outcome: str,
    predictor: str,
    repeats: int = BOOTSTRAP_REPEATS,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """Fig. 3, "the twins' correlations are stronger": r_llm - r_human of one outcome and predictor,
    with a cluster bootstrap over groups (members nest in groups, and each twin is paired with its
    human): resample whole groups with replacement, recompute both r. Two-sided p = 2 min(share of
    differences <= 0, share >= 0), capped at 1. Returns r_llm, r_human, diff, p, n_groups (groups with
    both sources' pairs), repeats, note (why p is None: too few groups or an undefined r)."""
    llm = fig3_pairs(members, "llm", outcome, predictor)
    hum = fig3_pairs(members, "human", outcome, predictor)
    sessions = sorted(set(llm.session_id) & set(hum.session_id))
    llm, hum = llm[llm.session_id.isin(sessions)], hum[hum.session_id.isin(sessions)]
    s_llm, s_hum = _sums(llm, sessions), _sums(hum, sessions)
    r_llm, r_hum = float(_r(s_llm.sum(axis=0))), float(_r(s_hum.sum(axis=0)))
    out: dict[str, Any] = {
        "outcome": outcome,
        "predictor": predictor,
        "r_llm": _num(r_llm),
        "r_human": _num(r_hum),
        "diff": _num(r_llm - r_hum),
        "p": None,
        "n_groups": len(sessions),
        "repeats": repeats,
        "note": None,
    }
    if len(sessions) < 2 or out["diff"] is None:
        out["note"] = f"{len(sessions)} group(s) with both sources; r undefined or too few groups to resample"
        return out
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sessions), size=(repeats, len(sessions)))
    counts = np.zeros((repeats, len(sessions)))
    np.add.at(counts, (np.arange(repeats)[:, None], idx), 1.0)
    diff = _r(counts @ s_llm) - _r(counts @ s_hum)
    diff = diff[np.isfinite(diff)]
    if diff.size < repeats / 2:
        out["note"] = f"r undefined in {repeats - diff.size} of {repeats} resamples"
        return out
    out["p"] = float(min(1.0, 2 * min(np.mean(diff <= 0), np.mean(diff >= 0))))
    return out


# ---------------------------------------------------------------------------------------------------
# Fig. 3's partner influence as a regression coefficient

MIN_REGRESSION_MEMBERS = 4  # rows a 3-term regression needs for one residual degree of freedom
SINGULAR = 1e-10  # det(X'X) / prod(diag(X'X)) below this: the design is (nearly) singular


def regression_rows(members: pd.DataFrame, source: str, outcome: str) -> pd.DataFrame:
    """Per member of `source` with every value: session_id, own (own start: s1 / o_init), partner (the
    round-1 partner's start), end (s3 / o_final)."""
    m = members[members["source"] == source]
    start, end = OUTCOMES[outcome]
    own = m[start].to_numpy(dtype=float)
    partner = _partner_values(m, start)
    y = m[end].to_numpy(dtype=float)
    ok = np.isfinite(own) & np.isfinite(partner) & np.isfinite(y)
    return pd.DataFrame(
        {"session_id": m["session_id"].to_numpy()[ok], "own": own[ok], "partner": partner[ok], "end": y[ok]}
    )


def _cross_products(rows: pd.DataFrame, sessions: list[Any]) -> np.ndarray:
    """Per session (in `sessions` order): X'X (3 x 3, X = [1, own, partner]) and X'y, flattened to 12."""
    x = np.column_stack([np.ones(len(rows)), rows["own"].to_numpy(), rows["partner"].to_numpy()])
    y = rows["end"].to_numpy()
    per_row = np.concatenate([(x[:, :, None] * x[:, None, :]).reshape(len(rows), 9), x * y[:, None]], axis=1)
    at = {s: i for i, s in enumerate(sessions)}
    out = np.zeros((len(sessions), 12))
    idx = np.array([at.get(s, -1) for s in rows["session_id"].tolist()], dtype=int)
    keep = idx >= 0
    np.add.at(out, idx[keep], per_row[keep])
    return out


def _coefficients(s: np.ndarray) -> np.ndarray:
    """OLS coefficients from summed cross-products (last axis: X'X flattened, X'y); NaN where the
    design is singular or has fewer than MIN_REGRESSION_MEMBERS rows."""
    xtx = s[..., :9].reshape(*s.shape[:-1], 3, 3)
    xty = s[..., 9:]
    n = xtx[..., 0, 0]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # X'X is positive semi-definite: det <= the product of its diagonal (Hadamard), with equality for
        # orthogonal columns; a ratio near 0 is a (nearly) singular design
        ratio = np.linalg.det(xtx) / np.prod(np.diagonal(xtx, axis1=-2, axis2=-1), axis=-1)
        ok = (n >= MIN_REGRESSION_MEMBERS) & np.isfinite(ratio) & (ratio > SINGULAR)
        safe = np.where(ok[..., None, None], xtx, np.eye(3))
        b = np.linalg.solve(safe, xty[..., None])[..., 0]
    return np.where(ok[..., None], b, np.nan)


def _partner_sums(members: pd.DataFrame, outcome: str) -> tuple[list[Any], np.ndarray, np.ndarray, int, int]:
    """The groups with both sources' regression rows (sorted), each source's per-group cross-products,
    and the members used (twins, humans)."""
    llm, hum = regression_rows(members, "llm", outcome), regression_rows(members, "human", outcome)
    sessions = sorted(set(llm.session_id) & set(hum.session_id))
    s_llm, s_hum = _cross_products(llm, sessions), _cross_products(hum, sessions)
    return sessions, s_llm, s_hum, int(s_llm[:, 0].sum()), int(s_hum[:, 0].sum())


def partner_difference(
    members: pd.DataFrame,
    outcome: str,
    repeats: int = BOOTSTRAP_REPEATS,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """Fig. 3's partner influence, twins against humans, on the end value instead of the change score:
    per source, OLS end ~ 1 + own start + round-1 partner's start over its members, and the twins'
    partner coefficient minus the humans'. (The paper's r of the change with "partner minus own" shares
    -own start with the change: twins who answer the same whatever they read show "partner influence".)
    Cluster bootstrap over the groups that have both sources (each twin is paired with its human):
    resample whole groups with replacement, refit both; two-sided p = 2 min(share <= 0, share >= 0),
    capped at 1. Returns outcome, b_llm, b_human, diff, p, n_groups, n_llm, n_human (members), repeats,
    note."""
    sessions, s_llm, s_hum, n_llm, n_hum = _partner_sums(members, outcome)
    b_llm = _num(_coefficients(s_llm.sum(axis=0))[2])
    b_hum = _num(_coefficients(s_hum.sum(axis=0))[2])
    out: dict[str, Any] = {
        "outcome": outcome,
        "b_llm": b_llm,
        "b_human": b_hum,
        "diff": None if b_llm is None or b_hum is None else b_llm - b_hum,
        "p": None,
        "n_groups": len(sessions),
        "n_llm": n_llm,
        "n_human": n_hum,
        "repeats": repeats,
        "note": None,
    }
    if len(sessions) < 2 or out["diff"] is None:
        out["note"] = f"{len(sessions)} group(s) with both sources; a coefficient undefined or too few groups"
        return out
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sessions), size=(repeats, len(sessions)))
    counts = np.zeros((repeats, len(sessions)))
    np.add.at(counts, (np.arange(repeats)[:, None], idx), 1.0)
    diff = _coefficients(counts @ s_llm)[:, 2] - _coefficients(counts @ s_hum)[:, 2]
    diff = diff[np.isfinite(diff)]
    if diff.size < repeats / 2:
        out["note"] = f"a coefficient undefined in {repeats - diff.size} of {repeats} resamples"
        return out
    out["p"] = float(min(1.0, 2 * min(np.mean(diff <= 0), np.mean(diff >= 0))))
    return out


def partner_difference_by_cluster(members: pd.DataFrame, outcome: str, clusters: Mapping[Any, Any]) -> pd.Series:
    """Per cluster (topic) of the groups (`clusters`: session -> cluster): the twins' partner coefficient
    minus the humans' over the groups of that cluster that have both sources, sorted by cluster; clusters
    where either coefficient is undefined are left out."""
    sessions, s_llm, s_hum, _, _ = _partner_sums(members, outcome)
    labels = [clusters[s] for s in sessions]
    out = {}
    for cluster in sorted(set(labels)):
        mine = np.array([lab == cluster for lab in labels])
        b = _coefficients(np.stack([s_llm[mine].sum(axis=0), s_hum[mine].sum(axis=0)]))[:, 2]
        if np.isfinite(b).all():
            out[cluster] = float(b[0] - b[1])
    return pd.Series(out, dtype=float)
