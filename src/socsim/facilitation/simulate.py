"""Running discussions on the engine (socsim.sim): users take turns, the facilitator may answer
after every user comment.

A setup row is a self-contained episode: the first speaker of the turn policy posts the topic
(the seed opinion), then `user_turns` user comments, each followed by the facilitator's turn when
the setup has one. Every participant (and the facilitator) sees the h most recent non-silent
comments. A silent turn is recorded, but never enters the context nor the annotation. What counts
as silence is a SilenceRule (data/facilitation/silence.yaml): an empty reply, one of only
punctuation, or one matching a pattern such as "(silent)" or "[no intervention]". The turn
policy draws from random.Random(setup seed); request seeds derive from the setup seed and turn.
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from socsim.facilitation.setups import prompt_hash
from socsim.llm import LLMClient, Sampling
from socsim.sim import policies, runner, stop, views
from socsim.sim.episode import Episode, Policy, Speaker, Turn, play

FACILITATOR = "facilitator"
FACILITATOR_NAME = "moderator"


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

    def __init__(self, patterns: list[str] | tuple[str, ...] = ()) -> None:
        self.patterns = [re.compile(p, re.IGNORECASE) for p in patterns]

    @classmethod
    def from_file(cls, path: str | Path) -> SilenceRule:
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


def episode(setup: dict[str, Any]) -> Episode:
    """The setup row as an engine episode: its participants, then the facilitator (if any)."""
    speakers = [Speaker(p["persona_id"], p["username"], p["system_prompt"], p["role"]) for p in setup["participants"]]
    if setup["facilitator_prompt"] is not None:
        speakers.append(Speaker(FACILITATOR, FACILITATOR_NAME, setup["facilitator_prompt"], FACILITATOR))
    return Episode(setup["discussion_id"], setup["model"], setup["seed"], tuple(speakers), setup["topic"], ("turn",))


def messages(setup: dict[str, Any], speaker: Speaker, turns: list[Turn]) -> list[dict[str, Any]]:
    task = (
        f"Write your intervention as @{FACILITATOR_NAME}, or an empty message to stay silent."
        if speaker.id == FACILITATOR
        else f"Write your next comment as @{speaker.name}."
    )
    return [
        {"role": "system", "content": speaker.system_prompt},
        {
            "role": "user",
            "content": f"Discussion topic: {setup['topic']}\n\nLatest comments:\n"
            f"{views.render(views.window(turns, setup['context_h']))}\n\n{task}",
        },
    ]


def comment_rows(setup: dict[str, Any], turns: list[Turn]) -> list[dict[str, Any]]:
    """The engine's turn records as COMMENTS rows."""
    ep = episode(setup)
    rows: list[dict[str, Any]] = []
    for t in turns:
        sp = ep.speaker(t["speaker_id"])
        rows.append(
            {
                "discussion_id": t["episode_id"],
                "turn": t["turn"],
                "position": t["position"],
                "speaker_id": sp.id,
                "speaker_name": sp.name,
                "role": sp.role,
                "is_facilitator": sp.id == FACILITATOR,
                "is_silent": t["is_silent"],
                "is_seed": t["is_opening"],
                "text": t["text"],
                "model": setup["model"],
                "strategy": setup["strategy"],
                "condition": setup["condition"],
                "prompt_hash": prompt_hash(sp.system_prompt),
                "completion_tokens": t["completion_tokens"],
            }
        )
    return rows


async def run_discussion(
    setup: dict[str, Any], client: LLMClient, sampling: Sampling, silence: SilenceRule | None = None
) -> list[dict[str, Any]]:
    """Simulate one discussion from its setup row; returns one COMMENTS row per turn."""
    silence = silence or SilenceRule()
    ep = episode(setup)
    users = [p["persona_id"] for p in setup["participants"]]
    policy: Policy = policies.Drawn(setup["turn_taking"], users, random.Random(setup["seed"]), setup["p_respond"])
    moderated = setup["facilitator_prompt"] is not None
    if moderated:
        policy = policies.FollowedBy(policy, FACILITATOR)

    def reply(speaker: Speaker, text: str) -> tuple[str, bool]:
        text = clean_comment(text, speaker.name)
        return text, silence(text)

    turns = await play(
        ep,
        policy,
        stop.TurnBudget(1 + setup["user_turns"] * (1 + moderated)),
        client,
        sampling,
        lambda speaker, turns: messages(setup, speaker, turns),
        reply,
    )
    return comment_rows(setup, turns)


def silence_metrics(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of silent turns for the simulate metrics. An intervention is a facilitator reply that is not
    silent and does not echo an earlier comment of its discussion (socsim.stats.text.echoes)."""
    from socsim.stats.text import echoes

    by_discussion: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_discussion.setdefault(r["discussion_id"], []).append(r)
    echo: dict[int, bool] = {}
    for turns in by_discussion.values():
        turns.sort(key=lambda r: r["turn"])
        echo |= {id(r): e for r, e in zip(turns, echoes([r["text"] for r in turns], [r["is_silent"] for r in turns]))}
    fac = [r for r in rows if r["is_facilitator"]]
    users = [r for r in rows if not r["is_facilitator"]]
    return {
        "comments": sum(not r["is_silent"] for r in rows),
        "silent_turns": sum(r["is_silent"] for r in rows),
        "facilitator_turns": len(fac),
        "facilitator_silent": sum(r["is_silent"] for r in fac),
        "facilitator_echoes": sum(echo[id(r)] for r in fac),
        "facilitator_interventions": sum(not r["is_silent"] and not echo[id(r)] for r in fac),
        "user_silent": sum(r["is_silent"] for r in users),
        # non-empty replies the silence rule counted as silence ("(silent)", "...", ...)
        "silent_by_rule": sum(r["is_silent"] and bool(r["text"]) for r in rows),
    }


async def run_discussions(
    setups: list[dict[str, Any]], clients: dict[str, LLMClient], max_tokens: int, silence: SilenceRule | None = None
) -> list[dict[str, Any]]:
    def one(setup: dict[str, Any]) -> Awaitable[list[dict[str, Any]]]:
        client = clients[setup["model"]]
        return run_discussion(setup, client, client.sampling(max_tokens=max_tokens), silence)

    return await runner.run_all(clients, (one(s) for s in setups), "discussions", unit="discussion")
