"""Stop rules: callables on the transcript so far, True when the episode ends."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from socsim.sim.episode import Transcript

GOODBYE = re.compile(r"\bgoodbye[.!]*[\"'\u201d\u2019)\]*_\s]*$", re.IGNORECASE)


def says_goodbye(text: str) -> bool:
    """Ends with "goodbye" in any case, then any of . ! and only closing quotes, brackets,
    asterisks or whitespace ("Goodbye.", "goodbye!", "**Goodbye.**"); "Goodbye. But ..." does not."""
    return bool(GOODBYE.search(text.strip()))


class TurnBudget:
    """At most n turns (the opening included)."""

    def __init__(self, n: int):
        self.n = n

    def __call__(self, transcript: Transcript) -> bool:
        return len(transcript.turns) >= self.n


class Goodbye:
    """Once the first speaker said Goodbye, or (both=True) once every speaker has."""

    def __init__(self, both: bool = False):
        self.both = both

    def __call__(self, transcript: Transcript) -> bool:
        said = {t["speaker_id"] for t in transcript.turns if says_goodbye(t["text"])}
        return said >= {s.id for s in transcript.episode.speakers} if self.both else bool(said)


def any_of(*rules: Callable[[Transcript], bool]) -> Callable[[Transcript], bool]:
    return lambda transcript: any(rule(transcript) for rule in rules)
