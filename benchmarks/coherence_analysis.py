"""Wall time of the coherence analysis stage on 1,000,000 synthetic judgments.

Builds agents, profiles, pairs and judgments of the documented schemas (100,000 conversations x
10 judged turns by default), then runs everything `socsim coherence analyse` computes from them:
every bootstrap grouping, the expected-vs-observed suppression tables (linear, sigmoid, B = 2) and
the six tests. Self-BLEU needs utterance texts and is not part of it. Target: <= 30 s here.

    python benchmarks/coherence_analysis.py [--judgments 1000000] [--turns 10]
    python benchmarks/coherence_analysis.py --judgments 2000   # a tiny run (a smoke test)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from socsim import config
from socsim.coherence.analysis import analyse
from socsim.io.report import AnalysisInputs

TOPICS = {
    "taxes": 3,
    "immigration": 3,
    "healthcare": 3,
    "e_scooters": 2,
    "student_athletes": 2,
    "remote_work": 2,
    "favorite_season": 1,
    "beach_vs_mountain": 1,
    "favorite_beverage": 1,
}


def synthetic(n_judgments: int, turns: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_conv = n_judgments // turns
    n_agents = max(1000, n_conv // 5)
    topic = rng.choice(list(TOPICS), n_agents)
    agents = pd.DataFrame(
        {
            "agent_id": [f"a{i}" for i in range(n_agents)],
            "topic": topic,
            "contentiousness": [TOPICS[t] for t in topic],
            "bias_level": rng.integers(0, 3, n_agents),
        }
    )
    profiles = pd.DataFrame(
        {
            "agent_id": agents["agent_id"],
            "model": "bench",
            "preference": rng.integers(1, 6, n_agents),
            "openness": rng.integers(0, 10, n_agents),
            "preference_ok": True,
            "openness_ok": True,
        }
    )
    a1, a2 = rng.integers(0, n_agents, n_conv), rng.integers(0, n_agents, n_conv)
    a2 = np.where(a1 == a2, (a2 + 1) % n_agents, a2)
    pairs = pd.DataFrame(
        {
            "conversation_id": [f"c{i:07d}" for i in range(n_conv)],
            "model": "bench",
            "topic": topic[a1],
            "agent1_id": agents["agent_id"].to_numpy()[a1],
            "agent2_id": agents["agent_id"].to_numpy()[a2],
            "profile1": "",
            "profile2": "",
            # who asks the topic's question (a seeded coin, as agents.opener): a stream of its own, so the
            # other columns stay what they were
            "opener": np.random.default_rng([seed, 1]).integers(1, 3, n_conv),
        }
    )
    gap = np.abs(profiles["preference"].to_numpy()[a1] - profiles["preference"].to_numpy()[a2])
    final = np.clip(np.rint(4.4 - 0.2 * gap + rng.normal(0, 0.8, n_conv)), 1, 5).astype(int)
    scores = np.clip(final[:, None] + rng.integers(-1, 2, (n_conv, turns)), 1, 5)
    scores[:, -1] = final
    judgments = pd.DataFrame(
        {
            "conversation_id": np.repeat(pairs["conversation_id"].to_numpy(), turns),
            "turn": np.tile(np.arange(turns), n_conv),
            "score": scores.ravel(),
            "raw_answer": "",
            "parse_ok": True,
            "judge_model": "bench",
        }
    )
    return agents, profiles, pairs, judgments


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgments", type=int, default=1_000_000)
    ap.add_argument("--turns", type=int, default=10)
    args = ap.parse_args()
    agents, profiles, pairs, judgments = synthetic(args.judgments, args.turns)
    cp = config.validate({})["coherence"]
    start = time.perf_counter()
    tables = {"agents": agents, "profiles": profiles, "pairs": pairs, "judgments": judgments}
    rep = analyse(AnalysisInputs(tables, cp, seed=1))
    wall = time.perf_counter() - start
    tests = rep.tables["six_tests"].df[["test", "result"]].to_dict("records")
    print(f"judgments: {len(judgments):,}; conversations: {rep.summary['conversations']:,}")
    print(f"six tests: {tests}")
    print(f"analysis wall time: {wall:.1f} s (target <= 30 s)")


if __name__ == "__main__":
    main()
