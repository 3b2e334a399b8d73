"""The DEBATE compare stage (paper 003, eq. 2): the utterance metrics of every setting, with the paper's
on-topic filter and without it, per setting and per setting and debate, and the sentence encoder's
identity. It writes the `comparison` folder the analysis reads (its declared tables, `encoder.json`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from socsim.debate import metrics
from socsim.debate.schemas import COMPARISON_ENCODER, COMPARISON_TABLES, SETTING
from socsim.io import tables
from socsim.io.parquet import write_json

KEYS = ["session_id", "round", "kind", "dyad", "k", "speaker"]
INPUTS = ("simulated", "annotations", "human_utterances", "human_annotations")


def _utterances_with_labels(texts: pd.DataFrame, ann: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    u = texts[texts.kind == "utterance"]
    a = ann[ann.kind == "utterance"][keys + ["stance", "on_topic"]]
    return u.merge(a, on=keys, how="left")


def _memo(embed: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """`embed` that computes each distinct text once across calls."""
    cache: dict[str, np.ndarray] = {}

    def run(texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in cache]
        if new:
            cache.update(zip(new, np.asarray(embed(new))))
        return np.array([cache[t] for t in texts]) if texts else np.asarray(embed([]))

    return run


def utterance_metrics(
    simulated: pd.DataFrame,
    annotations: pd.DataFrame,
    human_utterances: pd.DataFrame,
    human_annotations: pd.DataFrame,
    dp: dict[str, Any],
) -> dict[str, Any]:
    """`metrics`: per setting (eq. 2) with the on-topic filter (the paper's) and without (an extra:
    an annotator that calls everything off-topic leaves the paper's metrics empty); `by_session`:
    the paper's metrics per setting and debate (the unit of the findings' tests); `encoder`."""
    sim = _utterances_with_labels(simulated, annotations, SETTING + KEYS)
    human = human_utterances.assign(kind="utterance")
    human = _utterances_with_labels(human, human_annotations.drop(columns=["topic_set"]), KEYS)
    if dp["human_on_topic"] == "dataset":
        human = human.assign(on_topic=human.validity.map({"VALID": True, "INVALID": False}))
    encoder = metrics.Encoder(dp["encoder"], revision=dp["encoder_revision"])
    embed = _memo(encoder.encode)
    unit = dp["length_unit"]
    out = pd.concat(
        [
            metrics.round_wise(sim, human, SETTING, unit, embed).assign(on_topic_filter="annotated"),
            metrics.round_wise(sim.assign(on_topic=True), human.assign(on_topic=True), SETTING, unit, embed).assign(
                on_topic_filter="none"
            ),
        ],
        ignore_index=True,
    )
    out = out.sort_values(["on_topic_filter", *SETTING]).reset_index(drop=True)
    by_session = metrics.round_wise(sim, human, [*SETTING, "session_id"], unit, embed)
    by_session = by_session.sort_values([*SETTING, "session_id"]).reset_index(drop=True)
    labelled = human[human.session_id.isin(set(human_annotations.session_id))]  # the run's sessions only
    human_rate = float(labelled.on_topic.fillna(False).astype(bool).mean()) if len(labelled) else None
    dataset_rate = float(labelled.validity.eq("VALID").mean()) if len(labelled) else None
    return {
        "metrics": out,
        "by_session": by_session,
        "encoder": {
            **encoder.identity(),
            "human_on_topic_rate": human_rate,
            "human_on_topic_rate_dataset_validity": dataset_rate,
            "human_on_topic": dp["human_on_topic"],
        },
    }


def write(out: dict[str, Any], d: Path) -> None:
    """The comparison folder: its two declared tables and encoder.json, every run."""
    d.mkdir(parents=True, exist_ok=True)
    metrics_name, by_session_name = COMPARISON_TABLES
    tables.write(out["metrics"], d, metrics_name, "DEBATE: utterance metrics per setting (eq. 2)")
    tables.write(out["by_session"], d, by_session_name, "DEBATE: utterance metrics per setting and debate")
    write_json(d / COMPARISON_ENCODER, out["encoder"])
