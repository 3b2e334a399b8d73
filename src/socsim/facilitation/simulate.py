"""Running discussions: users take turns, the facilitator may answer after every user comment.

Every participant (and the facilitator) sees the h most recent non-silent comments. A silent
turn is recorded, but never enters the context nor the annotation. What counts as silence is a
SilenceRule (data/facilitation/silence.yaml): an empty reply, one of only punctuation, or one
matching a pattern such as "(silent)" or "[no intervention]".
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


class SilenceRule:
    """Whether a (cleaned) reply is silence: empty, only punctuation/symbols/whitespace, or matching
    one of `patterns` in full (case-insensitive regular expressions)."""

    def __init__(self, patterns: list[str] | tuple[str, ...] = ()):
        self.patterns = [re.compile(p, re.IGNORECASE) for p in patterns]

    @classmethod
    def from_file(cls, path) -> "SilenceRule":
        import yaml

        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
        patterns = data.get("patterns") or []
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ValueError(f"{path}: 'patterns' must be a list of regular expressions")
        try:
            return cls(patterns)
        except re.error as exc:
            raise ValueError(f"{path}: bad pattern {exc.pattern!r}: {exc}") from None

    def __call__(self, text: str) -> bool:
        t = text.strip()
        if not t or re.fullmatch(r"[\W_]+", t):
            return True
        return any(p.fullmatch(t) for p in self.patterns)


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

    def record(self, speaker: dict | None, text: str, tokens: int, is_seed: bool = False,
               silent: bool | None = None) -> dict:
        """Add a turn by a participant (a setup participant) or, with speaker None, the facilitator.
        `silent` (default: the text is empty) marks a turn that says nothing; its text is kept."""
        s = self.setup
        silent = (not text) if silent is None else bool(silent)
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


async def run_discussion(setup: dict, client: LLMClient, sampling: Sampling,
                         silence: SilenceRule | None = None) -> list[dict]:
    """Simulate one discussion from its setup row; returns one row per turn."""
    silence = silence or SilenceRule()
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
        text = clean_comment(text, name)
        transcript.record(users[name], text, tokens, silent=silence(text))
        if setup["facilitator_prompt"] is not None:
            text, tokens = await ask(facilitator_messages(setup["facilitator_prompt"], setup["topic"],
                                                          transcript.context()))
            text = clean_comment(text, FACILITATOR_NAME)
            transcript.record(None, text, tokens, silent=silence(text))
    return transcript.rows


def silence_metrics(rows: list[dict]) -> dict:
    """Counts of silent turns for the simulate metrics."""
    fac = [r for r in rows if r["is_facilitator"]]
    users = [r for r in rows if not r["is_facilitator"]]
    return {"comments": sum(not r["is_silent"] for r in rows), "silent_turns": sum(r["is_silent"] for r in rows),
            "facilitator_turns": len(fac), "facilitator_silent": sum(r["is_silent"] for r in fac),
            "facilitator_interventions": sum(not r["is_silent"] for r in fac),
            "user_silent": sum(r["is_silent"] for r in users),
            # non-empty replies the silence rule counted as silence ("(silent)", "...", ...)
            "silent_by_rule": sum(r["is_silent"] and bool(r["text"]) for r in rows)}


async def run_discussions(setups: list[dict], clients: dict[str, LLMClient], max_tokens: int,
                          silence: SilenceRule | None = None) -> list[dict]:
    for client in clients.values():
        await client.probe()

    def one(setup: dict):
        client = clients[setup["model"]]
        return run_discussion(setup, client, client.sampling(max_tokens=max_tokens), silence)

    try:
        results = await gather_with_progress((one(s) for s in setups), "discussions", unit="discussion")
    finally:
        for client in clients.values():
            await client.aclose()
    return [row for rows in results for row in rows]
