"""Synthetic DEBATE inputs with known answers for the verdict and null-calibration tests (issue 34).

`sect6` builds Sect. 6 members (humans and their twins) of groups of 4 that nest in topics, with the
structure a real run has: the twins' round-1 tweet and initial opinion are the humans' (human-written),
their round-2/3 tweets and final opinion are the model's. Each effect is a switch, so a test can build a
null (no effect, but the nuisance structure) and the true effect of each claim:

- `moderate`: the model writes more moderately than the humans (0.6 x the stance, + 0.3) and nothing
  else happens (the issue's first null);
- `twin_constant`: the twins answer about this value whatever they read (no partner influence);
- `drift`, `converge`: the twins' round-3 tweets move up / towards their group's mean from round 2;
- `topic_sd`: a drift of the twins' round-3 tweets specific to each topic, mean 0 over topics;
- `human_partner`, `twin_partner`: the weight of the round-1 partner's start in the end value;
- `human_shift`: the humans' round-3 tweets and final opinions move by this much;
- `human_topic_sd`: and by a topic-specific amount on top, mean 0 over topics (a change that varies by topic).

`by_session` builds per-debate utterance metrics (modes 1-3, original and no_private_profile memory)
of debates that nest in topics, with overall and topic-specific effects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PARTNER = np.array([1, 0, 3, 2])  # the round-1 partner of each of the 4 members
NOISE = 0.5  # SD of a written value around the member's latent stance


def topics_of(n: int, topics: int = 7) -> dict[str, str]:
    """session_id -> topic: sessions G000, G001, ... in turn over `topics` topics."""
    return {f"G{g:03d}": f"T{g % topics}" for g in range(n)}


def sect6(
    rng: np.random.Generator,
    groups: int,
    topics: int = 7,
    *,
    moderate: bool = False,
    twin_constant: float | None = None,
    drift: float = 0.0,
    converge: float = 1.0,
    topic_sd: float = 0.0,
    human_partner: float = 0.0,
    twin_partner: float = 0.0,
    human_shift: float = 0.0,
    human_topic_sd: float = 0.0,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """(members, session -> topic) of `groups` groups of 4 over `topics` topics (see the module)."""
    sessions = topics_of(groups, topics)
    topic_dev = rng.normal(0.0, topic_sd, topics) if topic_sd else np.zeros(topics)
    human_dev = rng.normal(0.0, human_topic_sd, topics) if human_topic_sd else np.zeros(topics)
    rows = []
    for g, sid in enumerate(sessions):
        x = rng.normal(0.0, 1.0, 4)  # each member's latent stance
        gm = x.mean()
        s1 = x + rng.normal(0.0, NOISE, 4)
        o_init = x + rng.normal(0.0, NOISE, 4)
        pull_s, pull_o = s1[PARTNER] - s1, o_init[PARTNER] - o_init
        shift = human_shift + human_dev[g % topics]
        h = {
            "s1": s1,
            "s2": x + rng.normal(0.0, NOISE, 4),
            "s3": x + rng.normal(0.0, NOISE, 4) + human_partner * pull_s + shift,
            "o_init": o_init,
            "o_final": x + rng.normal(0.0, NOISE, 4) + human_partner * pull_o + shift,
        }
        r3 = gm + converge * (x - gm) + drift + topic_dev[g % topics]
        t = {
            "s2": x + twin_partner * pull_s + rng.normal(0.0, NOISE, 4),
            "s3": r3 + twin_partner * pull_s + rng.normal(0.0, NOISE, 4),
            "o_final": x + twin_partner * pull_o + rng.normal(0.0, NOISE, 4),
        }
        if twin_constant is not None:
            t = {k: twin_constant + rng.normal(0.0, NOISE, 4) for k in t}
        if moderate:
            t = {k: 0.6 * v + 0.3 for k, v in t.items()}
        twin = {"s1": s1, "o_init": o_init, **t}  # the twins' round-1 tweet and initial opinion are the humans'
        for source, values in (("human", h), ("llm", twin)):
            for i in range(4):
                rows.append(
                    {
                        "session_id": sid,
                        "worker_id": f"{sid}w{i}",
                        "source": source,
                        "partner1": f"{sid}w{PARTNER[i]}",
                        **{q: float(values[q][i]) for q in ("s1", "s2", "s3", "o_init", "o_final")},
                    }
                )
    return pd.DataFrame(rows), sessions


def by_session(
    rng: np.random.Generator,
    debates: int,
    topics: int = 7,
    *,
    gap: float = 0.0,
    longer: float = 0.0,
    worse: float = 0.0,
    topic_sd: float = 0.0,
    modes: tuple[int, ...] = (1, 2, 3),
) -> tuple[pd.DataFrame, dict[str, str]]:
    """(per-debate metrics, session -> topic) of model "m" on Depth: S_sem falls by `gap` per mode, the
    LLM is `longer` words longer, removing the private profile lowers S_sem by 0.1 `worse` and raises
    Delta_stance by `worse` in modes 2 and 3; `topic_sd`: each of these three also gets a topic-specific
    part (mean 0 over topics) of that SD in units of its noise."""
    sessions = topics_of(debates, topics)
    dev = rng.normal(0.0, 1.0, (3, topics)) * topic_sd if topic_sd else np.zeros((3, topics))
    rows = []
    for g, sid in enumerate(sessions):
        k = g % topics
        base_sem, base_st = rng.normal(0.4, 0.05), rng.normal(1.2, 0.2)
        for mode in modes:
            for abl in ("original", "no_private_profile"):
                hit = (worse + dev[2, k] * 0.1) if abl == "no_private_profile" and mode > 1 else 0.0
                rows.append(
                    {
                        "model": "m",
                        "mode": mode,
                        "ablation": abl,
                        "topic_set": "depth",
                        "session_id": sid,
                        "s_sem": base_sem - (gap + dev[0, k] * 0.02) * mode - 0.1 * hit + rng.normal(0, 0.02),
                        "d_stance": base_st + hit + rng.normal(0, 0.1),
                        "d_signed_len": -(longer + dev[1, k] * 5.0) + rng.normal(0, 5.0),
                    }
                )
    return pd.DataFrame(rows), sessions
