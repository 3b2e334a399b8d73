"""The unit of each coherence test where conversations are not independent (issue 34).

The pairing reuses agents (a rare profile's agent sits in up to 120 conversations at paper scale) and
nests conversations in topics (three per contentiousness level), so a test that treats conversations
as independent rejects on an agent's own agreeableness or on topic differences. Here:

- Tests 1 and 5 on the agent as unit (`agent_permutation`): the preference (Test 1) or openness
  (Test 5) of each agent is shuffled across the agents of its topic, every agent keeping its own
  conversations (and with them its own agreeableness). The statistic is the t of the slope of the
  final agreement on the gap (|P1 - P2|) or the openness sum (O1 + O2) with a dyadic-robust variance
  (conversations that share an agent are correlated), and the p the share of permutations with a t
  at least as far in the observed t's direction (one-sided, the verdict rule's sidedness: Monte Carlo,
  (1 + hits) / (1 + B)). Studentized, because agents are not
  exchangeable in the pairing: a rare profile's agent sits in many conversations, so permuting r
  itself rejected Test 5's null with agent agreeableness at 2.6 times its level (13 of 100 at 0.05;
  studentized 19 of 300; the conversation as unit 62 of 100: all measured with the two-sided p, before
  the one-sided rule).
- Test 4 on the topic as unit (`topic_permutation`): the contentiousness labels are permuted over the
  topics (9 topics, 3 a level: 1680 distinct assignments, every one enumerated) and the same statistic
  is recomputed: the smallest Bonferroni-corrected two-sided Mann-Whitney U p over preference pair x
  pair of levels (asymptotic U with ties, from the cells' score counts). The p is the share of
  assignments whose statistic is at most the observed one. It asks whether contentiousness explains
  more than the topics' own differences. Its power (`topic_power`) is simulated: each (preference
  pair, topic) cell drawn from its own observed scores (so the topics keep their differences), the
  topics of each level moved on a latent normal scale by a share of CONTENTIOUSNESS_D SD that rises
  from 0 at the lowest level to all of it at the highest (up, and down: the smaller power counts).
- Test 2's two further conditions for a pass (`test2_conditions`): power against the data's own "no
  gap effect" (gap 4 drawn from the observed gap-0 distribution: on symmetric or uniform scores the
  KS test cannot tell the two apart, so Test 2 is inconclusive there), and equivalence of the means
  within TEST2_MARGIN (two one-sided Welch t tests: a third of the paper's suppression is no pass).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from socsim.seeds import derive_seed
from socsim.stats import permutation as pm
from socsim.stats.power import ks_power, latent_shift, moved
from socsim.stats.ttest import welch_tost

SCORES = np.arange(1, 6)
FloatArray = npt.NDArray[np.float64]
AGENT_PERMUTATIONS = 1999  # Tests 1 and 5: random permutations (p resolution 1 / 2000)
TOPIC_EXACT_LIMIT = 50_000  # Test 4: enumerate every assignment up to this many, else sample
TOPIC_PERMUTATIONS = 4999  # Test 4 beyond the limit: random assignments
TOPIC_POWER_REPEATS = 200  # Test 4: simulated data sets per direction for the topic-level power
CONTENTIOUSNESS_D = 0.5  # Test 4: the contentiousness effect (SD) it must be able to find
TEST2_MARGIN = 0.5  # Test 2: equivalence margin on the means (score points; ours, the paper has none)


# -- Tests 1 and 5: agents as unit ----------------------------------------------------------------


@dataclass(frozen=True)
class AgentTest:
    r: float  # Pearson r of the conversation table (the paper's statistic)
    t: float  # the slope's t with the dyadic-robust variance (what is permuted)
    p: float  # its permutation p, agents as unit: one-sided, in the direction of t (verdict.effect's sides=1)
    agents: int
    topics: int
    permutations: int


PAIR_STATISTIC: dict[str, tuple[str, Callable[[FloatArray, FloatArray], FloatArray]]] = {
    "preference": ("P", lambda a, b: np.abs(a - b)),  # Test 1: the preference gap
    "openness": ("O", lambda a, b: a + b),  # Test 5: the openness sum
}


def agents_of(df: pd.DataFrame, prefix: str) -> tuple[list[str], FloatArray, list[object], npt.NDArray[np.int64]]:
    """(agent ids, each agent's value of `prefix`1/2, its topic, (n, 2) index of both agents of each
    conversation into the ids). Agents appear in order of first appearance."""
    topics = df["topic"] if "topic" in df.columns else pd.Series("", index=df.index)
    index: dict[str, int] = {}
    values: list[float] = []
    groups: list[object] = []
    sides = np.zeros((len(df), 2), dtype=np.int64)
    for i, (a1, a2, v1, v2, t) in enumerate(
        zip(df["agent1_id"], df["agent2_id"], df[f"{prefix}1"], df[f"{prefix}2"], topics, strict=True)
    ):
        for side, (aid, v) in enumerate(((a1, v1), (a2, v2))):
            if aid not in index:
                index[aid] = len(values)
                values.append(float(v))
                groups.append(t)
            sides[i, side] = index[aid]
    return list(index), np.asarray(values, dtype=float), groups, sides


def agent_permutation(df: pd.DataFrame, which: str, seed: int, permutations: int = AGENT_PERMUTATIONS) -> AgentTest:
    """Test 1 (`which` = preference) or Test 5 (openness) with the agent as unit (module docstring):
    the permutation p of the slope's dyadic-robust t (socsim.stats.permutation.dyadic_t)."""
    prefix, stat = PAIR_STATISTIC[which]
    ids, values, groups, sides = agents_of(df, prefix)
    y = df["agreement"].to_numpy(dtype=float)
    by_agent, by_dyad = pm.dyad_matrices(sides)
    x = stat(values[sides[:, 0]], values[sides[:, 1]])[None, :]
    r = float(pm.pearson_rows(x, y)[0])
    t = float(pm.dyadic_t(x, y, by_agent, by_dyad)[0])
    rng = np.random.default_rng(derive_seed(seed, "coherence", "agent permutation", which))
    chunk = max(1, 1_000_000 // max(len(df), 1))
    null: list[FloatArray] = []
    for start in range(0, permutations, chunk):
        v = pm.permuted_within(values, groups, min(chunk, permutations - start), rng)
        null.append(pm.dyadic_t(stat(v[:, sides[:, 0]], v[:, sides[:, 1]]), y, by_agent, by_dyad))
    p = pm.permutation_p(t, np.concatenate(null) if null else [], "greater" if t > 0 else "less")
    return AgentTest(r, t, p, len(ids), len(dict.fromkeys(groups)), permutations)


# -- Test 4: topics as unit ------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicCells:
    pairs: list[str]
    topics: list[str]
    levels: list[int]  # each topic's contentiousness
    counts: FloatArray  # (pairs, topics, 5) score counts


def topic_cells(df: pd.DataFrame) -> TopicCells:
    """Score counts per preference pair and topic, with each topic's contentiousness level."""
    level_of = df.groupby("topic")["contentiousness"].agg(lambda s: sorted(set(s)))
    mixed = [t for t, v in level_of.items() if len(v) > 1]
    if mixed:
        raise ValueError(f"topics with more than one contentiousness level: {', '.join(map(str, mixed))}")
    topics = sorted(level_of.index.astype(str))
    pairs = sorted(df["pref_pair"].unique())
    counts = np.zeros((len(pairs), len(topics), 5))
    t_idx, p_idx = {t: i for i, t in enumerate(topics)}, {p: i for i, p in enumerate(pairs)}
    for (pair, topic, score), n in df.groupby(["pref_pair", "topic", "agreement"]).size().items():
        counts[p_idx[pair], t_idx[str(topic)], int(score) - 1] += n
    level = {str(t): int(v[0]) for t, v in level_of.items()}
    return TopicCells(pairs, topics, [level[t] for t in topics], counts)


def smallest_bonferroni(counts: FloatArray, onehot: FloatArray, min_group: int) -> FloatArray:
    """Per assignment (onehot: (A, topics, levels)): the log of the smallest Bonferroni-corrected
    two-sided U p over preference pair x pair of levels with at least `min_group` conversations a side
    (0, p = 1, where none has). Logs, so that p values too small for a float keep their order."""
    a, t, levels = onehot.shape
    p, _, k = counts.shape
    # one matrix product: (A levels x topics) @ (topics x pairs scores) -> (A, levels, pairs, scores)
    flat = onehot.transpose(0, 2, 1).reshape(a * levels, t) @ counts.transpose(1, 0, 2).reshape(t, p * k)
    g = flat.reshape(a, levels, p, k)
    n = g.sum(axis=-1)
    logs, ok = [], []
    for l1, l2 in pm.level_pairs(levels):
        logs.append(pm.mwu_counts(g[:, l1], g[:, l2], log=True)[1])
        ok.append((n[:, l1] >= min_group) & (n[:, l2] >= min_group))
    log_p, valid = np.concatenate(logs, axis=1), np.concatenate(ok, axis=1)
    m = valid.sum(axis=1)
    adj = np.where(valid, np.minimum(log_p + np.log(np.maximum(m, 1))[:, None], 0.0), np.inf)
    return np.where(m > 0, adj.min(axis=1), 0.0)


@dataclass(frozen=True)
class Assignments:
    onehot: FloatArray  # (A, topics, levels), the observed grouping first
    exact: bool
    p_min: float  # the smallest p the test can give


def canonical(arrangement: tuple[int, ...], size: dict[int, int]) -> tuple[int, ...]:
    """The arrangement with levels of equal size renamed in order of first appearance (the statistic
    is the same for every such renaming: it compares every pair of levels, two-sided)."""
    pool = {n: sorted(lv for lv, m in size.items() if m == n) for n in set(size.values())}
    mapping: dict[int, int] = {}
    for lv in arrangement:
        if lv not in mapping:
            mapping[lv] = pool[size[lv]].pop(0)
    return tuple(mapping[lv] for lv in arrangement)


def assignments(levels: list[int], seed: int) -> Assignments:
    """Every distinct assignment of the levels to the topics, one per renaming of equal-size levels
    (9 topics, 3 a level: 1680 assignments, 280 distinct groupings), the observed first; random
    assignments beyond TOPIC_EXACT_LIMIT."""
    order = sorted(set(levels))
    if pm.n_assignments(levels) <= TOPIC_EXACT_LIMIT:
        size = {lv: levels.count(lv) for lv in order}
        groupings = dict.fromkeys(canonical(tuple(a), size) for a in pm.distinct_assignments(levels))
        return Assignments(pm.assignment_matrix(list(groupings), order), True, 1 / len(groupings))
    rng = np.random.default_rng(derive_seed(seed, "coherence", "topic permutation"))
    arrangement = [tuple(levels), *pm.random_assignments(levels, TOPIC_PERMUTATIONS, rng)]
    return Assignments(pm.assignment_matrix(arrangement, order), False, 1 / (1 + TOPIC_PERMUTATIONS))


def assignment_p(counts: FloatArray, a: Assignments, min_group: int) -> tuple[float, float]:
    """(observed statistic, its permutation p) over the assignments; the statistic is the smallest
    Bonferroni p (from its log: 0 where it underflows)."""
    stat = smallest_bonferroni(counts, a.onehot, min_group)
    null = stat if a.exact else stat[1:]
    return float(np.exp(stat[0])), pm.permutation_p(float(stat[0]), null, "less", exact=a.exact)


@dataclass(frozen=True)
class TopicTest:
    statistic: float  # the observed smallest Bonferroni p (asymptotic U)
    p: float  # its permutation p, topics as unit
    topics: int
    per_level: dict[int, int]
    assignments: int
    exact: bool
    p_min: float
    power: float | None  # None: not computed (the test rejected)


def topic_permutation(
    df: pd.DataFrame,
    alpha: float,
    min_group: int,
    seed: int,
    power_repeats: int = TOPIC_POWER_REPEATS,
    d: float = CONTENTIOUSNESS_D,
) -> TopicTest:
    """Test 4 with the topic as unit (module docstring). The power is simulated only where the test
    does not reject (it is what a pass needs) and the test can reject at all (else it is 0); None
    where it rejects (or `power_repeats` is 0: not wanted)."""
    cells = topic_cells(df)
    a = assignments(cells.levels, seed)
    stat, p = assignment_p(cells.counts, a, min_group)
    power: float | None = None
    if a.p_min >= alpha:
        power = 0.0
    elif p >= alpha and power_repeats > 0:
        power = topic_power(cells, a, alpha, min_group, d, power_repeats, seed)
    per_level = {lv: cells.levels.count(lv) for lv in sorted(set(cells.levels))}
    return TopicTest(stat, p, len(cells.topics), per_level, a.onehot.shape[0], a.exact, a.p_min, power)


def topic_power(
    cells: TopicCells, a: Assignments, alpha: float, min_group: int, d: float, repeats: int, seed: int
) -> float:
    """Simulated power of the topic-level test to find a contentiousness effect of `d` SD (module
    docstring); the smaller of the powers up and down; 0 where no preference pair can be moved."""
    n = cells.counts.sum(axis=-1)
    own = np.where(n[..., None] > 0, cells.counts / np.maximum(n, 1)[..., None], 0.2)
    order = sorted(set(cells.levels))
    rank = np.array([order.index(lv) / max(len(order) - 1, 1) for lv in cells.levels])
    powers = []
    for sign in (1, -1):
        shifts = [latent_shift(cells.counts[i].sum(axis=0), sign * d) for i in range(len(cells.pairs))]
        if all(s is None for s in shifts):
            continue
        probs = np.array(
            [[moved(own[i, t], (s or 0.0) * rank[t]) for t in range(len(cells.topics))] for i, s in enumerate(shifts)]
        )
        rng = np.random.default_rng(derive_seed(seed, "coherence", "topic power", sign))
        hits = 0
        for _ in range(repeats):
            sim = rng.multinomial(n.astype(np.int64), probs).astype(float)
            hits += assignment_p(sim, a, min_group)[1] < alpha
        powers.append(hits / repeats)
    return min(powers) if powers else 0.0


# -- Test 2 ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Equivalence:
    difference: float  # mean(gap 4) - (6 - mean(gap 0))
    lo: float  # its (1 - 2 alpha) Welch interval
    hi: float
    p: float  # the larger of the two one-sided p (TOST)
    margin: float


def equivalence(g4: npt.ArrayLike, g0: npt.ArrayLike, alpha: float, margin: float = TEST2_MARGIN) -> Equivalence:
    """Two one-sided Welch t tests that the gap-4 mean lies within `margin` of the inverted gap-0
    mean (6 - mean_0) (socsim.stats.ttest.welch_tost); NaN where a side has fewer than two values or
    neither varies."""
    diff, lo, hi, p = welch_tost(np.asarray(g4, float), 6 - np.asarray(g0, float), margin, alpha)
    return Equivalence(diff, lo, hi, p, margin)


@dataclass(frozen=True)
class Test2Conditions:
    power_paper: float | None  # against the paper's suppression
    power_own: float | None  # against the data's own "no gap effect"
    equivalence: Equivalence

    @property
    def power(self) -> float | None:
        """The smaller of the two powers (both must reach 0.8); None when either is unknown."""
        if self.power_paper is None or self.power_own is None:
            return None
        return min(self.power_paper, self.power_own)


def test2_conditions(
    g4: npt.ArrayLike,
    g0: npt.ArrayLike,
    alpha: float,
    paper: tuple[FloatArray, FloatArray] | None,
) -> Test2Conditions:
    """What a Test 2 pass needs beyond KS p >= alpha (module docstring)."""
    s0, s4 = np.asarray(g0, int), np.asarray(g4, int)
    own = np.array([(s0 == k).sum() for k in SCORES], float)
    pw_paper = ks_power(*paper, s0.size, s4.size, alpha, mirror=True) if paper is not None else None
    pw_own = ks_power(own, own, s0.size, s4.size, alpha, mirror=True) if own.sum() else None
    return Test2Conditions(pw_paper, pw_own, equivalence(s4, s0, alpha))
