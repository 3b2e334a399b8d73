"""The run beside the paper's design: its design differences (data/opinion_dynamics/paper.yaml
`design`: agent model, classifier, steps T, agents N, world, topology, topics), named per vs_paper
row, and the world setting the paper's tables report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from socsim.io import vs_paper


def _shown(v: Any) -> str:
    vals = sorted({str(x) for x in (v if isinstance(v, list | tuple | set | pd.Series | np.ndarray) else [v])})
    return ", ".join(vals)


def design(
    cells: pd.DataFrame, classifier: Mapping[str, str], paper: Mapping[str, Any], table: str | None = None
) -> list[str]:
    """The design differences of the numbers made of `cells` (per-simulation rows: model, steps,
    n_agents, world, topology, topic) from the paper's (paper.yaml `design`; `topics` per `table`)."""
    ref = dict(paper.get("design") or {})
    topics = ref.pop("topics", {}) or {}
    models = sorted(set(cells.model)) if "model" in cells else []
    ours: dict[str, Any] = {"agent model": models, "classifier": sorted({classifier.get(m, "unknown") for m in models})}
    for col, name in (("steps", "steps T"), ("n_agents", "agents N"), ("world", "world"), ("topology", "topology")):
        if col in cells:
            ours[name] = sorted({str(x) for x in cells[col]})
    if table is not None and "topic" in cells:
        per = cells.groupby("category").topic.nunique() if table == "table2" else [cells.topic.nunique()]
        ours["topics"] = max(per) if len(cells) else 0
        ref["topics"] = topics.get(table)
    ours = {k: _shown(v) for k, v in ours.items()}
    return vs_paper.differences(ours, {k: _shown(v) if v is not None else None for k, v in ref.items()})


def paper_world(worlds: Iterable[str]) -> str:
    """The world setting of the paper's tables: closed where it ran (the paper reports only it)."""
    ran = sorted(set(worlds))
    return "closed" if "closed" in ran or not ran else ran[0]


def classifier_of(ratings: pd.DataFrame) -> dict[str, str]:
    """Per agent model, the classifier model(s) that rated its reports ({} where the ratings do not say)."""
    if "classifier_model" not in ratings:
        return {}
    return {str(m): _shown(list(g.classifier_model.unique())) for m, g in ratings.groupby("model", sort=True)}
