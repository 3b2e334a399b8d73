"""Episodes and the one loop that plays them.

An Episode is one self-contained setup: ids, the model, the speakers with their system prompts,
an optional opening text (posted by the policy's first speaker without a model call) and the
seed. The request seed of turn t is derive_seed(seed, *seed_ids, t), so an episode's results
depend only on itself, never on scheduling. Every turn becomes one Turn record; each study maps
the records to its own output schema.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypedDict

from socsim.llm import LLMClient, Request, Sampling
from socsim.seeds import derive_seed


@dataclass(frozen=True)
class Speaker:
    id: str  # unique within the episode; policies name speakers by id
    name: str  # how others see it ("alice", "Agent 1")
    system_prompt: str | None
    role: str = ""


@dataclass(frozen=True)
class Episode:
    id: str
    model: str
    seed: int
    speakers: tuple[Speaker, ...]
    opening: str | None = None
    seed_ids: tuple[object, ...] = ()

    def speaker(self, speaker_id: str) -> Speaker:
        return next(s for s in self.speakers if s.id == speaker_id)

    def turn_seed(self, turn: int) -> int:
        return derive_seed(self.seed, *self.seed_ids, turn)


class Turn(TypedDict):
    """The engine's transcript record: one per turn, silent turns included."""

    episode_id: str
    turn: int  # 0, 1, ... in order
    position: int | None  # index among the non-silent turns; None when silent
    speaker_id: str
    speaker_name: str
    text: str
    is_silent: bool  # recorded, but outside every window view
    is_opening: bool  # the episode's opening text, not generated
    completion_tokens: int


class Transcript:
    """The turns of one episode so far."""

    def __init__(self, episode: Episode):
        self.episode = episode
        self.turns: list[Turn] = []
        self.spoken = 0

    def add(
        self, speaker_id: str, text: str, completion_tokens: int = 0, silent: bool = False, opening: bool = False
    ) -> Turn:
        turn = Turn(
            episode_id=self.episode.id,
            turn=len(self.turns),
            position=None if silent else self.spoken,
            speaker_id=speaker_id,
            speaker_name=self.episode.speaker(speaker_id).name,
            text=text,
            is_silent=bool(silent),
            is_opening=opening,
            completion_tokens=completion_tokens,
        )
        self.turns.append(turn)
        self.spoken += not silent
        return turn


class Policy(Protocol):
    def next(self) -> str: ...  # the id of the next speaker


Messages = Callable[
    [Speaker, list[Turn]], list[dict[str, str]]
]  # a speaker's view of the turns so far -> chat messages
Reply = Callable[[Speaker, str], tuple[str, bool]]  # raw model text -> (text to record, silent?)
Observe = Callable[[Speaker, Turn], Awaitable[None]]  # after each model turn: memories, reflections (may call models)


def strip_reply(speaker: Speaker, text: str) -> tuple[str, bool]:
    return text.strip(), False


async def play(
    episode: Episode,
    policy: Policy,
    stop: Callable[[Transcript], bool],
    client: LLMClient,
    sampling: Sampling,
    messages: Messages,
    reply: Reply = strip_reply,
    observe: Observe | None = None,
) -> list[Turn]:
    """Play one episode: the opening (if any) by the policy's first speaker, then one model turn
    per policy step until `stop` holds; `observe` sees every model turn once it is recorded
    (Concordia's observe step: a study updates its agents' memories there)."""
    t = Transcript(episode)
    if episode.opening is not None:
        t.add(policy.next(), episode.opening, opening=True)
    while not stop(t):
        speaker = episode.speaker(policy.next())
        resp = await client.generate(
            Request.chat(
                messages(speaker, t.turns),
                episode.turn_seed(len(t.turns)),
                sampling,
                label=f"{episode.id} turn {len(t.turns)} ({speaker.id})",
            )
        )
        text, silent = reply(speaker, resp.text)
        turn = t.add(speaker.id, text, resp.completion_tokens, silent)
        if observe is not None:
            await observe(speaker, turn)
    return t.turns
