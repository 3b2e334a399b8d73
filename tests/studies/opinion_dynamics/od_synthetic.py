"""Synthetic per-simulation rows of the opinion-dynamics study (the `per_sim` columns the paper's tests
and the findings read), for tests whose answer is known: one row per framing x bias level x topic of one
scope (model, topology, start, memory), B and D drawn around given means. The one builder of such rows
for test_od_report, test_od_issue21 and test_od_verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from typing import Any

import numpy as np
import pandas as pd

SCOPE = {"model": "m", "topology": "complete", "init": "uniform", "memory": "cumulative"}
NO_B = {"false": 0.0, "true": 0.0}


def per_sim_rows(
    rng: np.random.Generator,
    topics: int,
    d_of: Mapping[str, float],
    b_of: Mapping[str, float] = NO_B,
    d_sd: float = 0.3,
    b_sd: float = 0.5,
    topic_sd: float = 0.0,
    **scope: str,
) -> pd.DataFrame:
    """Rows of one scope (SCOPE, overridden by `scope`): for each framing ("false", "true"), bias level
    (the keys of `d_of`, in their order) and topic t0..: D = d_of[bias] + noise(d_sd), B = b_of[framing]
    + noise(b_sd). `topic_sd` > 0 adds one offset per topic to B and one to D, shared by every framing and
    bias level of the topic (the nuisance real runs have: a topic's simulations share its schedule and
    personas). Draws: the topic offsets (if any), then per row D's noise before B's."""
    where = SCOPE | scope
    prefix = ".".join(where[c] for c in SCOPE if c in scope)
    topic_d = rng.normal(0, topic_sd, topics) if topic_sd > 0 else np.zeros(topics)
    topic_b = rng.normal(0, topic_sd, topics) if topic_sd > 0 else np.zeros(topics)
    rows: list[dict[str, Any]] = []
    for f, b, i in product(["false", "true"], d_of, range(topics)):
        d = d_of[b] + topic_d[i] + rng.normal(0, d_sd)
        rows.append(
            {
                "sim_id": f"{prefix}.{f}.{b}.{i}" if prefix else f"{f}.{b}.{i}",
                **where,
                "framing": f,
                "bias": b,
                "topic": f"t{i}",
                "category": "science",
                "condition": "main",
                "rep": 0,
                "n_agents": 10,
                "B": b_of[f] + topic_b[i] + rng.normal(0, b_sd),
                "D": d,
                "D_pop": d,
            }
        )
    return pd.DataFrame(rows)
