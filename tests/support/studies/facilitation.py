"""The facilitation tests' shared helpers: two participants and a discussion setup (`ALICE`, `BOB`, `SETUP`),
comments recorded as the simulation records them (`Discussion`), discussions whose user-comment toxicity
is known exactly (`_known_discussions`, by `STRATS`), and strict JSON (`_strict`: NaN or Infinity fail)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from socsim.facilitation.simulate import FACILITATOR, comment_rows, episode
from socsim.sim import views
from socsim.sim.episode import Transcript

# -- silence, context, ids -----------------------------------------------------------------------

ALICE = {"persona_id": "p1", "username": "alice", "role": "normal_user", "system_prompt": "a"}
BOB = {"persona_id": "p2", "username": "bob", "role": "troll", "system_prompt": "b"}
SETUP = {
    "discussion_id": "d1",
    "context_h": 2,
    "model": "m",
    "strategy": "No Instructions",
    "condition": "main",
    "facilitator_prompt": "moderate",
    "participants": [ALICE, BOB],
    "topic": "seed opinion",
    "seed": 1,
}


class Discussion:
    """Comments recorded as run_discussion records them: engine turns mapped by comment_rows."""

    def __init__(self, setup: dict):
        self.setup, self.t = setup, Transcript(episode(setup))

    def record(self, speaker: dict | None, text: str, tokens: int, is_seed: bool = False, silent: bool | None = None):
        self.t.add(
            speaker["persona_id"] if speaker else FACILITATOR,
            text,
            tokens,
            (not text) if silent is None else silent,
            is_seed,
        )

    @property
    def rows(self) -> list[dict]:
        return comment_rows(self.setup, self.t.turns)

    def context(self) -> list[dict]:
        return views.window(self.t.turns, self.setup["context_h"])


# -- Table 2's time: the user-comment index ------------------------------------------------------


STRATS = {"No Moderator": (0.0, 0.0), "Moderation Game": (-0.3, -0.05)}


def _known_discussions(per_cell=6, turns=10, seed=0):
    """Comments, annotations and setups whose user-comment toxicity is exactly
    2 + shift + (-0.01 + slope) * user_index; facilitator turns (spoken or silent) and silent user
    turns in between, so the position clock differs from the user-comment clock."""
    rng = np.random.default_rng(seed)
    rows, ann, setups = [], [], []
    for strategy, (shift, slope) in STRATS.items():
        for d in range(per_cell):
            did = f"main.m.{strategy}.{d}"
            setup = {**SETUP, "discussion_id": did, "strategy": strategy}
            t = Discussion(setup)
            t.record(ALICE, "seed opinion", 0, is_seed=True)
            for k in range(turns):
                user = (ALICE, BOB)[k % 2]
                silent = rng.random() < 0.15
                t.record(user, "" if silent else f"comment {k}", 1)
                if strategy != "No Moderator":
                    t.record(None, "please be civil" if rng.random() < 0.7 else "", 1)
            user_idx = 0
            for r in t.rows:
                if not r["is_facilitator"] and not r["is_silent"]:
                    user_idx += 1
                if r["is_silent"] or r["is_seed"]:
                    continue
                y = 4.0 if r["is_facilitator"] else 2 + shift + (-0.01 + slope) * user_idx
                ann += [
                    {
                        "discussion_id": did,
                        "turn": r["turn"],
                        "annotator_id": a,
                        "toxicity": y,
                        "argument_quality": 3,
                        "parse_ok": True,
                        "raw_answer": "{}",
                    }
                    for a in ("a1", "a2")
                ]
            rows += t.rows
            setups.append(
                {
                    "discussion_id": did,
                    "instructions": "full",
                    "with_roles": True,
                    "condition": "main",
                    "turn_taking": "respond",
                }
            )
    return pd.DataFrame(rows), pd.DataFrame(ann), pd.DataFrame(setups)


def _strict(text: str):
    import json

    def bad(x):
        raise ValueError(f"not strict JSON: {x}")

    return json.loads(text, parse_constant=bad)


# The paper's six strategies, No Moderator first (the OLS baseline), as the analysis tests use them.
PAPER_STRATEGIES = [
    "No Moderator",
    "No Instructions",
    "Moderation Game",
    "Rules Only",
    "Regulation Room",
    "Constructive Communications",
]
