"""Turn policies: who speaks next. Each is an object whose next() returns a speaker id; the
random ones draw from the `random.Random` they are given (seeded per episode by the study).

- round_robin: the speakers in their order, then again.
- random: a uniformly random speaker other than the last one.
- respond (paper 000, "Turn Taking"): with probability p the speaker before the last one (the
  "replier") replies, continuing a comment chain; otherwise a uniformly random speaker other than
  both the last speaker and the replier. So the observed rate P(s_t = s_t-2) is p exactly. With
  two speakers nobody else is left, and the replier speaks.
- respond_uniform (the older rule): the same reply branch, but the other branch picks among every
  speaker but the last, the replier included: the observed rate is p + (1 - p) / (k - 1).
- Alternate: two speakers, the given one first. Schedule: a precomputed list of (speaker, listener)
  pairs. FollowedBy: every turn of another policy but its first is followed by one speaker's turn.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from socsim.sim.episode import Policy


class Drawn:
    """round_robin, random, respond, respond_uniform over `speakers` (see the module doc)."""

    KINDS = ("respond", "respond_uniform", "round_robin", "random")

    def __init__(self, kind: str, speakers: list[str], rng: random.Random, p_respond: float = 0.4):
        if kind not in self.KINDS:
            raise ValueError(f"turn taking must be one of {self.KINDS}, got {kind!r}")
        if len(speakers) < 2:
            raise ValueError("turn taking needs at least two speakers")
        self.kind, self.speakers, self.rng, self.p = kind, list(speakers), rng, p_respond
        self.history: list[str] = []

    def _pick_excluding(self, *excluded: str | None) -> str:
        pool = [s for s in self.speakers if s not in excluded]
        if not pool:  # two speakers: only the replier is left besides the last one
            pool = [s for s in self.speakers if s != excluded[0]]
        return self.rng.choice(pool)

    def next(self) -> str:
        h = self.history
        last = h[-1] if h else None
        if self.kind == "round_robin":
            speaker = self.speakers[len(h) % len(self.speakers)]
        elif self.kind == "random" or len(h) < 2:  # the reply branch needs a speaker before the last
            speaker = self._pick_excluding(last)
        elif self.rng.random() < self.p:
            speaker = h[-2]
        else:
            speaker = self._pick_excluding(last, h[-2]) if self.kind == "respond" else self._pick_excluding(last)
        h.append(speaker)
        return speaker


class Alternate:
    def __init__(self, first: str, second: str):
        self.order, self.n = (first, second), 0

    def next(self) -> str:
        self.n += 1
        return self.order[(self.n - 1) % 2]


class Schedule:
    """Speakers from a precomputed list of (speaker, listener) pairs; `listener` is the current
    turn's listener. Running past the end is an error (stop the episode with a budget)."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs, self.n = list(pairs), 0
        self.listener: str | None = None

    def next(self) -> str:
        if self.n >= len(self.pairs):
            raise IndexError(f"the schedule holds only {len(self.pairs)} turns")
        speaker, self.listener = self.pairs[self.n]
        self.n += 1
        return speaker


class FollowedBy:
    """`inner`'s speakers, each but the first followed by `follower` (paper 000: the facilitator
    may answer every user comment, but not the opening)."""

    def __init__(self, inner: Policy, follower: str):
        self.inner, self.follower, self.turns, self.due = inner, follower, 0, False

    def next(self) -> str:
        if self.due:
            self.due = False
            return self.follower
        self.due, self.turns = self.turns > 0, self.turns + 1
        return self.inner.next()
