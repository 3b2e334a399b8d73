"""Turn taking among the users of a discussion (paper 000, "Turn Taking").

- respond (the paper's rule, default): with probability p_respond the user who spoke before the
  last speaker (the "replier") replies, continuing a comment chain; otherwise a uniformly random
  user other than both the last speaker and the replier ("another random participant"). So the
  observed rate P(speaker_t = speaker_t-2) equals p_respond exactly (tests measure it). With only
  two users nobody else is left, and the other user (the replier) speaks.
- respond_uniform (the previous rule, kept as an option): the same reply branch, but the other
  branch picks uniformly among every user but the last speaker, so it may pick the replier again:
  the observed reply rate is p + (1 - p) / (k - 1) for k users (0.5 for p = 0.4, k = 7).
- round_robin: users speak in their setup order, then again.
- random: a uniformly random user other than the last speaker.
"""

from __future__ import annotations

import random


class TurnManager:
    KINDS = ("respond", "respond_uniform", "round_robin", "random")

    def __init__(self, users: list[str], kind: str = "respond", p_respond: float = 0.4, seed: int = 0):
        if kind not in self.KINDS:
            raise ValueError(f"turn_taking must be one of {self.KINDS}, got {kind!r}")
        if len(users) < 2:
            raise ValueError("a discussion needs at least two users")
        self.users = list(users)
        self.kind = kind
        self.p_respond = p_respond
        self.rng = random.Random(seed)
        self.history: list[str] = []
        self.replies = 0  # turns decided by the reply branch (respond kinds only)

    def _pick_excluding(self, *excluded: str | None) -> str:
        pool = [u for u in self.users if u not in excluded]
        if not pool:  # two users: only the replier is left besides the last speaker
            pool = [u for u in self.users if u != excluded[0]]
        return self.rng.choice(pool)

    def next(self) -> str:
        last = self.history[-1] if self.history else None
        if self.kind == "round_robin":
            speaker = self.users[len(self.history) % len(self.users)]
        elif self.kind == "random":
            speaker = self._pick_excluding(last)
        elif len(self.history) < 2:
            # The reply branch needs someone who spoke before the last speaker.
            speaker = self._pick_excluding(last)
        else:
            replier = self.history[-2]
            if self.rng.random() < self.p_respond:
                speaker = replier
                self.replies += 1
            elif self.kind == "respond":
                speaker = self._pick_excluding(last, replier)
            else:  # respond_uniform
                speaker = self._pick_excluding(last)
        self.history.append(speaker)
        return speaker
