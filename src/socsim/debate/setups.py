"""Setups: one row per simulated session and setting (paper 003, Sect. 4-5), what `simulate` runs.

A setting is model x mode x ablation x topic set (the ablations other than `original` on the first
model only: the paper ran them on gpt-4o-mini); its sessions are the complete groups of its topic set
(`select`). A row names the session's topic, its four workers and the run seed. Every request seed
derives from (run seed, "debate", model, mode, ablation, session, round, ...) in `simulate`, so a
session plays alike whichever shard, order or other settings it runs with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def settings(dp: Mapping[str, Any]) -> list[dict[str, Any]]:
    """model x mode x ablation x topic set; the ablations other than `original` run on the first model
    only (the paper ran them on gpt-4o-mini)."""
    first = dp["agent_models"][0]
    return [
        {"model": m, "mode": mode, "ablation": a, "topic_set": ts}
        for m in dp["agent_models"]
        for mode in dp["modes"]
        for a in dp["ablations"]
        for ts in dp["topic_sets"]
        if a == "original" or m == first
    ]


def select(
    sessions: Iterable[Mapping[str, Any]], topic_sets: Iterable[str], per_set: int | None
) -> list[dict[str, Any]]:
    """The run's sessions: per topic set, its complete sessions by id, the first `per_set` (None: all).
    A topic set of the run without a complete session is an error (nothing would be simulated for it)."""
    out: list[dict[str, Any]] = []
    sessions = list(sessions)
    for ts in topic_sets:
        rows = sorted(
            (dict(s) for s in sessions if s["complete"] and s["topic_set"] == ts), key=lambda s: s["session_id"]
        )
        if not rows:
            n = sum(s["topic_set"] == ts for s in sessions)
            raise ValueError(
                f"debate.topic_sets lists {ts!r}, but the data holds no complete {ts} session "
                f"({n} {ts} session(s) read, none complete: see sessions.parquet drop_reason)"
            )
        out += rows if per_set is None else rows[:per_set]
    return out


def setup_id(row: Mapping[str, Any]) -> str:
    return f"{row['model']}.m{row['mode']}.{row['ablation']}.{row['topic_set']}.{row['session_id']}"


def build(
    dp: Mapping[str, Any], seed: int, sessions: Iterable[Mapping[str, Any]], participants: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One row per (setting, selected session of the setting's topic set)."""
    chosen = select(sessions, dp["topic_sets"], dp["sessions_per_set"])
    workers: dict[str, list[str]] = {}
    for p in participants:
        workers.setdefault(p["session_id"], []).append(p["worker_id"])
    rows = []
    for st in settings(dp):
        for s in chosen:
            if s["topic_set"] != st["topic_set"]:
                continue
            row = {
                **st,
                "session_id": s["session_id"],
                "topic_dir": s["topic_dir"],
                "statement": s["statement"],
                "workers": sorted(workers.get(s["session_id"], [])),
                "seed": seed,
            }
            rows.append({"setup_id": setup_id(row), **row})
    return rows
