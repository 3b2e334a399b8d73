"""The humans the planted model's DEBATE runs replay (the data source `planted`, debate.data.source): groups of 4
on each Depth topic in the Hub's layout (socsim.debate.ingest reads them as it reads the real data), with the real
data's rotating partner schedule. Each member's level x (the six-point scale) is drawn once; the Initial Opinion
states x, every tweet, utterance and the Post Opinion x plus HUMAN_NOISE, rounded to the scale: no convergence,
no partner influence, no drift. They write in the planted model's vocabulary (socsim.planted.debate.say, with the
same share of off-topic chat), so its faithful reader reads them, and their texts' lengths match its twins'."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from socsim.debate.ingest import COLUMNS, INIT, POST, SENT, TWEET
from socsim.planted.debate import LABELS, OFF_TOPIC, OFF_TOPIC_SHARE, label_of, say

HUMAN_NOISE = 0.3  # a human text's noise around the member's level

SCHEDULE = ((0, 1, 2, 3), (0, 2, 1, 3), (0, 3, 1, 2))  # the round's two dyads: every pair meets once
TURNS = (2, 4)  # merged turns per dyad-round, drawn in this range
HUMAN_SD = 1.8  # the spread of the humans' levels (before rounding to the scale)


def _session(rng: np.random.Generator, tag: str) -> list[list[Any]]:
    """The rows of one group's session file (socsim.debate.ingest's layout)."""
    workers = [f"{'ABCD'[i]}{tag}" + "xxxxx" for i in range(4)]  # names: the first 5 characters, unique
    x = [LABELS[label_of(rng.normal(0.0, HUMAN_SD))] for _ in range(4)]  # each member's level
    rows: list[list[Any]] = []

    def add(rnd: Any, kind: str, worker: str, sender: str, recipient: str, text: str, slider: Any, valid: str) -> None:
        rows.append([rnd, len(rows) + 1, kind, worker, sender, recipient, "", text, slider, "", valid])

    for i, w in enumerate(workers):
        add("", INIT, w, "", "", say(x[i], rng), x[i] + 3.5, "")
    for r, (a, b, c, d) in enumerate(SCHEDULE, 1):
        partner = {a: b, b: a, c: d, d: c}
        for i, w in enumerate(workers):
            add(float(r), TWEET, w, w, workers[partner[i]], say(x[i] + rng.normal(0.0, HUMAN_NOISE), rng), "", "")
        for p, q in ((a, b), (c, d)):
            for k in range(int(rng.integers(TURNS[0], TURNS[1] + 1))):
                s, t = (p, q) if k % 2 == 0 else (q, p)
                off = rng.random() < OFF_TOPIC_SHARE
                text = (
                    OFF_TOPIC[int(rng.integers(len(OFF_TOPIC)))]
                    if off
                    else say(x[s] + rng.normal(0.0, HUMAN_NOISE), rng)
                )
                add(float(r), SENT, workers[s], workers[s], workers[t], text, "", "INVALID" if off else "VALID")
    for i, w in enumerate(workers):
        end = LABELS[label_of(x[i] + rng.normal(0.0, HUMAN_NOISE))]
        add("", POST, w, "", "", say(end, rng), end + 3.5, "")
    return rows


def write_humans(root: Path, topic_dirs: Sequence[str], groups_per_topic: int, seed: int) -> Path:
    """Synthetic human sessions (the module's humans) in the Hub's layout under `root`/raw/depth/<topic dir>/:
    `groups_per_topic` groups on each of `topic_dirs`, drawn from `seed`. Returns `root`."""
    rng = np.random.default_rng(seed)
    for t, topic in enumerate(topic_dirs):
        folder = root / "raw" / "depth" / topic
        folder.mkdir(parents=True, exist_ok=True)
        for g in range(groups_per_topic):
            tag = f"{t}{g:03d}"
            sid = f"01J{t:02d}{g:04d}".ljust(26, "0")  # a 26-character ULID
            with (folder / f"20250101_120000_{topic}_{sid}.csv").open("w", newline="", encoding="utf-8") as fh:
                out = csv.writer(fh)
                out.writerow(COLUMNS)
                out.writerows(_session(rng, tag))
    return root
