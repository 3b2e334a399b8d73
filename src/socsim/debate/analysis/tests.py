"""The statistical tests of the DEBATE claims, each judged at the unit of its claim (issue 34).

- the debates (Tables 3, 9, the ablation) and Sect. 6's groups nest in the topics of their set (the 7
  Depth topics): a claim about the set is judged by a sign-flip test over the topic means of the
  per-debate or per-group values (socsim.stats.signflip), with at least MIN_TOPICS topics, the test
  over debates or groups beside it: Mode 1 > Mode 2 > Mode 3 in S_sem (each consecutive pair), LLM
  utterances longer than the humans', the Sect. 5 ablation, Sect. 6's drift and convergence, Fig. 3's
  partner influence;
- a change of the twins is measured between two points the model wrote: their round-2 and round-3
  tweets (stats.MODEL_WRITTEN_TESTS). The twins' round-1 tweet and initial opinion are the humans', so the
  paper's twin tests (round 3 vs 1, final vs initial opinion) compare a model-written end with a
  human-written start: a model that only writes more moderately than the humans "converges" and
  "drifts". They are shown as the paper's comparison (PAPERS_COMPARISON), without a verdict; so are the
  opinion parts of convergence and public vs private, which have no model-written start;
- Fig. 3's partner influence is the partner coefficient of a regression of the end value on own and
  partner start (twins minus humans), not the r of the change score with "partner minus own", which
  shares -own start with the change; the paper's r comparison is shown without a verdict;
- the humans' "no change" (Fig. 2, both points theirs) is judged over the topics the groups nest in: it
  holds only by two one-sided t tests over the topic means that their mean lies within NO_CHANGE_DZ (the
  paper's smallest significant change, d_z 0.40) standard deviations of the group changes, at
  EQUIVALENCE_ALPHA; a sign-flip test over the topic means that finds a change says "no". Fig. 2
  compares effect sizes d_z = t / sqrt(G) (the paper's t with its G = 31 groups), not t, which grows with G.

A test over debates or groups needs socsim.stats.verdict.MIN_UNITS of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.debate.analysis import stats
from socsim.debate.analysis.design import union
from socsim.debate.schemas import OUTCOMES
from socsim.io.report import Finding
from socsim.stats import degeneracy as dg
from socsim.stats import signflip, ttest
from socsim.stats import verdict as vd

STEP = {"tweet": "round 3 vs round 1", "opinion": "final vs initial"}
MIN_BOOT_GROUPS = 10  # groups a cluster bootstrap over groups (Fig. 3 correlations) needs
MIN_TOPICS = signflip.min_clusters(vd.ALPHA)  # an exact two-sided sign-flip test rejects at .05 from 6 topics
NO_CHANGE_DZ = 0.4  # "no change": the paper's smallest significant Fig. 2 change (d_z 0.40-0.48) is excluded
EQUIVALENCE_ALPHA = vd.ALPHA / 2  # a "no change" says yes at most this often when the change is NO_CHANGE_DZ
PAPERS_COMPARISON = (
    "the paper's comparison, no verdict: the twins' end is model-written, their start (the round-1 tweet, the "
    "initial opinion) the humans', so a model that only writes more moderately than the humans shows a change"
)


@dataclass(frozen=True)
class Nested:
    """A per-unit effect (debates or groups) whose units nest in topics, judged at the topic level."""

    verdict: vd.Verdict
    mean: float | None  # the mean over the units
    p_units: float | None  # the one-sample t over the units: reported beside, no verdict of its own
    n_units: int
    topic_mean: float | None  # the mean of the topic values
    p_topics: float | None  # the sign-flip test over the topic values: the verdict's test
    n_topics: int


def _at_topics(
    base: vd.Verdict, why: str | None, n: int, unit: str, sf: signflip.SignFlip, direction: int, beside: str
) -> vd.Verdict:
    """The verdict of a claim whose `unit`s nest in topics: `base` (the verdict over units, which says
    why when the data are too few, degenerate or without variance) unless it has a result, then the
    sign-flip test over the topics (`sf`), with at least MIN_TOPICS topics; `beside` (the test over
    units) is added to the reason."""
    if base.degenerate or base.reason.startswith("n = ") or base.reason.startswith("the test could not"):
        return undefined_why(base, why, n, unit)
    if sf.n < MIN_TOPICS:
        return vd.untested(
            f"{vd.too_few(sf.n, MIN_TOPICS, 'topics')}: the {unit} nest in topics, and a sign-flip test over "
            f"fewer cannot reject at {vd.ALPHA:g}{beside}",
            direction,
        )
    v = vd.effect(sf.p, sf.mean, sf.n, MIN_TOPICS, "topics", direction)
    return replace(v, reason=f"sign-flip over topics: {v.reason}{beside}")  # keeps what it was judged on


def topic_effect(
    values: pd.Series,
    topics: Mapping[Any, Any],
    direction: int,
    flags: Sequence[dg.Flag],
    unit: str,
    need: int,
) -> Nested:
    """A claim that the per-unit `values` (index: session; debates or groups) are > 0 (`direction` +1)
    or < 0 (-1) over a topic set whose topics the units nest in (`topics`: session -> topic). The claim
    is about the topics, so its test is the sign-flip test over the topic means of the values
    (socsim.stats.signflip; topic-specific effects that average zero do not pass it); the one-sample t
    over units is reported beside it. Fewer than `need` units, a degenerate input or no variance:
    inconclusive with the reason, as for a test over units."""
    x = values.astype(float)
    x = x[np.isfinite(x.to_numpy())]
    mean, p, n, why = ttest.one_sample_t(x.to_numpy())
    sf = signflip.sign_flip(signflip.cluster_means(x, topics).to_numpy() if n else [])
    beside = "" if p is None else f"; per {unit[:-1]}: t-test p = {p:.3g}, n = {n} {unit}"
    base = vd.effect(p, mean, n, need, unit, direction, flags)
    return Nested(_at_topics(base, why, n, unit, sf, direction, beside), mean, p, n, sf.mean, sf.p, sf.n)


TOPIC_TEST = "sign-flip test over topics (exact over the 2^k sign assignments) of the topic means of"
NO_CHANGE_TEST = (
    f"over the topic means of the groups' changes: two one-sided t tests (k - 1 df) of |mean| < {NO_CHANGE_DZ:g} SD of "
    f"the group changes at {EQUIVALENCE_ALPHA:g} (no change: yes), and the two-sided sign-flip test at {vd.ALPHA:g} "
    "(a change: no)"
)


def mode_order(
    by_session: pd.DataFrame,
    topics: Mapping[Any, Any],
    flags: list[dg.Flag],
    label: str = "",
    modes: Iterable[int] | None = None,
) -> Finding | None:
    """The claim "Mode 1 > Mode 2 > Mode 3 in semantic similarity" for one model and topic set: each pair of
    consecutive modes, the per-debate S_sem difference (paired over debates), judged over the topics the
    debates nest in (topic_effect; `topics`: session -> topic); holds when every pair holds.
    `by_session`: session_id, mode, s_sem (original memory). None with fewer than 2 modes. `modes`: the
    modes that ran (default: those of `by_session`)."""
    wide = by_session.pivot_table(index="session_id", columns="mode", values="s_sem", dropna=False)
    modes = sorted(set(wide.columns) if modes is None else set(modes))
    wide = wide.reindex(columns=modes)
    if len(modes) < 2:
        return None
    parts = [
        topic_effect(wide[a] - wide[b], topics, +1, flags, "debates", vd.MIN_UNITS) for a, b in zip(modes, modes[1:])
    ]
    first_last = (wide[modes[0]] - wide[modes[-1]]).to_numpy(dtype=float)
    first_last = first_last[np.isfinite(first_last)]
    return Finding(
        claim=" > ".join(f"Mode {m}" for m in modes) + " in semantic similarity" + (f" ({label})" if label else ""),
        statistic=f"mean per-debate S_sem of Mode {modes[0]} minus Mode {modes[-1]}",
        value=float(first_last.mean()) if first_last.size else None,
        test=f"{TOPIC_TEST} the per-debate S_sem difference of each pair of consecutive modes (paired over "
        "debates); every pair must hold; the one-sample t over debates beside it",
        unit="topics",
        n=min(r.n_topics for r in parts),
        verdict=vd.all_of(r.verdict for r in parts),
        id="deb.mode_order_s_sem",
    )


def llm_longer(by_session: pd.DataFrame, topics: Mapping[Any, Any], flags: list[dg.Flag], label: str = "") -> Finding:
    """The claim "LLM utterances are longer than the humans'" for one model and topic set: the
    per-debate mean (over modes) of the signed length difference (human - LLM) < 0, judged over the
    topics the debates nest in (topic_effect)."""
    per = by_session.groupby("session_id").d_signed_len.mean()
    r = topic_effect(per, topics, -1, flags, "debates", vd.MIN_UNITS)
    return Finding(
        claim="LLM utterances are longer than the humans' (signed difference < 0)" + (f" ({label})" if label else ""),
        statistic="mean per-debate signed length difference (human - LLM)",
        value=r.mean,
        test=f"{TOPIC_TEST} the per-debate signed length difference (each debate's mean over modes); "
        "the one-sample t over debates beside it",
        unit="topics",
        n=r.n_topics,
        verdict=r.verdict,
        id="deb.llm_longer",
    )


def undefined_why(verdict: vd.Verdict, why: str | None, n: int, unit: str) -> vd.Verdict:
    """An inconclusive verdict whose test could not be computed, with the reason (`why`, e.g. "no
    variance in the changes ...") instead of the bare "the test could not be computed"."""
    if why and verdict.holds is None and verdict.reason.startswith("the test could not be computed"):
        return vd.Verdict(None, f"{why}; n = {n} {unit}", rules=verdict.rules)
    return verdict


def model_written(test: str) -> bool:
    """Whether a Fig. 2 test of the paper's (round 3 vs 1, final vs initial) compares points written by
    the same hand: only the humans' own change does (the twins' start is the humans')."""
    return test == "human change"


def no_change(
    changes: pd.Series, topics: Mapping[Any, Any], flags: Sequence[dg.Flag], why: str | None
) -> tuple[vd.Verdict, int]:
    """A claim of no change, judged over the topics the groups nest in (their change shares its topic's, so a
    test over groups judges these topics, not the population): "holds" when two one-sided t tests over the topic
    means of the groups' `changes` (k - 1 degrees of freedom) put their mean within NO_CHANGE_DZ standard
    deviations of the group changes at EQUIVALENCE_ALPHA; "no" when the sign-flip test over the topic means finds
    a change (p < ALPHA); otherwise inconclusive, with both p. At least MIN_TOPICS topics. Returns the verdict and
    the number of topics."""
    x = changes.astype(float)
    x = x[np.isfinite(x.to_numpy())]
    mean, p, n, note = ttest.one_sample_t(x.to_numpy())
    base = replace(vd.effect(p, mean, n, vd.MIN_UNITS, "groups", 0, flags), rules=())  # NO_CHANGE_TEST says its rule
    if base.degenerate or base.reason.startswith("n = ") or base.reason.startswith("the test could not"):
        return undefined_why(base, why or note, n, "groups"), 0
    means = signflip.cluster_means(x, topics)
    k = len(means)
    if k < MIN_TOPICS:
        return vd.Verdict(None, f"{vd.too_few(k, MIN_TOPICS, 'topics')}: the groups nest in topics"), k
    sf = signflip.sign_flip(means.to_numpy())
    if sf.p is None or p is None:
        return vd.Verdict(None, f"the sign-flip test over topics could not be computed (n = {k} topics)"), k
    beside = f"sign-flip p = {sf.p:.3g}; per group: t-test p = {p:.3g}, n = {n} groups"
    if sf.p < vd.ALPHA:
        return vd.Verdict(False, f"a change was found over topics, {beside}, n = {k} topics", sf.p, vd.ALPHA), k
    margin = NO_CHANGE_DZ * float(x.std(ddof=1))
    m, se = float(means.mean()), float(means.std(ddof=1)) / np.sqrt(k)
    if se > 0:
        lower, upper = sps.t.sf((m + margin) / se, k - 1), sps.t.cdf((m - margin) / se, k - 1)
        p_eq = float(max(lower, upper))
    else:  # every topic changed alike
        p_eq = 0.0 if abs(m) < margin else 1.0
    within = f"topic mean {m:.3g} within {NO_CHANGE_DZ:g} SD of the group changes (+-{margin:.3g}): TOST p = {p_eq:.3g}"
    if p_eq < EQUIVALENCE_ALPHA:
        return vd.Verdict(True, f"{within} < {EQUIVALENCE_ALPHA:g} ({beside}), n = {k} topics"), k
    return vd.Verdict(None, f"not shown: {within} >= {EQUIVALENCE_ALPHA:g} ({beside}), n = {k} topics"), k


def group_finding(
    row: Any,
    ref: Mapping[str, Any],
    flags: list[dg.Flag],
    changes: pd.Series | None = None,
    topics: Mapping[Any, Any] | None = None,
) -> Finding | None:
    """A Fig. 2 test of the humans' own change as a finding (None for the twins' tests of the paper's, which
    compare a model-written end with the humans' start: PAPERS_COMPARISON). The paper's direction where its
    p < .05: an effect over the topics the groups nest in (topic_effect on the groups' `changes`, with
    `topics`; without them inconclusive); else "no change": an equivalence test over groups (no_change:
    |d_z| < NO_CHANGE_DZ)."""
    quantity, test = row.quantity, row.test
    if not model_written(test):
        return None
    what = quantity.split()[0]
    direction = int(np.sign(ref["t"])) if float(ref["p"]) < vd.ALPHA else 0
    dz = None if pd.isna(row.d_z) else float(row.d_z)
    why = row.note if isinstance(row.note, str) else None
    how = {1: "rises", -1: "falls", 0: "does not change"}[direction]
    claim = f"Fig. 2: the humans' group {quantity} {how} ({STEP[what]})"
    if direction:
        test_text = f"{TOPIC_TEST} the groups' changes; the paired t over groups beside it"
        if changes is None or topics is None:
            why = "the groups' topics are not given: the claim's unit is the topic"
            verdict = vd.untested(why, direction)
            unit, n_out = "topics", 0
        else:
            r = topic_effect(changes, topics, direction, flags, "groups", vd.MIN_UNITS)
            verdict, unit, n_out = r.verdict, "topics", r.n_topics
    else:
        test_text = NO_CHANGE_TEST
        if changes is None or topics is None:
            verdict = vd.Verdict(None, "the groups' topics are not given: the claim's unit is the topic")
            unit, n_out = "topics", 0
        else:
            verdict, n_out = no_change(changes, topics, flags, why)
            unit = "topics"
    return Finding(
        claim=claim,
        statistic="d_z = mean change / SD of the changes over groups (t / sqrt(G))",
        value=dz,
        test=test_text,
        unit=unit,
        n=n_out,
        verdict=verdict,
        id="deb.humans_no_change" if not direction else "deb.humans_group_change",
        part=quantity,
    )


def _named(part: str, v: vd.Verdict) -> vd.Verdict:
    """A part's verdict with its name in the reason, keeping what it was judged on (a degenerate input
    keeps its own message)."""
    return v if v.degenerate or not v.reason else replace(v, reason=f"{part}: {v.reason}")


MODEL_WRITTEN = "the twins' round-2 and round-3 tweets, both model-written"
# Sect. 6's group-level claims on points the model wrote (stats.MODEL_WRITTEN_TESTS); the opinion parts of
# the paper's claims have no model-written start (the twins' initial opinion is the humans')
SECT6_GROUP_CLAIMS = {
    "convergence": (
        "Sect. 6: the twins' groups converge more than the humans' in their tweets (the group SD of tweet "
        f"stance falls from round 2 to 3, and falls more than the humans'; {MODEL_WRITTEN})",
        [("tweet SD, rounds 2-3", "llm change", -1), ("tweet SD, rounds 2-3", "llm change vs human change", -1)],
    ),
    "drift": (
        "Sect. 6: the twins' public tweet stance drifts upwards (group mean, round 2 to 3), more than the "
        f"humans' ({MODEL_WRITTEN})",
        [("tweet mean, rounds 2-3", "llm change", +1), ("tweet mean, rounds 2-3", "llm change vs human change", +1)],
    ),
}
SECT6_GROUP_IDS = {"convergence": "deb.twins_converge", "drift": "deb.twins_drift_up"}  # (socsim.debate.findings)
# The paper's claims as it tests them (round 3 vs 1, final vs initial): shown, no verdict (PAPERS_COMPARISON)
SECT6_PAPER_CLAIMS = {
    "convergence": (
        "Sect. 6 (the paper's comparison): the twins' groups converge more than the humans' (the group SD of "
        "tweet stance and of opinion falls, and falls more than the humans')",
        [
            ("tweet SD", "llm change"),
            ("opinion SD", "llm change"),
            ("tweet SD", "llm change vs human change"),
            ("opinion SD", "llm change vs human change"),
        ],
    ),
    "drift": (
        "Sect. 6 (the paper's comparison): the twins' public tweet stance drifts upwards (group mean, round 3 "
        "vs 1), more than the humans'",
        [("tweet mean", "llm change"), ("tweet mean", "llm change vs human change")],
    ),
    "public vs private": (
        "Sect. 6 (the paper's comparison): the twins' public tweet stance rises more than their private "
        "opinion, which does not change",
        [("tweet mean", "llm change"), ("opinion mean", "llm change")],
    ),
}
# Fig. 3, as the paper tests it (r of the change score; r_llm - r_human): shown, no verdict
SECT6_CORRELATIONS = [
    ("tweet", "own initial", -1),
    ("tweet", "partner minus own", +1),
    ("opinion", "own initial", -1),
    ("opinion", "partner minus own", +1),
]
PART_COLUMNS = ["n_topics", "topic_mean", "p_topics", "verdict"]


def group_claims(
    per_group: pd.DataFrame,
    topics: Mapping[Any, Any],
    flags: Mapping[tuple[str, str], list[dg.Flag]],
) -> tuple[list[Finding], pd.DataFrame]:
    """Sect. 6's group-level claims on model-written points (SECT6_GROUP_CLAIMS: convergence and drift of
    the twins' tweets from round 2 to 3), each the all_of of its parts; a part is a change test of
    stats.MODEL_WRITTEN_TESTS judged over the topics the groups nest in (topic_effect). `per_group`:
    group_level's first frame; `topics`: session -> topic; `flags`: (quantity, test) -> the flags of
    that test's inputs. Also returns the model-written tests (change_tests' columns) with the topic-level
    columns PART_COLUMNS (verdict: the part's, empty for a test no claim uses)."""
    tests = stats.change_tests(per_group, stats.MODEL_WRITTEN_TESTS)
    changes = stats.group_changes(per_group, stats.MODEL_WRITTEN_TESTS)
    judged: dict[tuple[str, str], Nested] = {}
    for r in tests.itertuples(index=False):
        claimed = [d for _, parts in SECT6_GROUP_CLAIMS.values() for q, t, d in parts if (q, t) == (r.quantity, r.test)]
        fl = list(flags.get((r.quantity, r.test), []))
        judged[(r.quantity, r.test)] = topic_effect(
            changes[(r.quantity, r.test)], topics, claimed[0] if claimed else 0, fl, "groups", vd.MIN_UNITS
        )
    out = []
    for name, (claim, parts) in SECT6_GROUP_CLAIMS.items():
        verdicts = [_named(f"{q}, {t}", judged[(q, t)].verdict) for q, t, _ in parts]
        named = "; ".join(f"{q} {t} {'>' if d > 0 else '<'} 0" for q, t, d in parts)
        out.append(
            Finding(
                claim=claim,
                statistic="every part's d_z (sect6_model_written)",
                value=None,
                test=f"per part ({named}): {TOPIC_TEST} the groups' changes; every part must hold; "
                "the paired t over groups beside it",
                unit="topics",
                n=min(judged[(q, t)].n_topics for q, t, _ in parts),
                verdict=vd.all_of(verdicts),
                id=SECT6_GROUP_IDS[name],
            )
        )
    claimed_parts = {(q, t) for _, parts in SECT6_GROUP_CLAIMS.values() for q, t, _ in parts}
    tests = tests.assign(
        n_topics=[judged[(r.quantity, r.test)].n_topics for r in tests.itertuples(index=False)],
        topic_mean=[judged[(r.quantity, r.test)].topic_mean for r in tests.itertuples(index=False)],
        p_topics=[judged[(r.quantity, r.test)].p_topics for r in tests.itertuples(index=False)],
        verdict=[
            judged[(r.quantity, r.test)].verdict.label if (r.quantity, r.test) in claimed_parts else ""
            for r in tests.itertuples(index=False)
        ],
    )
    return out, tests.astype({"topic_mean": "float64", "p_topics": "float64"})


PARTNER_CLAIM = (
    "Sect. 6 / Fig. 3: the twins follow their round-1 partner more than the humans do (the partner "
    "coefficient of the end value on own and partner start, tweets and opinions)"
)


def partner_claim(
    members: pd.DataFrame, topics: Mapping[Any, Any], flags: Mapping[str, list[dg.Flag]]
) -> tuple[Finding, pd.DataFrame]:
    """Fig. 3's partner influence, twins against humans: per outcome (tweet, opinion), the twins' partner
    coefficient minus the humans' (stats.partner_difference: OLS end ~ 1 + own start + partner start; a
    cluster bootstrap over groups beside it), judged over the topics the groups nest in: the sign-flip
    test of the per-topic coefficient differences (stats.partner_difference_by_cluster), with at least
    MIN_BOOT_GROUPS groups. `flags`: outcome -> the flags of its variables. Also returns the parts."""
    rows, verdicts = [], []
    for outcome in OUTCOMES:
        r = stats.partner_difference(members, outcome)
        by_topic = stats.partner_difference_by_cluster(members, outcome, topics)
        sf = signflip.sign_flip(by_topic.to_numpy())
        n = int(r["n_groups"])
        base = vd.effect(r["p"], r["diff"], n, MIN_BOOT_GROUPS, "groups", +1, flags.get(outcome, []))
        beside = "" if r["p"] is None else f"; bootstrap over groups: p = {r['p']:.3g}, n = {n} groups"
        v = _named(outcome, _at_topics(base, r["note"], n, "groups", sf, +1, beside))
        verdicts.append(v)
        rows.append({**r, "n_topics": sf.n, "topic_mean": sf.mean, "p_topics": sf.p, "verdict": v.label})
    parts = pd.DataFrame(rows)
    return (
        Finding(
            claim=PARTNER_CLAIM,
            statistic="every part's b_llm - b_human (table fig3_partner_coefficients)",
            value=None,
            test=f"per outcome: {TOPIC_TEST.replace('topic means of', 'per-topic')} partner-coefficient "
            f"difference (twins minus humans, OLS end ~ own start + partner start), > 0; both must hold; "
            f"a cluster bootstrap over groups ({stats.BOOTSTRAP_REPEATS} resamples) beside it",
            unit="topics",
            n=int(parts.n_topics.min()) if len(parts) else 0,
            verdict=vd.all_of(verdicts),
            id="deb.twins_follow_partner",
        ),
        parts,
    )


def correlation_parts(members: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3 as the paper compares it: r_llm - r_human of the change score with the own start and with
    "partner minus own" (stats.correlation_difference, cluster bootstrap over groups), each row with
    PAPERS_COMPARISON instead of a verdict (the change score's "partner minus own" also shares -own
    start with it)."""
    rows = [
        {
            **stats.correlation_difference(members, outcome, predictor),
            "direction": direction,
            "verdict": PAPERS_COMPARISON,
        }
        for outcome, predictor, direction in SECT6_CORRELATIONS
    ]
    return pd.DataFrame(rows)


def ablation_claim(
    by_session: pd.DataFrame,
    model: str,
    topic_set: str,
    ran: set[tuple[int, str]],
    flags: Mapping[tuple[int, str, str], list[dg.Flag]],
    topics: Mapping[Any, Any],
) -> Finding:
    """Sect. 5 (Tables 4, 10): in Modes 2 and 3, removing the private profile lowers semantic similarity
    and raises the stance difference. Parts, per mode of 2 and 3 that ran with both `original` and
    `no_private_profile`: the per-debate difference (no_private_profile - original) of s_sem < 0 and of
    d_stance > 0, judged over the topics the debates nest in (topic_effect); every part must hold.
    `ran`: (mode, ablation) pairs of `model` and `topic_set`; `flags`: (mode, ablation, metric) -> flags;
    `topics`: session -> topic."""
    claim = (
        "Sect. 5: in Modes 2 and 3 removing the private profile lowers S_sem and raises Delta_stance "
        f"({topic_set}, {model})"
    )
    test = (
        f"{TOPIC_TEST} the per-debate difference (no_private_profile - original), per mode and "
        "metric; every part must hold; the one-sample t over debates beside it"
    )
    modes = [m for m in (2, 3) if (m, "original") in ran and (m, "no_private_profile") in ran]
    if not modes:
        return Finding(
            claim,
            "per-debate differences",
            None,
            test,
            "topics",
            0,
            vd.untested("not run: needs ablations original and no_private_profile in mode 2 or 3", -1),
            id="deb.private_profile_ablation",
        )
    s = by_session[(by_session.model == model) & (by_session.topic_set == topic_set)]
    verdicts, ns = [], []
    for mode in modes:
        sm = s[s["mode"] == mode].pivot_table(
            index="session_id", columns="ablation", values=["s_sem", "d_stance"], dropna=False
        )
        for metric, direction in (("s_sem", -1), ("d_stance", +1)):
            cols = [(metric, a) for a in ("no_private_profile", "original")]
            d = sm[cols[0]] - sm[cols[1]] if all(c in sm.columns for c in cols) else pd.Series(dtype=float)
            fl = union(flags.get((mode, a, metric), []) for a in ("original", "no_private_profile"))
            r = topic_effect(d, topics, direction, fl, "debates", vd.MIN_UNITS)
            verdicts.append(_named(f"mode {mode} {metric}", r.verdict))
            ns.append(r.n_topics)
    return Finding(
        claim,
        "per-debate differences (no_private_profile - original)",
        None,
        test,
        "topics",
        min(ns),
        vd.all_of(verdicts),
        id="deb.private_profile_ablation",
    )
