"""Turn taking among the users of a discussion (paper 000, "Turn Taking").

- respond: with probability p_respond the user who spoke before the last speaker replies
  (a comment chain); otherwise a uniformly random user other than the last speaker. (The
  original code never ran its reply branch; this one does, and the tests measure the rate.)
- round_robin: users speak in their setup order, then again.
- random: a uniformly random user other than the last speaker.
"""

from __future__ import annotations

import random


class TurnManager:
    KINDS = ("respond", "round_robin", "random")

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
        self.replies = 0  # turns decided by the reply branch (respond only)

    def _other_than_last(self) -> str:
        last = self.history[-1] if self.history else None
        return self.rng.choice([u for u in self.users if u != last])

    def next(self) -> str:
        if self.kind == "round_robin":
            speaker = self.users[len(self.history) % len(self.users)]
        elif self.kind == "random":
            speaker = self._other_than_last()
        else:
            # The reply branch needs someone who spoke before the last speaker.
            if len(self.history) >= 2 and self.rng.random() < self.p_respond:
                speaker = self.history[-2]
                self.replies += 1
            else:
                speaker = self._other_than_last()
        self.history.append(speaker)
        return speaker
