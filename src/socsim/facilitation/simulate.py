"""Running discussions: users take turns, the facilitator may answer after every user comment.

Every participant (and the facilitator) sees the h most recent non-silent comments. A silent
turn (an empty answer) is recorded, but never enters the context nor the annotation.
Discussions run concurrently; each request's seed derives from the discussion id and turn,
so results do not depend on scheduling, and a re-run replays finished turns from the cache.
"""

from __future__ import annotations

import re

from socsim.facilitation.setups import prompt_hash
from socsim.facilitation.turns import TurnManager
from socsim.llm import LLMClient, Request, Sampling, derive_seed
from socsim.progress import gather_with_progress

FACILITATOR = "facilitator"
FACILITATOR_NAME = "moderator"


def format_context(comments: list[dict]) -> str:
    return "\n".join(f"@{c['speaker_name']}: {c['text']}" for c in comments)


def clean_comment(text: str, username: str) -> str:
    """Strip what models add around a comment: their own '@name:' label, wrapping quotes."""
    text = text.strip()
    text = re.sub(rf"^\s*@?{re.escape(username)}\s*:\s*", "", text, flags=re.I)
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    return text


def user_messages(system_prompt: str, topic: str, context: list[dict], username: str) -> list[dict]:
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": f"Discussion topic: {topic}\n\nLatest comments:\n{format_context(context)}\n\n"
                                    f"Write your next comment as @{username}."},
    ]


def facilitator_messages(system_prompt: str, topic: str, context: list[dict]) -> list[dict]:
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": f"Discussion topic: {topic}\n\nLatest comments:\n{format_context(context)}\n\n"
                                    f"Write your intervention as @{FACILITATOR_NAME}, or an empty message to stay "
                                    "silent."},
    ]


class Transcript:
    """The turns of one discussion so far. Silent turns are recorded but never enter the context."""

    def __init__(self, setup: dict):
        self.setup = setup
        self.rows: list[dict] = []
        self.spoken: list[dict] = []  # non-silent comments: the pool the context window is drawn from

    def context(self) -> list[dict]:
        return self.spoken[-self.setup["context_h"]:]

    def record(self, speaker: dict | None, text: str, tokens: int, is_seed: bool = False) -> dict:
        """Add a turn by a participant (a setup participant) or, with speaker None, the facilitator."""
        s = self.setup
        silent = not text
        row = {
            "discussion_id": s["discussion_id"], "turn": len(self.rows),
            "position": None if silent else len(self.spoken),
            "speaker_id": speaker["persona_id"] if speaker else FACILITATOR,
            "speaker_name": speaker["username"] if speaker else FACILITATOR_NAME,
            "role": speaker["role"] if speaker else FACILITATOR, "is_facilitator": speaker is None,
            "is_silent": silent, "is_seed": is_seed, "text": text, "model": s["model"],
            "strategy": s["strategy"], "condition": s["condition"],
            "prompt_hash": prompt_hash(speaker["system_prompt"] if speaker else s["facilitator_prompt"]),
            "completion_tokens": tokens,
        }
        self.rows.append(row)
        if not silent:
            self.spoken.append(row)
        return row


async def run_discussion(setup: dict, client: LLMClient, sampling: Sampling) -> list[dict]:
    """Simulate one discussion from its setup row; returns one row per turn."""
    users = {p["username"]: p for p in setup["participants"]}
    turns = TurnManager(list(users), setup["turn_taking"], setup["p_respond"], seed=setup["seed"])
    transcript = Transcript(setup)

    async def ask(messages: list[dict]) -> tuple[str, int]:
        req = Request.chat(messages, derive_seed(setup["seed"], "turn", len(transcript.rows)), sampling)
        resp = await client.generate(req)
        return resp.text, resp.completion_tokens

    # The seed opinion opens the discussion, posted by the first speaker.
    transcript.record(users[turns.next()], setup["topic"], 0, is_seed=True)
    for _ in range(setup["user_turns"]):
        name = turns.next()
        text, tokens = await ask(user_messages(users[name]["system_prompt"], setup["topic"], transcript.context(),
                                               name))
        transcript.record(users[name], clean_comment(text, name), tokens)
        if setup["facilitator_prompt"] is not None:
            text, tokens = await ask(facilitator_messages(setup["facilitator_prompt"], setup["topic"],
                                                          transcript.context()))
            transcript.record(None, clean_comment(text, FACILITATOR_NAME), tokens)
    return transcript.rows


async def run_discussions(setups: list[dict], clients: dict[str, LLMClient], max_tokens: int) -> list[dict]:
    for client in clients.values():
        await client.probe()

    def one(setup: dict):
        client = clients[setup["model"]]
        return run_discussion(setup, client, client.sampling(max_tokens=max_tokens))

    try:
        results = await gather_with_progress((one(s) for s in setups), "discussions", unit="discussion")
    finally:
        for client in clients.values():
            await client.backend.aclose()
    return [row for rows in results for row in rows]
