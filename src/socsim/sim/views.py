"""What a speaker (or a judge) sees of the history.

Views take records with the keys they name: the engine's Turn records, or a study's own rows
(facilitation's comments, coherence's utterances)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

# A turn record: the engine's Turn, or a study's own row.
T = TypeVar("T", bound=Mapping[str, Any])


def window(turns: Sequence[T], h: int) -> list[T]:
    """The last h non-silent turns (`is_silent`); none for h = 0."""
    return [t for t in turns if not t["is_silent"]][-h:] if h > 0 else []


def per_speaker(turns: Sequence[T], n: int, key: str = "speaker_id") -> list[T]:
    """At most the last n turns of each speaker (told apart by `key`), in order."""
    seen: dict[Any, int] = {}
    keep: list[T] = []
    for t in reversed(turns):
        seen[t[key]] = seen.get(t[key], 0) + 1
        if seen[t[key]] <= n:
            keep.append(t)
    return keep[::-1]


def render(turns: Sequence[Mapping[str, Any]], line: str = "@{speaker_name}: {text}") -> str:
    """One line per turn, `line` formatted with the turn's keys."""
    return "\n".join(line.format(**t) for t in turns)


def as_chat(system: str | None, turns: Sequence[Mapping[str, Any]], speaker_id: str) -> list[dict[str, str]]:
    """The whole history from one speaker's side: its own turns as assistant messages."""
    head = [{"role": "system", "content": system}] if system is not None else []
    return head + [
        {"role": "assistant" if t["speaker_id"] == speaker_id else "user", "content": t["text"]} for t in turns
    ]


class Memory:
    """What one agent remembers: a summary of what it has forgotten, then the turns since.

    A study appends the turns the agent sees (`append`), and when it likes (e.g. past a length)
    folds all but the last `keep` entries into a summary it wrote itself, for instance with a
    model call on `render()` (`summarise`). `render` is what goes into the agent's prompt."""

    def __init__(self, line: str = "@{speaker_name}: {text}", summary_head: str = "Summary so far: "):
        self.line, self.summary_head = line, summary_head
        self.summary: str | None = None
        self.entries: list[dict[str, Any]] = []

    def append(self, turn: dict[str, Any]) -> None:
        self.entries.append(turn)

    def summarise(self, summary: str, keep: int = 0) -> None:
        """Replace the summary and every entry but the last `keep` by `summary`."""
        self.summary = summary
        self.entries = self.entries[len(self.entries) - keep :] if keep > 0 else []

    def __len__(self) -> int:
        return len(self.entries)

    def messages(self, role: str = "user", key: str = "text") -> list[dict[str, str]]:
        """The memory as chat messages: the summary (with its head), then one message per entry."""
        head = [{"role": role, "content": self.summary_head + self.summary}] if self.summary is not None else []
        return head + [{"role": role, "content": e[key]} for e in self.entries]

    def render(self) -> str:
        parts = [self.summary_head + self.summary] if self.summary is not None else []
        parts += [render(self.entries, self.line)] if self.entries else []
        return "\n".join(parts)
