"""DEBATE's "the humans do not change" (Fig. 2) over replicate nulls and true changes, judged over topics
(socsim.debate.analysis.tests.no_change) beside the test over groups it replaced (the exact equivalence t test of
|d_z| < 0.4 over groups), at the paper's 31 groups and at 120, 7 topics (docs/debate.md).

Scenarios (tests/support/studies/debate_synthetic.sect6): a real change of d_z 0.4, uniform or varying by topic
(half its variance between topics), where "does not change" may hold at most at 2.5 %; no change at all, uniform
or varying by topic around 0, where "no" may come out at most at 5 % and "does not change" is its power.

    python benchmarks/debate_no_change.py --replicates 300
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the synthetic generator of the tests

from socsim.debate import analysis  # noqa: E402
from socsim.debate.analysis import stats  # noqa: E402
from socsim.stats import ttest  # noqa: E402
from support.studies.debate import SHIFT_DZ_04, SHIFT_DZ_04_TOPICS, TOPIC_HALF_SD  # noqa: E402
from support.studies.debate_synthetic import sect6  # noqa: E402

SCENARIOS = {
    "d_z 0.4, uniform": {"human_shift": SHIFT_DZ_04},
    "d_z 0.4, varying by topic": {"human_shift": SHIFT_DZ_04_TOPICS, "human_topic_sd": TOPIC_HALF_SD},
    "no change": {},
    "no change, varying by topic": {"human_topic_sd": TOPIC_HALF_SD},
}


def one(rng: np.random.Generator, groups: int, **kw: float) -> tuple[bool | None, bool | None]:
    """(the verdict over topics, the old verdict over groups) of "tweet mean does not change"."""
    members, topics = sect6(rng, groups, **kw)
    per_group, tested = stats.group_level(members)
    row = next(r for r in tested.itertuples(index=False) if r.quantity == "tweet mean" and r.test == "human change")
    changes = stats.group_changes(per_group, stats.GROUP_TESTS)[("tweet mean", "human change")]
    v, _ = analysis.no_change(changes, topics, [], None)
    t = None if np.isnan(row.t) else float(row.t)
    p_eq = ttest.equivalence_p(t, int(row.n_groups), analysis.NO_CHANGE_DZ)
    old = False if row.p < 0.05 else (True if p_eq is not None and p_eq < analysis.EQUIVALENCE_ALPHA else None)
    return v.holds, old


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--groups", default="31,120")
    ap.add_argument("--seed", type=int, default=53)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print("| groups | scenario | over topics: yes | over topics: no | over groups (before): yes | before: no |")
    print("| --- | --- | --- | --- | --- | --- |")
    for groups in (int(g) for g in a.groups.split(",")):
        for name, kw in SCENARIOS.items():
            runs = [one(rng, groups, **kw) for _ in range(a.replicates)]
            cells = [sum(r[i] is want for r in runs) for i in (0, 1) for want in (True, False)]
            n = a.replicates
            print(f"| {groups} | {name} | {cells[0]}/{n} | {cells[1]}/{n} | {cells[2]}/{n} | {cells[3]}/{n} |")


if __name__ == "__main__":
    main()
